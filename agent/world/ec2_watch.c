/* ec2_watch.c -- the ec2 world watching a job's instances: DescribeInstances
 * of the job's tag every POLL_MS, each instance listed held against what
 * this life knows of it (launched, running, joined, interrupted, ended).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "ec2_world_int.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

const char *ec2w_tag_of(const struct ec2_instance *i, const char *k)
{
	for (size_t t = 0; t < i->n_tags; t++)
		if (!strcmp(i->tags[t].key, k))
			return i->tags[t].value;
	return NULL;
}

bool ec2w_alive(const char *state)
{
	return !strcmp(state, "pending") || !strcmp(state, "running");
}

/* Whether EC2 ended instance i itself (a spot interruption), not at
 * anyone's request: billed as the provider's end (a spot instance's first
 * hour free). */
bool ec2w_ended_by_ec2(const struct ec2_instance *i)
{
	/* Server.SpotInstanceTermination, or ...Shutdown (a stop) */
	return !strncmp(i->state_reason_code, "Server.Spot", 11);
}

/* EC2's end of an instance: its state transition's time, else now. */
static int64_t end_time(const struct ec2w *w, const struct ec2_instance *i,
			const struct inst *in)
{
	int64_t t = i->transition_s > 0 ? i->transition_s : ec2w_clock(w);

	if (t < in->launch_s)
		t = in->launch_s;
	return t;
}

/* One instance of the job's tag as EC2 sees it now. */
static void observe(struct ec2w *w, const struct ec2_instance *i)
{
	struct inst *in = ec2w_inst_by_iid(w, i->id);
	const char *idt = ec2w_tag_of(i, TAG_ID);
	uint64_t id = idt ? strtoull(idt, NULL, 10) : 0;
	struct px_error err = {0};
	int64_t now = ec2w_clock(w);

	if (!in && id)
		in = ec2w_inst_of(w, id);
	if (!in) {
		/* a launch this life never saw answered (a restart between
		 * the call and its answer, EC2 slow to list it): the job's
		 * own, alive: adopted (once the run is over: terminated);
		 * else nothing to do */
		if (ec2w_alive(i->state) && id && w->run_over)
			ec2h_terminate(w->h, i->id, 0);
		else if (ec2w_alive(i->state) && id && w->started &&
			 ec2w_adopt(w, i, id, &err) != PX_OK)
			log_warn("job %" PRId64 ": instance %s: %s", w->s.job_id,
				 i->id, err.msg);
		return;
	}
	if (in->st == I_DONE && in->lost_answer && !in->released &&
	    !in->tell && ec2w_alive(i->state) && id == in->id && w->started) {
		/* refused as we heard it (the answer lost, the retries
		 * spent), launched as EC2 says: it is ours and billed from
		 * its launch time; the controller takes it up again, or,
		 * once the run is over, it is billed to now and ended */
		int slot = in->slot;

		if (w->run_over) {
			in->released = true;
			ec2w_bill_late_seen(w, in, i);
			ec2h_terminate(w->h, i->id, 0);
			return;
		}

		if (in->ready)   /* its node joined while it was asked */
			ec2w_joined_early_add(w, id);
		in->id = 0;
		in->slot = -1;   /* the adopted instance's, by its tag */
		if (ec2w_adopt(w, i, id, &err) != PX_OK) {
			log_warn("job %" PRId64 ": instance %s: %s", w->s.job_id,
				 i->id, err.msg);
			ec2h_terminate(w->h, i->id, 0);
			ec2h_slot_give(w->h, slot, w->node_slots);
		}
		return;
	}
	if (in->released || in->st == I_DONE) {
		if (in->bill_late)       /* let go while asked, its answer
					  * lost: EC2 launched it */
			ec2w_bill_late_seen(w, in, i);
		if (ec2w_alive(i->state)) {   /* ours to end */
			ec2h_terminate(w->h, i->id, 0);
		} else if (!in->bill_end_told && i->transition_s > 0) {
			/* EC2 billed it to here: the controller closed the
			 * bill at its decision, before the call arrived; or
			 * EC2 interrupted it before the call arrived (the
			 * job ended, or the policy let it go, between the
			 * interruption and the listing that would have told
			 * it): billed as EC2's end, free in its first hour */
			in->bill_end_told = in->bill_end_due = true;
			in->end_s = i->transition_s;
			in->end_by_ec2 = ec2w_ended_by_ec2(i);
		}
		return;
	}
	/* its answer is on the way; or we ended it (the join clock, a
	 * rebalance leave) and the controller is yet to hear so: not EC2's
	 * end */
	if (in->st == I_ASKED || (in->tell & (1u << T_FAILED)))
		return;
	if (!in->iid[0])
		snprintf(in->iid, sizeof in->iid, "%s", i->id);
	if (!strcmp(i->state, "running") && in->st == I_PENDING) {
		in->st = I_RUNNING;
		in->running_s = now;
	}
	if (ec2w_alive(i->state)) {
		if (in->st == I_RUNNING && !in->ready &&
		    now - in->running_s > JOIN_S) {
			snprintf(in->why, sizeof in->why, "its node did not "
				 "join within %d s of the instance running",
				 JOIN_S);
			if (w->s.hooks.start_failed)
				w->s.hooks.start_failed(w->s.hooks.ctx, in->id,
							in->why);
			in->end_s = now;
			ec2h_terminate(w->h, in->iid, 0);
			ec2w_tell(w, in, T_FAILED);
		}
		return;
	}
	/* ended, not by us: EC2 took it (a spot interruption) or it
	 * failed */
	in->end_s = end_time(w, i, in);
	snprintf(in->why, sizeof in->why, "%s%s%s", i->state,
		 i->state_reason_code[0] ? ": " : "", i->state_reason_code);
	if (strcmp(i->state, "terminated") && strcmp(i->state, "shutting-down"))
		ec2h_terminate(w->h, i->id, 0);   /* stopped: not billed, but
						   * of no use */
	ec2w_tell(w, in, T_GONE);
}

/* The ports of lost answers that no listing showed in LOST_SLOT_S: EC2
 * launched nothing (or will be told to end it: observe terminates
 * whatever of a closed request it lists). */
static void lost_slots_back(struct ec2w *w)
{
	uint64_t now = px_now_mono_us();

	for (size_t k = 0; k < w->n; k++) {
		struct inst *in = &w->v[k];

		if (in->st == I_DONE && in->lost_answer && in->slot >= 0 &&
		    now - in->refused_us > (uint64_t)LOST_SLOT_S * 1000000) {
			ec2h_slot_give(w->h, in->slot, w->node_slots);
			in->slot = -1;
		}
	}
}

static void describe_done(enum px_err rc, struct ec2_instance_list *l,
			  const struct px_error *err,
			  const struct ec2_aws_error *aws, void *ctx)
{
	struct call *k = ctx;
	struct ec2w *w = k->w;

	(void)aws;
	if (w)
		w->describing = false;
	if (rc == PX_ECANCELED || !w) {
		ec2w_call_end(k);
		return;
	}
	if (rc != PX_OK) {
		log_warn("job %" PRId64 ": DescribeInstances: %s (asked again "
			 "in %d s)", w->s.job_id, err ? err->msg : "failed",
			 POLL_MS / 1000);
	} else {
		w->seen_poll++;
		for (size_t i = 0; i < l->n; i++)
			observe(w, &l->v[i]);
		/* a lost answer of one let go, not in a listing asked after
		 * the refusal: EC2 never launched it */
		for (size_t i = 0; i < w->n; i++)
			if (w->v[i].bill_late && w->v[i].st == I_DONE &&
			    k->sent_us > w->v[i].refused_us)
				ec2w_bill_late(w, &w->v[i], -1);
		lost_slots_back(w);
	}
	ec2w_call_end(k);
}

/* The job's instances, by its tag. */
enum px_err ec2w_describe(struct ec2w *w, ec2_instances_done_fn done,
			  int kind, struct px_error *err)
{
	char job[24];
	const char *dv[1] = { w->h->daemon_id }, *jv[1] = { job };
	struct ec2_filter f[2] = {
		{ .name = "tag:" TAG_DAEMON, .values = dv, .n_values = 1 },
		{ .name = "tag:" TAG_JOB, .values = jv, .n_values = 1 },
	};
	struct call *k = ec2w_call_new(w, kind, 0);
	enum px_err e;

	if (!k)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	snprintf(job, sizeof job, "%" PRId64, w->s.job_id);
	e = ec2_describe_instances_start(w->h->c, NULL, 0, f, 2, false, done,
					 k, err);
	if (e != PX_OK)
		ec2w_call_end(k);
	else
		w->describing = true;
	return e;
}

int64_t ec2w_poll_timer(struct loop *l, int64_t id, void *ctx)
{
	struct ec2w *w = ctx;
	struct px_error err = {0};

	(void)l;
	(void)id;
	if (w->started && !w->describing &&
	    ec2w_describe(w, describe_done, 1, &err) != PX_OK)
		log_warn("job %" PRId64 ": DescribeInstances: %s", w->s.job_id,
			 err.msg);
	return POLL_MS;
}
