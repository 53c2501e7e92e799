/* test_trainer_ckpt.c -- checkpoint files: a round trip bit for bit, the
 * atomic write (no temporary left, mode 0600, an old file replaced whole),
 * every truncation and a flipped byte refused, header fields checked by
 * name, and a job of another shape refused with the field that differs. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../trainer/io/ckpt.h"
#include "../integration/pxrun.h"

static char dir[64];
static char path[128];

static void mk_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/px_ckpt_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/job.pxc", dir);
}

static void rm_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(ckpt, .init = mk_tmp, .fini = rm_tmp);

/* A small MLP (5 -> 3 -> 2: 26 parameters) at clock 7 of 20. */
static void meta(struct ckpt_meta *m)
{
	static const uint32_t hidden[] = { 3 };

	memset(m, 0, sizeof(*m));
	cr_assert_eq(model_desc_init(&m->d, MODEL_MLP, 5, 2, hidden, 1, NULL),
		     PX_OK);
	m->clock = 7;
	m->total = 20;
	m->workers = 2;
	m->batch = 4;
	m->epochs = 5;
	m->n_train = 16;
	m->test_accuracy = NAN;
	m->written_s = 1795000000;
}

static void fill(float *w, float *v, size_t n, float k)
{
	for (size_t i = 0; i < n; i++) {
		w[i] = k * (float)i - 3.25f;
		v[i] = -k / (float)(i + 1);
	}
	w[0] = -0.0f;
	v[n - 1] = 1e-38f; /* subnormal-adjacent: bits must survive */
}

static void spit(const char *p, const void *buf, size_t len)
{
	FILE *f = fopen(p, "wb");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

static void write_good(const struct ckpt_meta *m)
{
	float w[26], v[26];

	fill(w, v, m->d.n_params, 0.5f);
	cr_assert_eq(ckpt_write(path, m, w, v, NULL), PX_OK);
}

Test(ckpt, round_trip_bit_for_bit)
{
	struct ckpt_meta m, r;
	float w[26], v[26], *rw, *rv;
	struct px_error err;
	struct stat st;
	struct dirent *e;
	DIR *d;
	int files = 0;

	meta(&m);
	cr_assert_eq(m.d.n_params, 26);
	fill(w, v, 26, 0.5f);
	cr_assert_eq(ckpt_write(path, &m, w, v, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(ckpt_read(path, &r, &rw, &rv, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(memcmp(rw, w, sizeof(w)), 0);
	cr_assert_eq(memcmp(rv, v, sizeof(v)), 0);
	cr_assert_eq(r.d.kind, MODEL_MLP);
	cr_assert_eq(r.d.n_layers, 2);
	cr_assert_eq(r.d.layer[0].out, 3);
	cr_assert_eq(r.clock, 7);
	cr_assert_eq(r.total, 20);
	cr_assert_eq(r.workers, 2);
	cr_assert_eq(r.batch, 4);
	cr_assert_eq(r.epochs, 5);
	cr_assert_eq(r.n_train, 16);
	cr_assert(isnan(r.test_accuracy));
	cr_assert_eq(r.written_s, 1795000000);
	cr_assert_eq(ckpt_check_job(path, &r, &m, &err), PX_OK, "%s",
		     err.msg);
	free(rw);
	free(rv);
	/* private, and nothing but the file itself in the directory */
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	d = opendir(dir);
	while ((e = readdir(d)))
		files += e->d_name[0] != '.';
	closedir(d);
	cr_assert_eq(files, 1, "a temporary file was left behind");
}

/* A second write replaces the first whole (rename, not rewrite). */
Test(ckpt, rewrite_replaces_whole)
{
	struct ckpt_meta m, r;
	float w[26], v[26], *rw, *rv;
	struct stat a, b;

	meta(&m);
	write_good(&m);
	cr_assert_eq(stat(path, &a), 0);
	m.clock = 12;
	m.test_accuracy = 0.8125;
	fill(w, v, 26, 2.0f);
	cr_assert_eq(ckpt_write(path, &m, w, v, NULL), PX_OK);
	cr_assert_eq(stat(path, &b), 0);
	cr_assert_neq(a.st_ino, b.st_ino, "written in place, not renamed");
	cr_assert_eq(ckpt_read(path, &r, &rw, &rv, NULL), PX_OK);
	cr_assert_eq(r.clock, 12);
	cr_assert_float_eq(r.test_accuracy, 0.8125, 1e-12);
	cr_assert_eq(memcmp(rw, w, sizeof(w)), 0);
	free(rw);
	free(rv);
}

/* Every truncation fails with an error naming the file; nothing leaks
 * (make check runs this under ASan). */
Test(ckpt, every_truncation_refused)
{
	struct ckpt_meta m, r;
	struct px_error err;
	float *rw, *rv;
	uint8_t *buf;
	size_t len;

	meta(&m);
	write_good(&m);
	buf = (void *)px_test_read_file(path, &len);
	cr_assert_not_null(buf);
	for (size_t n = 0; n < len; n++) {
		spit(path, buf, n);
		cr_assert_neq(ckpt_read(path, &r, &rw, &rv, &err), PX_OK,
			      "%zu of %zu bytes accepted", n, len);
		cr_assert_null(rw);
		cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
	}
	free(buf);
}

/* One flipped bit anywhere after the header line: the SHA-256 says so. */
Test(ckpt, flipped_byte_refused)
{
	struct ckpt_meta m, r;
	struct px_error err;
	float *rw, *rv;
	uint8_t *buf;
	size_t len, hl;

	meta(&m);
	write_good(&m);
	buf = (void *)px_test_read_file(path, &len);
	cr_assert_not_null(buf);
	hl = (size_t)((uint8_t *)memchr(buf, '\n', len) - buf) + 1;
	for (size_t at = hl; at < len; at += 7) {
		buf[at] ^= 0x10;
		spit(path, buf, len);
		cr_assert_eq(ckpt_read(path, &r, &rw, &rv, &err), PX_EINVAL);
		cr_assert_not_null(strstr(err.msg, "SHA-256 does not match"),
				   "byte %zu: %s", at, err.msg);
		buf[at] ^= 0x10;
	}
	free(buf);
}

/* Rewrite the header line of a good file with one edit (the SHA-256 then
 * no longer matches, but the header is checked first). */
static enum px_err edited(const char *from, const char *to,
			  struct px_error *err)
{
	struct ckpt_meta m, r;
	char *buf, *out, *at;
	float *rw = NULL, *rv = NULL;
	size_t len, fl = strlen(from), tl = strlen(to);
	enum px_err e;

	meta(&m);
	write_good(&m);
	buf = (void *)px_test_read_file(path, &len);
	cr_assert_not_null(buf);
	at = memmem(buf, len, from, fl);
	cr_assert_not_null(at, "'%s' not in the header", from);
	out = malloc(len + tl);
	memcpy(out, buf, (size_t)(at - buf));
	memcpy(out + (at - buf), to, tl);
	memcpy(out + (at - buf) + tl, at + fl, len - (size_t)(at - buf) - fl);
	spit(path, out, len - fl + tl);
	e = ckpt_read(path, &r, &rw, &rv, err);
	cr_assert_null(rw);
	free(buf);
	free(out);
	return e;
}

Test(ckpt, header_fields_named)
{
	static const struct {
		const char *from, *to, *says;
	} c[] = {
		{ "\"clock\":7,", "", "field 'clock' missing" },
		{ "\"clock\":7", "\"clock\":-1", "field 'clock': not an integer" },
		{ "\"clock\":7", "\"clock\":41", "'clock': 41 is past 'total' "
						   "20 times 'workers' 2" },
		{ "\"version\":1", "\"version\":2", "version 2, this build "
						     "reads 1" },
		{ "\"params\":26", "\"params\":27", "'params': 27, but the "
						     "model it names has 26" },
		{ "\"model\":\"mlp\"", "\"model\":\"cnn\"", "field 'model'" },
		{ "\"hidden\":[3]", "\"hidden\":[0]", "'hidden[0]'" },
		{ "\"hidden\":[3]", "\"hidden\":3", "field 'hidden'" },
		{ "\"batch\":4", "\"batch\":\"4\"", "field 'batch'" },
		{ "proteus-checkpoint", "proteus-checkpoinT", "'format'" },
		{ "{\"format\"", "[\"format\"", "header, byte" },
		/* a header that claims fewer parameters than the file has */
		{ "\"hidden\":[3],\"params\":26", "\"hidden\":[2],\"params\":"
		  "18", "truncated or damaged" },
	};
	struct px_error err;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		cr_assert_eq(edited(c[i].from, c[i].to, &err), PX_EINVAL,
			     "case %zu", i);
		cr_assert_not_null(strstr(err.msg, c[i].says),
				   "case %zu: %s", i, err.msg);
		cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
	}
}

Test(ckpt, not_a_checkpoint)
{
	struct ckpt_meta r;
	struct px_error err;
	float *rw, *rv;
	char big[5000];

	cr_assert_eq(ckpt_read("/nonexistent/x.pxc", &r, &rw, &rv, &err),
		     PX_ENOENT);
	cr_assert_not_null(strstr(err.msg, "/nonexistent/x.pxc"));
	memset(big, 'a', sizeof(big));
	spit(path, big, sizeof(big));
	cr_assert_eq(ckpt_read(path, &r, &rw, &rv, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "no header line"), "%s", err.msg);
	cr_assert_eq(ckpt_read(dir, &r, &rw, &rv, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "not a regular file"), "%s",
			   err.msg);
}

/* A checkpoint of another job's shape, or of a finished job, is refused
 * with what differs. */
Test(ckpt, other_job_refused)
{
	struct ckpt_meta have, want;
	struct px_error err;

	meta(&have);
	want = have;
	want.workers = 3;
	cr_assert_eq(ckpt_check_job("f", &have, &want, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "2 workers (--workers), this one "
				  "has 3"), "%s", err.msg);
	want = have;
	cr_assert_eq(model_desc_init(&want.d, MODEL_MLR, 5, 2, NULL, 0, NULL),
		     PX_OK);
	cr_assert_eq(ckpt_check_job("f", &have, &want, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "an mlp model, this job trains an "
				  "mlr"), "%s", err.msg);
	want = have;
	want.epochs = 6;
	cr_assert_eq(ckpt_check_job("f", &have, &want, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "epochs"), "%s", err.msg);
	want = have;
	have.clock = have.total;
	cr_assert_eq(ckpt_check_job("f", &have, &want, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "finished job"), "%s", err.msg);
}

/* A directory that cannot be written: the error names the file, and an
 * existing checkpoint there is untouched. */
Test(ckpt, unwritable_keeps_old)
{
	struct ckpt_meta m, r;
	struct px_error err;
	float w[26], v[26], *rw, *rv;

	if (geteuid() == 0)
		cr_skip_test("root ignores directory permissions");
	meta(&m);
	write_good(&m);
	cr_assert_eq(chmod(dir, 0500), 0);
	m.clock = 9;
	fill(w, v, 26, 1.0f);
	cr_assert_neq(ckpt_write(path, &m, w, v, &err), PX_OK);
	cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
	cr_assert_eq(chmod(dir, 0700), 0);
	cr_assert_eq(ckpt_read(path, &r, &rw, &rv, NULL), PX_OK);
	cr_assert_eq(r.clock, 7);
	free(rw);
	free(rv);
}

/* ----------------------------------------- incremental, prioritized */

/* The chain over the small MLP: a full checkpoint at clock 7, then w
 * moved by a change of size i+1 at parameter i (the larger the later):
 * a record of a budget of 5 pairs holds the 5 most changed, and a read
 * gives the full state with those 5 replaced, at the record's clock. */
Test(ckpt, delta_records_hold_the_most_changed)
{
	struct ckpt_meta m, got;
	struct ckpt_chain ch;
	float w[26], v[26], moved[26], *rw, *rv;
	uint64_t wrote, bytes;
	struct px_error err;
	char dname[160];
	struct stat st;
	size_t n;

	meta(&m);
	n = m.d.n_params;
	fill(w, v, n, 0.5f);
	cr_assert_eq(ckpt_chain_init(&ch, n, &err), PX_OK);
	cr_assert_eq(ckpt_chain_write(&ch, path, &m, w, v, 0, true, &wrote,
				      &bytes, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(wrote, n);
	for (size_t i = 0; i < n; i++)
		moved[i] = w[i] + (float)((i * 7) % n + 1); /* all differ */
	m.clock = 9;
	m.samples = 4321;
	cr_assert_eq(ckpt_chain_write(&ch, path, &m, moved, v,
				      CKPT_DELTA_FIXED + 5 * 8, false, &wrote,
				      &bytes, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(wrote, 5);
	cr_assert_eq(bytes, CKPT_DELTA_FIXED + 5 * 8);
	snprintf(dname, sizeof(dname), "%s.delta", path);
	cr_assert_eq(stat(dname, &st), 0);
	cr_assert_eq((uint64_t)st.st_size, bytes);
	cr_assert_eq(ckpt_read(path, &got, &rw, &rv, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(got.clock, 9);
	cr_assert_eq(got.samples, 4321);
	cr_assert_eq(got.deltas, 1);
	for (size_t i = 0; i < n; i++) {
		/* changed by (i*7)%n + 1: the 5 largest are 22..26 */
		bool top = (i * 7) % n + 1 > n - 5;

		cr_assert_eq(memcmp(&rw[i], top ? &moved[i] : &w[i], 4), 0,
			     "parameter %zu", i);
		cr_assert_eq(memcmp(&rw[i], &ch.saved[i], 4), 0);
		cr_assert_eq(memcmp(&rv[i], &v[i], 4), 0); /* the full one's */
	}
	free(rw);
	free(rv);
	/* the next record takes the next most changed, not those again */
	m.clock = 10;
	cr_assert_eq(ckpt_chain_write(&ch, path, &m, moved, v,
				      CKPT_DELTA_FIXED + 5 * 8, false, &wrote,
				      &bytes, &err), PX_OK);
	cr_assert_eq(ckpt_read(path, &got, &rw, &rv, &err), PX_OK);
	cr_assert_eq(got.deltas, 2);
	for (size_t i = 0; i < n; i++) {
		bool top = (i * 7) % n + 1 > n - 10;

		cr_assert_eq(memcmp(&rw[i], top ? &moved[i] : &w[i], 4), 0,
			     "parameter %zu", i);
	}
	free(rw);
	free(rv);
	/* a full checkpoint removes the records */
	m.clock = 11;
	cr_assert_eq(ckpt_chain_write(&ch, path, &m, moved, v, 0, true,
				      &wrote, &bytes, &err), PX_OK);
	cr_assert_eq(stat(dname, &st), -1);
	cr_assert_eq(ckpt_read(path, &got, &rw, &rv, &err), PX_OK);
	cr_assert_eq(got.deltas, 0);
	cr_assert_eq(memcmp(rw, moved, n * 4), 0);
	free(rw);
	free(rv);
	ckpt_chain_release(&ch);
}

/* Three records; then: the last cut short anywhere is dropped (a crash
 * appending), a flipped byte in the first fails the read naming record
 * 1, records of another full checkpoint are skipped, and a FIFO in the
 * records' place is refused at once. */
Test(ckpt, delta_records_damage)
{
	struct ckpt_meta m, got;
	struct ckpt_chain ch;
	float w[26], v[26], *rw, *rv;
	uint64_t wrote, bytes, rec;
	struct px_error err;
	char dname[160];
	size_t n, len;
	uint8_t *buf;
	FILE *f;

	meta(&m);
	n = m.d.n_params;
	fill(w, v, n, 0.5f);
	cr_assert_eq(ckpt_chain_init(&ch, n, &err), PX_OK);
	cr_assert_eq(ckpt_chain_write(&ch, path, &m, w, v, 0, true, &wrote,
				      &bytes, &err), PX_OK);
	for (int r = 0; r < 3; r++) {
		w[r] += 1.0f;
		m.clock++;
		cr_assert_eq(ckpt_chain_write(&ch, path, &m, w, v, 1000, false,
					      &wrote, &bytes, &err), PX_OK);
		cr_assert_eq(wrote, 1);
	}
	rec = bytes;
	snprintf(dname, sizeof(dname), "%s.delta", path);
	buf = (void *)px_test_read_file(dname, &len);
	cr_assert_not_null(buf);
	cr_assert_eq(len, 3 * rec);
	for (size_t cut = 2 * rec + 1; cut < len; cut += 7) {
		f = fopen(dname, "wb");
		cr_assert_eq(fwrite(buf, 1, cut, f), cut);
		fclose(f);
		cr_assert_eq(ckpt_read(path, &got, &rw, &rv, &err), PX_OK,
			     "cut at %zu: %s", cut, err.msg);
		cr_assert_eq(got.deltas, 2, "cut at %zu", cut);
		cr_assert_eq(got.clock, 9);
		cr_assert_eq(rw[2], w[2] - 1.0f); /* the third not applied */
		free(rw);
		free(rv);
	}
	buf[8 + 32 + 8 + 8 + 4 + 4 + 4] ^= 1; /* record 1's value */
	f = fopen(dname, "wb");
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	cr_assert_eq(ckpt_read(path, &got, &rw, &rv, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "record 1"), "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, "damaged"), "%s", err.msg);
	buf[8 + 32 + 8 + 8 + 4 + 4 + 4] ^= 1;
	buf[8] ^= 1; /* record 1 of another full checkpoint: all stale */
	f = fopen(dname, "wb");
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	cr_assert_eq(ckpt_read(path, &got, &rw, &rv, &err), PX_OK);
	cr_assert_eq(got.deltas, 0);
	cr_assert_eq(got.clock, 7);
	free(rw);
	free(rv);
	free(buf);
	cr_assert_eq(unlink(dname), 0);
	cr_assert_eq(mkfifo(dname, 0600), 0);
	cr_assert_eq(ckpt_read(path, &got, &rw, &rv, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "not a regular file"), "%s",
			   err.msg);
	ckpt_chain_release(&ch);
}

/* The capacity of a budget; a change of none is no pair. */
Test(ckpt, delta_capacity_and_no_change)
{
	struct ckpt_meta m, got;
	struct ckpt_chain ch;
	float w[26], v[26], *rw, *rv;
	uint64_t wrote, bytes;
	struct px_error err;

	cr_assert_eq(ckpt_delta_capacity(CKPT_DELTA_FIXED + 7), 0);
	cr_assert_eq(ckpt_delta_capacity(CKPT_DELTA_FIXED + 8), 1);
	cr_assert_eq(ckpt_delta_capacity(CKPT_DELTA_FIXED + 8000), 1000);
	meta(&m);
	fill(w, v, m.d.n_params, 2.0f);
	cr_assert_eq(ckpt_chain_init(&ch, m.d.n_params, &err), PX_OK);
	cr_assert_eq(ckpt_chain_write(&ch, path, &m, w, v, 0, true, &wrote,
				      &bytes, &err), PX_OK);
	m.clock = 8;
	cr_assert_eq(ckpt_chain_write(&ch, path, &m, w, v, 4096, false,
				      &wrote, &bytes, &err), PX_OK);
	cr_assert_eq(wrote, 0);
	cr_assert_eq(bytes, CKPT_DELTA_FIXED);
	cr_assert_eq(ckpt_read(path, &got, &rw, &rv, &err), PX_OK);
	cr_assert_eq(got.clock, 8);
	cr_assert_eq(memcmp(rw, w, sizeof(w)), 0);
	free(rw);
	free(rv);
	ckpt_chain_release(&ch);
}

/* A run resumed from its own file goes on with the chain: the next
 * checkpoint is a record over the same full one, and a read gives the
 * full state, the first life's records and the second's. */
Test(ckpt, a_resumed_chain_goes_on)
{
	struct ckpt_meta m, got;
	struct ckpt_chain ch, again;
	float w[26], v[26], *rw, *rv;
	uint64_t wrote, bytes;
	struct px_error err;
	char dname[160];
	struct stat st;

	meta(&m);
	fill(w, v, m.d.n_params, 1.0f);
	cr_assert_eq(ckpt_chain_init(&ch, m.d.n_params, &err), PX_OK);
	cr_assert_eq(ckpt_chain_write(&ch, path, &m, w, v, 0, true, &wrote,
				      &bytes, &err), PX_OK);
	w[3] += 2.0f;
	m.clock = 8;
	cr_assert_eq(ckpt_chain_write(&ch, path, &m, w, v, 200, false,
				      &wrote, &bytes, &err), PX_OK);
	ckpt_chain_release(&ch);
	/* the second life */
	cr_assert_eq(ckpt_read(path, &got, &rw, &rv, &err), PX_OK);
	cr_assert_eq(got.deltas, 1);
	cr_assert_eq(ckpt_chain_init(&again, m.d.n_params, &err), PX_OK);
	ckpt_chain_adopt(&again, &got, rw);
	rw[5] -= 4.0f;
	m.clock = 9;
	cr_assert_eq(ckpt_chain_write(&again, path, &m, rw, rv, 200, false,
				      &wrote, &bytes, &err), PX_OK);
	cr_assert_eq(wrote, 1, "a record of the one change, not a full one");
	snprintf(dname, sizeof(dname), "%s.delta", path);
	cr_assert_eq(stat(dname, &st), 0);
	cr_assert_eq((uint64_t)st.st_size, 2 * (CKPT_DELTA_FIXED + 8));
	free(rw);
	free(rv);
	cr_assert_eq(ckpt_read(path, &got, &rw, &rv, &err), PX_OK);
	cr_assert_eq(got.deltas, 2);
	cr_assert_eq(got.clock, 9);
	cr_assert_eq(rw[3], w[3]);
	cr_assert_eq(rw[5], w[5] - 4.0f);
	free(rw);
	free(rv);
	ckpt_chain_release(&again);
}
