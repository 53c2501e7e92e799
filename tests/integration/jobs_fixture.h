/* jobs_fixture.h -- a real proteusd for the jobs tests (jobs_fixture.c). */
#ifndef PX_JOBS_FIXTURE_H
#define PX_JOBS_FIXTURE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "pxrun.h"

/* The test's paths (under a fresh temp dir) and its daemon (0: none). */
struct jobs_fixture {
	char *tmp, *conf, *sock, *db, *log, *job;
	pid_t pid;
};
extern struct jobs_fixture jt;

void jobs_fixture_setup(void);
void jobs_fixture_teardown(void);
int each_argv(const char *a, const char *b, void (*fn)(pid_t pid, void *ctx),
	      void *ctx);
int each_ours(void (*fn)(pid_t pid, void *ctx), void *ctx);
int our_processes(void);
int our_groups(void);
void sleep_ms(int ms);
/* A loopback TCP port nothing listens on now (the kernel's pick). */
int free_port(void);
int processes_after(int ms);
const char *daemon_said(void);
char *daemon_log(void);
void stop_daemon(int sig);
/* proteusctl --socket <ours> a1..a4 (NULL ends them early), its exit */
int ctl(struct pxrun *r, int timeout_s, const char *a1, const char *a2,
	const char *a3, const char *a4);
void start_daemon_limited(rlim_t fsize);
void start_daemon(void);
void daemon_up(void);
/* daemon_up with more config lines (may be "") */
void daemon_up_with(const char *more);
/* Its config file alone (a reload's: SIGHUP after) */
void write_conf(const char *more);
/* "data_dir DIR\n" of the jobs tests' Fashion-MNIST, or "" (the daemon's
 * default): for a test that writes its own config. */
const char *data_dir_line(void);
void write_job(int epochs, const char *extra);
int64_t submit(void);
/* status ID --json, parsed (with_: its text to check first, may be NULL) */
json_t *status(int64_t id);
json_t *status_with(int64_t id, void (*check)(const char *out));
/* The daemon with a data_dir that has no Fashion-MNIST (returned, freed by
 * the caller): every job's trainer fails at start. */
char *daemon_without_data(void);
const char *state_of(json_t *o);
/* The first column of q's first row as an integer (-1 when none). */
int64_t sql_int(const char *q);
/* The first column of q's first row as text ("" when none; freed by the
 * caller). */
char *sql_text(const char *q);
void sql_exec(const char *q);
void check_books(int64_t id, json_t *st);
json_t *wait_end(int64_t id, int timeout_s);
/* proteusctl cancel ID, which must succeed within timeout_s. */
void cancel_job(int64_t id, int timeout_s);
/* proteusctl --socket <ours> a1..a4 as uid (group 0: the socket's, no
 * other group), with the same argument rules as ctl; its exit. */
int ctl_as(struct pxrun *r, int timeout_s, uid_t uid, const char *a1,
	   const char *a2, const char *a3, const char *a4);
/* Lines of job id's trainer log (its coordinator's words) holding needle
 * (0 when there is no log). */
int trainer_log_count(int64_t id, const char *needle);
/* proteusctl submit <jt.job> as uid; the new job's id. */
int64_t submit_as(uid_t uid);
/* Events of job id of kind whose detail is LIKE like (SQL). */
int64_t events_like(int64_t id, const char *kind, const char *like);
/* proteusctl pool --json, parsed (asserted). */
json_t *pool_json(void);
/* Its count of a market's ("spot_vcpus", "ondemand_vcpus") vCPUs in use. */
int64_t pool_used(json_t *p, const char *market);
/* The job of its list with id (borrowed from p), or NULL. */
json_t *pool_job(json_t *p, int64_t id);
/* tmp/trace.json: m3.large in us-east-1a at $0.02 every 5 minutes from
 * t0 - 1 h for days days, $5 (past any bid) in [spike_at, spike_at +
 * spike_s) (spike_s 0: none). */
void write_flat_trace(int64_t t0, int days, int64_t spike_at,
		      int64_t spike_s);

#endif
