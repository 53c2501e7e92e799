/* ec2_enroll.c -- the ec2 world's side of node enrollment (enroll_srv.h;
 * docs/security.md): the owner the host's endpoint asks whose job and
 * instance a request is for, the enrollments kept in the store, and the
 * environment a node's user data gets to enroll with.
 */
#include <inttypes.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../db/store.h"
#include "ec2_world_int.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

static struct ec2w *world_of_job(struct ec2_host *h, int64_t job)
{
	for (struct ec2w *w = h->worlds; w; w = w->next_w)
		if (w->s.job_id == job && w->s.job_key)
			return w;
	return NULL;
}

static bool enroll_key_of(void *ctx, int64_t job, uint8_t key[ENROLL_KEY_LEN])
{
	struct ec2w *w = world_of_job(ctx, job);

	if (!w)
		return false;
	memcpy(key, w->s.job_key, ENROLL_KEY_LEN);
	return true;
}

/* The enrollment lasts the instance's life: in the store (the job's
 * events), so that a restarted daemon still refuses a second one. */
static void enrolled_keep(struct ec2w *w, struct inst *in)
{
	struct px_error err = {0};
	char pub[2 * ENROLL_PUB_LEN + 1], d[256];

	/* the controller's id in the detail (the event's instance column
	 * is the store's row, which the world does not know) */
	px_hex(in->enroll_pub, ENROLL_PUB_LEN, pub);
	snprintf(d, sizeof d, "{\"instance\": \"%s\", \"id\": %" PRIu64
		 ", \"pub\": \"%s\"}", in->iid, in->id, pub);
	if (store_event_add(w->h->wh->st, w->s.job_id, 0, px_now_wall_us(),
			    "enrolled", d, &err) != PX_OK)
		log_err("job %" PRId64 ": enrollment of %s not stored: %s",
			w->s.job_id, in->iid, err.msg);
}

/* Whether a launch of w has no instance id yet: on the wire, or refused
 * by a failure after which EC2 may have launched it all the same (its
 * ports are kept LOST_SLOT_S for the listing that may name it). */
static bool unanswered(const struct ec2w *w)
{
	uint64_t now = px_now_mono_us();

	for (size_t i = 0; i < w->n; i++) {
		const struct inst *in = &w->v[i];

		if (in->iid[0] || in->released)
			continue;
		if (in->st != I_DONE || (in->lost_answer && now -
		    in->refused_us < (uint64_t)LOST_SLOT_S * 1000000))
			return true;
	}
	return false;
}

static enum px_err enroll_admit(void *ctx, const struct enroll_request *r,
				const struct enroll_identity *id, char *why,
				size_t len, bool *retry)
{
	struct ec2w *w = world_of_job(ctx, r->job);
	struct inst *in = w ? ec2w_inst_by_iid(w, id->instance_id) : NULL;
	uint8_t t[ENROLL_TICKET_LEN];
	struct px_error err = {0};

	*retry = false;
	if (!w) {
		*retry = true;
		snprintf(why, len, "job %" PRId64 " runs no ec2 world here now",
			 r->job);
		return PX_ENOENT;
	}
	if (!in) {
		/* a launch whose answer is not in yet (or lost), or a world
		 * that has not reconciled after a restart: the listing that
		 * names the instance comes within seconds.  Otherwise it is
		 * none of the job's. */
		*retry = !w->started || unanswered(w);
		snprintf(why, len, *retry ? "instance %s is not known yet" :
			 "instance %s was not launched for job %" PRId64,
			 id->instance_id, r->job);
		return PX_ENOENT;
	}
	if (in->released || in->st == I_DONE) {
		snprintf(why, len, "instance %s has been let go", in->iid);
		return PX_EINVAL;
	}
	if (enroll_ticket(w->s.job_key, w->s.job_id, in->id, t, &err) != PX_OK
	    || CRYPTO_memcmp(t, r->ticket, sizeof t)) {
		OPENSSL_cleanse(t, sizeof t);
		snprintf(why, len, "the ticket is not instance %s's", in->iid);
		return PX_EINVAL;
	}
	OPENSSL_cleanse(t, sizeof t);
	if (in->enrolled) {
		/* the same request again (its answer lost): the same key
		 * sealed to the same public key; anything else is a second
		 * enrollment of one instance, a replay */
		if (!memcmp(in->enroll_pub, r->pub, ENROLL_PUB_LEN))
			return PX_OK;
		snprintf(why, len, "instance %s has enrolled already (a "
			 "replayed document or a second node)", in->iid);
		return PX_EEXIST;
	}
	in->enrolled = true;
	memcpy(in->enroll_pub, r->pub, ENROLL_PUB_LEN);
	w->n_enrolled++;
	enrolled_keep(w, in);
	return PX_OK;
}

static void enroll_refused(void *ctx, int64_t job, const char *instance,
			   const char *why)
{
	struct ec2w *w = world_of_job(ctx, job);
	struct px_error err = {0};
	json_t *d;
	char *s;

	if (!w)
		return;
	/* stored for the first refusals only: a flood must not fill the
	 * store (each is counted) */
	if (w->n_refused++ >= ENROLL_LOG_FIRST)
		return;
	d = json_pack("{s:s, s:s}", "instance", instance, "reason", why);
	s = d ? json_dumps(d, JSON_COMPACT) : NULL;
	if (s)
		(void)store_event_add(w->h->wh->st, job, 0, px_now_wall_us(),
				      "enroll_refused", s, &err);
	free(s);
	json_decref(d);
}

const struct enroll_owner ec2w_enroll_owner = {
	.key_of = enroll_key_of,
	.admit = enroll_admit,
	.refused = enroll_refused,
};

struct enrolled_find {
	uint64_t id;
	uint8_t pub[ENROLL_PUB_LEN];
	bool found;
};

static enum px_err enrolled_each(const struct store_event *ev, void *ctx)
{
	struct enrolled_find *f = ctx;
	json_t *d;

	if (strcmp(ev->kind, "enrolled"))
		return PX_OK;
	d = json_loadb(ev->detail, ev->detail_len, 0, NULL);
	if ((uint64_t)json_integer_value(json_object_get(d, "id")) == f->id)
		f->found = enroll_unhex(json_string_value(json_object_get(d,
					"pub")), f->pub, sizeof f->pub);
	json_decref(d);
	return PX_OK;
}

/* Whether instance in (adopted) enrolled in an earlier life. */
void ec2w_enrolled_before(struct ec2w *w, struct inst *in)
{
	struct enrolled_find f = { .id = in->id };
	struct px_error err = {0};

	if (store_events_each(w->h->wh->st, w->s.job_id, enrolled_each, &f,
			      &err) != PX_OK || !f.found)
		return;
	in->enrolled = true;
	memcpy(in->enroll_pub, f.pub, sizeof f.pub);
	w->n_enrolled++;
}

void ec2w_enrollments(const void *vw, int64_t *ret_ok,
		      int64_t *ret_refused)
{
	const struct ec2w *w = vw;

	*ret_ok = w->n_enrolled;
	*ret_refused = w->n_refused;
}

/* What the node of in needs to enroll (common/enroll.h): where, the
 * job, the job's enrollment public key and in's single-use ticket, as
 * "K=V" into v[ENROLL_ENV_MAX + 1] (NULL-ended; enroll_env_free). */
enum px_err ec2w_enroll_env(const struct ec2w *w, const struct inst *in,
			    char **v, struct px_error *err)
{
	uint8_t pub[ENROLL_PUB_LEN], t[ENROLL_TICKET_LEN];
	char hex[2 * ENROLL_TICKET_LEN + 1], buf[CONFIG_HOST_MAX + 64];
	enum px_err e;
	int k = 0;

	memset(v, 0, (ENROLL_ENV_MAX + 1) * sizeof *v);
	if (!w->s.job_key)
		return px_errorf(err, PX_EINVAL, "the job has no key to enroll "
				 "its nodes with");
	e = enroll_job_pub(w->s.job_key, pub, err);
	if (e == PX_OK)
		e = enroll_ticket(w->s.job_key, w->s.job_id, in->id, t, err);
	if (e != PX_OK)
		return e;
	snprintf(buf, sizeof buf, ENROLL_ENV_ADDR "=tcp://%s:%d",
		 w->h->wh->cfg->head_address, ec2h_slot_port(w->h, 0));
	v[k++] = strdup(buf);
	snprintf(buf, sizeof buf, ENROLL_ENV_JOB "=%" PRId64, w->s.job_id);
	v[k++] = strdup(buf);
	px_hex(pub, sizeof pub, hex);
	snprintf(buf, sizeof buf, ENROLL_ENV_PUB "=%s", hex);
	v[k++] = strdup(buf);
	px_hex(t, sizeof t, hex);
	snprintf(buf, sizeof buf, ENROLL_ENV_TICKET "=%s", hex);
	v[k++] = strdup(buf);
	OPENSSL_cleanse(t, sizeof t);
	OPENSSL_cleanse(hex, sizeof hex);
	OPENSSL_cleanse(buf, sizeof buf);
	for (int i = 0; i < k; i++)
		if (!v[i])
			return px_errorf(err, PX_ENOMEM, "out of memory");
	return PX_OK;
}

void ec2w_enroll_env_free(char **v)
{
	for (int i = 0; i < ENROLL_ENV_MAX; i++) {
		if (v[i])
			OPENSSL_cleanse(v[i], strlen(v[i]));
		free(v[i]);
		v[i] = NULL;
	}
}
