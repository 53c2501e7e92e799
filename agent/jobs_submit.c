/* jobs_submit.c -- submit and cancel (jobs.h, docs/jobs.md): a job
 * checked against its world and what this host can run, its market read
 * on a thread of its own, stored queued; cancel ends it.  And the
 * daemon's jobs made and freed (jobs_new, jobs_free): the top of the
 * jobs files, which ends the submissions still being read. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../common/log.h"
#include "../trainer/io/data_url.h"
#include "../trainer/io/dataset.h"
#include "../trainer/compute/mf.h"
#include "../trainer/io/ratings.h"
#include "../trainer/train_local.h"
#include "jobs_int.h"
#include "notify.h"
#include "outbound.h"
#include "server.h"

/* At most this many submissions are read at once. */
#define LOADS_MAX 4

/* ---- what this host can run ---- */

/* This host's capacity for j's world (world.h: local's process count;
 * INT64_MAX: the provider's). */
static int64_t capacity(const struct job *j)
{
	return j->wops->capacity ? j->wops->capacity(j->js->s.cfg) :
				   INT64_MAX;
}

/* Nodes of every job that use this host now (local: processes). */
static int64_t local_in_use(const struct jobs *js)
{
	int64_t n = 0;

	for (const struct job *j = js->list; j; j = j->next)
		if (j->run.w)
			n += (int64_t)j->wops->host_load(j->run.w);
	return n;
}

/* The world's room hook: one more node only under the capacity. */
bool job_room(void *ctx, char *why, size_t len)
{
	struct job *j = ctx;
	int64_t cap = capacity(j), used = local_in_use(j->js);

	if (j->run.fail_now[0]) {    /* ending: nothing more is started */
		snprintf(why, len, "the job is failing: %s", j->run.fail_now);
		return false;
	}
	if (used < cap)
		return true;
	snprintf(why, len, "the %s world is full: %" PRId64 " node "
		 "processes run on this host, at most %" PRId64
		 " (local_max_instances)", j->wops->name, used, cap);
	return false;
}

/* A job against what this host can run: refused when its reliable tier
 * (and one instance more) cannot fit, its spot fleet and baseline fleet
 * capped to the rest (said in note).  name: its file, for messages. */
enum px_err job_fit(struct job *j, const char *name, struct px_error *err)
{
	struct jobspec *sp = &j->req.spec;
	int64_t cap = capacity(j), room;

	j->note[0] = 0;
	if (!j->wops->capacity)         /* the provider's capacity */
		return PX_OK;
	if (sp->reliable.count + 1 > cap)
		return px_errorf(err, PX_EINVAL, "%s: reliable.count: %d "
				 "instances cannot run here: this host's %s "
				 "world runs at most %" PRId64 " at once "
				 "(local_max_instances), and a job needs room "
				 "for one more", name, sp->reliable.count,
				 j->wops->name, cap);
	room = cap - sp->reliable.count;
	j->note[0] = 0;
	if (sp->spot.max_instances > room || sp->instances > room) {
		snprintf(j->note, sizeof j->note, "spot.max_instances %d and "
			 "instances %d capped at %" PRId64 ": this host's "
			 "%s world runs at most %" PRId64 " instances "
			 "(local_max_instances), %d of them reliable",
			 sp->spot.max_instances, sp->instances, room,
			 j->wops->name, cap, sp->reliable.count);
		if (sp->spot.max_instances > room)
			sp->spot.max_instances = (int)room;
		if (sp->instances > room)
			sp->instances = (int)room;
	}
	return PX_OK;
}

/* finish_by_hours against the fleet the controller would run on demand
 * (docs/jobspec.md): `instances` of reference_type as job_fit left them
 * (capped to this host), at the speeds and scaling of the job's plan
 * (jobspec_speed, the spec's profile), startup_seconds then work_hours at
 * their rate.  A deadline even that fleet cannot meet is refused, as
 * simulate refuses it; so is uniform-progress without one.  name: its
 * file, for messages. */
static enum px_err job_check_finish_by(const struct job *j, const char *name,
				       struct px_error *err)
{
	const struct jobspec *sp = &j->req.spec;
	double need = 0, rate;

	if (!strcmp(j->req.policy, pol_uniform_progress_ops.name) &&
	    !(sp->finish_by_hours > 0))
		return px_errorf(err, PX_EINVAL, "%s: policy: '%s' needs the "
				 "job's finish_by_hours (the deadline it plans "
				 "for)", name, j->req.policy);
	if (jobspec_finish_feasible(sp, NULL, &need))
		return PX_OK;
	rate = jobspec_fleet_rate(sp, sp->instances, sp->instances *
				  jobspec_speed(sp, sp->reference_type));
	need = ceil(need * 100) / 100;  /* said rounded up */
	return px_errorf(err, PX_EINVAL, "%s: finish_by_hours %.6g cannot be "
			 "met even on demand: %d on-demand %s need %.2f h "
			 "(startup_seconds %d, then %.6g work-hours at %.6g an "
			 "hour%s%s); give it %.2f h or more", name,
			 sp->finish_by_hours, sp->instances, sp->reference_type,
			 need, sp->startup_seconds, sp->work_hours, rate,
			 j->note[0] ? "; " : "", j->note, need);
}

/* The job's world: one this daemon runs jobs on (its ops have the
 * daemon's half; sim's has none: simulate drives it).  name: its file,
 * for messages. */
enum px_err job_world(struct job *j, const char *name, struct px_error *err)
{
	const struct world_ops *o = world_ops_by_name(j->req.world.name);
	char runs[128];
	size_t n;

	/* what runs on its nodes (jobreq_parse knows the name) */
	j->wlops = workload_of(j->req.workload[0] ? j->req.workload
						  : workload_trainer.name);
	if (!j->wlops)
		return px_errorf(err, PX_EINVAL, "%s: workload: '%s' is not "
				 "known to this daemon", name,
				 j->req.workload);

	if (o && o->create) {
		j->wops = o;
		/* a world that rents needs its operator's settings first */
		return o->check ? o->check(j->js->s.cfg, err) : PX_OK;
	}
	n = world_daemon_names(runs, sizeof runs, "", ", ");
	return px_errorf(err, PX_EUNSUPP, "%s: world.name: '%s' is not "
			 "supported by this daemon yet (%s %s)", name,
			 j->req.world.name[0] ? j->req.world.name : "unknown",
			 runs, n > 1 ? "are" : "is");
}

/* ---- replies ---- */

json_t *jobs_reply_err(struct px_error *err, enum px_err e, const char *fmt,
		       ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	err->code = e;
	return NULL;
}

bool jobs_req_job(struct jobs *js, json_t *req, int64_t *ret_id,
		  struct job **ret, struct px_error *err)
{
	json_t *v = json_object_get(req, "job");

	if (!json_is_integer(v) || json_integer_value(v) <= 0) {
		px_errorf(err, PX_EINVAL, "'job': a job id (a positive "
			  "integer) is needed");
		return false;
	}
	*ret_id = json_integer_value(v);
	*ret = job_find(js, *ret_id);
	return true;
}

static enum px_err job_seen(const struct store_job *sj, void *ctx)
{
	(void)sj;
	*(bool *)ctx = true;
	return PX_OK;
}

bool jobs_req_known(struct jobs *js, json_t *req, int64_t *ret_id,
		    struct job **ret, struct px_error *err)
{
	struct store_job_filter f;
	bool known = false;

	if (!jobs_req_job(js, req, ret_id, ret, err))
		return false;
	if (*ret)
		return true;
	f = (struct store_job_filter){ .id = *ret_id };
	if (store_jobs_each(js->s.st, &f, job_seen, &known, err) != PX_OK)
		return false;
	if (!known)
		jobs_reply_err(err, PX_ENOENT, "no job %" PRId64, *ret_id);
	return known;
}

/* A submitted job whose trace and prices are read on a thread of its
 * own (a 2-month trace takes most of a second): the loop goes on, and the
 * submitter gets its answer once the job is checked and stored. */
struct loading {
	struct loading *next;
	struct jobs *js;
	struct job *j;
	char *text;              /* the spec as submitted */
	char name[256];          /* its file, for messages */
	struct server_ticket ticket;
	struct px_guard guard;   /* the submitter's rights, the bounds */
	pthread_t th;
	int efd;                 /* the thread says it is done here */
	enum px_err e;
	struct px_error err;
};

/* ---- submit ---- */

/* A checked, loaded job: stored queued, added to the list (or freed with
 * the reason in err).  Returns the reply, or NULL. */
static json_t *submit_store(struct jobs *js, struct job *j, const char *text,
			    enum px_err e, struct px_error *err)
{
	struct px_error keep = {0};

	if (e == PX_OK)
		e = store_job_add(js->s.st, j->req.spec.name, text,
				  j->req.world.name, px_now_wall_us(), &j->id,
				  err);
	if (e != PX_OK) {
		job_free(j);
		return NULL;
	}
	/* the copies of its files, where the job's id says */
	(void)job_inputs_keep(j, &keep);
	/* the per-second interruption draws follow the job's id, as after
	 * a restart */
	plan_set_seed(j->mk.plan, (uint64_t)j->id);
	job_take_state(j, STORE_JOB_QUEUED);
	j->next = NULL;
	{
		struct job **p = &js->list;

		while (*p)
			p = &(*p)->next;
		*p = j;
	}
	log_notice("job %" PRId64 " '%s' queued", j->id, j->req.spec.name);
	job_notify(j, "state", NULL, NULL);
	pump_soon(js);
	if (keep.msg[0]) {      /* stored, but it cannot run: said */
		job_end(j, STORE_JOB_FAILED, keep.msg);
		job_trim(j);
		return json_pack("{s:I, s:s}", "job", (json_int_t)j->id,
				 "note", keep.msg);
	}
	if (j->note[0]) {
		log_notice("job %" PRId64 ": %s", j->id, j->note);
		job_event(j, "capped", j->note);
		return json_pack("{s:I, s:s}", "job", (json_int_t)j->id,
				 "note", j->note);
	}
	return json_pack("{s:I}", "job", (json_int_t)j->id);
}

/* trainer.data, where the job's nodes run on this host (the local
 * world): checked now, with the submitter's rights, so that bad data is
 * refused before any process starts (trainer/io/dataset.h data_check: at
 * most DATA_CHECK_BYTES of text a file).  Under the thread's guard, less
 * its bound on a file's size: a data set may be bigger than a trace, and
 * the check reads a bounded part of it. */
static enum px_err job_check_data(struct job *j, struct px_error *err)
{
	const struct job_data *d = &j->req.trainer.data;
	const struct px_guard *g = px_guard_get();
	char train[JOBREQ_PATH_MAX], test[JOBREQ_PATH_MAX];
	struct data_spec spec = { .train = train, .test = test,
				  .label_col = (uint32_t)d->label_column };
	struct px_guard mine;
	bool whole, mf = !strcmp(j->req.trainer.model, "mf");
	enum px_err e = PX_OK;

	/* a file named by a URL other than file:// is the nodes' to
	 * fetch, and its SHA-256 theirs to check (trainer/io/data_url.h); a
	 * path or a file:// URL is a file of this host, which the
	 * coordinator reads here in every world */
	if (!d->train[0] ||
	    !job_input_path(j, JIN_TRAIN, train, sizeof train) ||
	    !job_input_path(j, JIN_TEST, test, sizeof test))
		return PX_OK;
	if (d->format[0])
		e = data_format_parse(d->format, &spec.format, err);
	if (e == PX_OK)
		e = data_scale_parse(d->scale, &spec.scale, err);
	if (e != PX_OK)
		return e;
	if (g) {
		mine = *g;
		mine.max_bytes = 0;
		px_guard_set(&mine);
	}
	if (mf) { /* ratings (trainer/io/ratings.h), their first MF_CHECK_RATINGS */
		e = mf_check_rank(train, j->req.trainer.rank ?
				  (uint32_t)j->req.trainer.rank :
				  TRAIN_MF_RANK, err);
		if (e == PX_OK)
			e = mf_check(test, err);
	} else {
		e = data_check(&spec, &whole, err);
	}
	px_guard_set(g);
	if (e != PX_OK)
		px_error_prefix(err, "%s: trainer.data: ", j->src);
	return e;
}

/* Instances elsewhere start from user data, which EC2 keeps and shows
 * to whoever may call DescribeInstanceAttribute: a data URL with a query
 * (a presigned URL's signature) may not go there. */
static enum px_err job_check_remote_urls(const struct job *j,
					 struct px_error *err)
{
	const struct job_data *d = &j->req.trainer.data;
	const char *const url[] = { d->train, d->test };

	/* a folder is this host's: an instance fetches its code */
	if (j->req.program.on && j->req.program.code[0] &&
	    !data_is_url(j->req.program.code))
		return px_errorf(err, PX_EINVAL, "%s: program.code: '%s' is a "
				 "folder of this host; the %s world's nodes run "
				 "elsewhere and fetch their code by URL (a "
				 ".tar.gz by https:// or s3://, with "
				 "code_sha256)", j->src, j->req.program.code,
				 j->wops->name);
	for (int i = 0; i < 2; i++)
		if (data_is_url(url[i]) && strchr(url[i], '?'))
			return px_errorf(err, PX_EINVAL, "%s: trainer.data.%s: "
					 "a URL with a query (a presigned URL) "
					 "would stand in the instances' user "
					 "data, which is no secret: name the "
					 "object by s3:// (fetched with the "
					 "instances' own role) or a path on "
					 "their image", j->src,
					 i ? "test" : "train");
	return PX_OK;
}

/* program.checkpoint_store in S3: the daemon writes there with its own
 * AWS credentials (a confused deputy otherwise), so only under a prefix
 * its operator allows (checkpoint_s3_prefixes). */
static enum px_err job_check_store(const struct job *j, struct px_error *err)
{
	const char *s = j->req.program.checkpoint_store;
	const char *allow = j->js->s.cfg->checkpoint_s3_prefixes;
	char why[256];

	if (!j->req.program.on || strncmp(s, "s3://", 5))
		return PX_OK;
	if (!config_s3_prefix_valid(s, why, sizeof why))
		return px_errorf(err, PX_EINVAL, "%s: program.checkpoint_"
				 "store: %s", j->src, why);
	if (!allow[0])
		return px_errorf(err, PX_EINVAL, "%s: program.checkpoint_"
				 "store: '%s': this daemon writes checkpoints "
				 "to S3 with its own AWS credentials, and "
				 "checkpoint_s3_prefixes is empty on it", j->src,
				 s);
	if (!config_s3_prefix_allows(allow, s))
		return px_errorf(err, PX_EINVAL, "%s: program.checkpoint_"
				 "store: '%s' is under none of the S3 prefixes "
				 "this daemon allows (checkpoint_s3_prefixes)",
				 j->src, s);
	return PX_OK;
}

/* A submission's files, all read on one thread under the submitter's
 * guard g: each opened once and pinned (jobs_inputs.c), the market read
 * and the data checked from those very files, then copied into the
 * job's own folder. */
static enum px_err job_load(struct job *j, struct px_guard *g,
			    struct px_error *err)
{
	enum px_err e;

	/* its URLs under the operator's rules (names resolved here, off
	 * the loop) */
	e = outbound_check_job(&j->req, j->js->s.cfg, j->src, err);
	if (e == PX_OK)
		e = job_check_store(j, err);
	if (e == PX_OK && !j->wops->on_this_host)
		e = job_check_remote_urls(j, err);
	if (e != PX_OK)
		return e;
	px_guard_set(g);
	job_inputs_pin(j, g);
	e = job_load_market(j, err);
	if (e == PX_OK)
		e = job_check_data(j, err);
	if (e == PX_OK)
		e = job_inputs_copy(j, err);
	if (e == PX_OK)
		e = job_inputs_program(j, g, err);
	px_guard_set(NULL);
	g->pins = NULL;
	g->npins = 0;
	return e;
}

static void *load_thread(void *arg)
{
	struct loading *ld = arg;
	uint64_t one = 1;

	ld->e = job_load(ld->j, &ld->guard, &ld->err);
	if (write(ld->efd, &one, sizeof one) != sizeof one)
		abort(); /* an eventfd write of 1 cannot fail */
	return NULL;
}

/* The loading thread is done: store the job and answer the submitter. */
static void loaded(struct loop *l, int fd, int mask, void *ctx)
{
	struct loading *ld = ctx;
	struct jobs *js = ld->js;
	struct px_error err = ld->err;
	json_t *reply;

	(void)mask;
	(void)pthread_join(ld->th, NULL);
	loop_fd_del(l, fd);
	close(fd);
	for (struct loading **p = &js->loading; *p; p = &(*p)->next)
		if (*p == ld) {
			*p = ld->next;
			break;
		}
	reply = submit_store(js, ld->j, ld->text, ld->e, &err);
	server_answer(&ld->ticket, reply, &err);
	free(ld->text);
	free(ld);
}

json_t *jobs_cmd_submit(struct jobs *js, json_t *req, struct px_error *err)
{
	json_t *spec = json_object_get(req, "spec");
	json_t *file = json_object_get(req, "file");
	const char *name = json_is_string(file) ? json_string_value(file) :
			   "job";
	struct loading *ld = NULL;
	struct job *j;
	char *text;
	enum px_err e;

	if (!json_is_object(spec))
		return jobs_reply_err(err, PX_EINVAL, "'spec': the job (a "
				      "JSON object) is needed");
	text = json_dumps(spec, JSON_COMPACT);
	if (!text)
		return jobs_reply_err(err, PX_ENOMEM, "out of memory");
	j = job_new(js, name);
	if (!j) {
		free(text);
		return jobs_reply_err(err, PX_ENOMEM, "out of memory");
	}
	e = jobreq_parse(text, strlen(text), name, &j->req, err);
	/* a spec that names no world runs on the daemon's default */
	if (e == PX_OK && !j->req.world.named)
		snprintf(j->req.world.name, sizeof j->req.world.name, "%s",
			 js->s.cfg->world);
	if (e == PX_OK)
		e = job_world(j, name, err);
	if (e == PX_OK)
		e = job_fit(j, name, err);
	if (e == PX_OK)
		e = job_check_finish_by(j, name, err);
	if (e == PX_OK)
		e = job_pool_check(j, name, err);
	if (e != PX_OK) {
		free(text);
		job_free(j);
		return NULL;
	}
	{
		size_t n = 0;

		for (struct loading *l = js->loading; l; l = l->next)
			n++;
		if (n >= LOADS_MAX) {
			free(text);
			job_free(j);
			return jobs_reply_err(err, PX_EUNSUPP, "%s: not "
					      "taken: %zu submissions are "
					      "being read now (at most %d at "
					      "once); submit again in a "
					      "moment", name, n, LOADS_MAX);
		}
	}
	/* the trace and prices on a thread, the answer later; without a
	 * server to answer later (or a thread), here and now */
	ld = calloc(1, sizeof *ld);
	if (ld && server_defer(&ld->ticket)) {
		job_guard(&ld->guard);
		ld->js = js;
		ld->j = j;
		ld->text = text;
		snprintf(ld->name, sizeof ld->name, "%s", name);
		ld->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (ld->efd >= 0 && loop_fd_add(js->s.loop, ld->efd,
						LOOP_READABLE, loaded, ld) ==
					    PX_OK) {
			if (pthread_create(&ld->th, NULL, load_thread, ld) ==
			    0) {
				ld->next = js->loading;
				js->loading = ld;
				return SERVER_DEFERRED;
			}
			loop_fd_del(js->s.loop, ld->efd);
		}
		if (ld->efd >= 0)
			close(ld->efd);
	}
	free(ld);
	{
		struct px_guard g;

		job_guard(&g);
		e = job_load(j, &g, err);
	}
	{
		json_t *reply = submit_store(js, j, text, e, err);

		free(text);
		return reply;
	}
}

void jobs_submit_stop(struct jobs *js)
{
	/* submissions still loading: let their threads end, answer none */
	while (js->loading) {
		struct loading *ld = js->loading;

		js->loading = ld->next;
		px_guard_stop(&ld->guard); /* its reads end now */
		(void)pthread_join(ld->th, NULL);
		loop_fd_del(js->s.loop, ld->efd);
		close(ld->efd);
		job_free(ld->j);
		free(ld->text);
		free(ld);
	}
}

/* ---- cancel ---- */

json_t *jobs_cmd_cancel(struct jobs *js, json_t *req, struct px_error *err)
{
	enum store_job_state state;
	struct job *j;
	int64_t id;

	if (!jobs_req_job(js, req, &id, &j, err))
		return NULL;
	/* one ended in an earlier life is the store's: ended, not unknown */
	if (!j && jobs_stored_state(js, id, &state, err))
		return jobs_reply_err(err, PX_EINVAL, "job %" PRId64
				      " already ended (%s)", id,
				      store_job_state_name(state));
	if (!j)
		return jobs_reply_err(err, PX_ENOENT, "no job %" PRId64
				      " running or queued", id);
	if (j->run.state != STORE_JOB_QUEUED && j->run.state != STORE_JOB_RUNNING)
		return jobs_reply_err(err, PX_EINVAL, "job %" PRId64
				      " already ended (%s)", id,
				      store_job_state_name(j->run.state));
	job_end(j, STORE_JOB_CANCELLED, "cancelled");
	job_trim(j);
	pump_soon(js);
	return json_pack("{s:I, s:s}", "job", (json_int_t)id, "state",
			 "cancelled");
}

/* ---- the daemon's jobs, made and freed ---- */

enum px_err jobs_new(const struct jobs_setup *s, struct jobs **ret,
		     struct px_error *err)
{
	struct jobs *js = calloc(1, sizeof *js);

	if (!js)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	js->s = *s;
	js->host = (struct world_host){ .loop = s->loop, .st = s->st,
					.cfg = s->cfg };
	if (notify_new(s->loop, s->cfg, &js->notify, err) != PX_OK) {
		free(js);
		return err->code;
	}
	if (jobs_pool_new(js, err) != PX_OK) {
		notify_free(js->notify);
		free(js);
		return err->code;
	}
	/* copies of submissions a killed daemon never stored */
	job_inputs_clean_stale(s->dir);
	*ret = js;
	return PX_OK;
}

void jobs_free(struct jobs *js)
{
	if (!js)
		return;
	jobs_submit_stop(js);
	while (js->list) {
		struct job *j = js->list;

		js->list = j->next;
		job_free(j);
	}
	for (size_t k = 0; world_ops_at(k); k++) {
		const struct world_ops *o = world_ops_at(k);

		if (o->host_free)
			o->host_free(&js->host);
	}
	jobs_pool_free(js);
	notify_free(js->notify);
	free(js);
}
