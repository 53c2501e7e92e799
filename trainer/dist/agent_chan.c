/* agent_chan.c -- the agent's end of a job's trainer (agent_chan.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_chan.h"
#include "dist_int.h"
#include "net.h"

struct agent_chan {
	struct wire_ctx *ctx;
	struct net_sock *pull;   /* PROGRESS inbox */
	struct net_sock *req;    /* REQ to the coordinator */
	char ep[DIST_ADDR_MAX + 1];
};

enum px_err agent_chan_open(const struct agent_chan_setup *s,
			    struct agent_chan **ret, struct px_error *err)
{
	struct wire_config wc = {
		.self = { DIST_AGENT_NODE }, .job = s->job,
		.job_key = s->key, .job_key_len = s->key_len,
	};
	struct agent_chan *a;
	enum px_err e;
	int n;

	*ret = NULL;
	a = calloc(1, sizeof *a);
	if (!a)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	n = snprintf(a->ep, sizeof a->ep, "%s", s->agent_ep);
	if (n < 0 || (size_t)n >= sizeof a->ep) {
		free(a);
		return px_errorf(err, PX_ETOOBIG, "agent address '%s' too "
				 "long", s->agent_ep);
	}
	e = wire_ctx_new(&wc, &a->ctx, err);
	if (e == PX_OK)
		e = net_open(a->ctx, NET_PULL, NULL, &a->pull, err);
	if (e == PX_OK)
		e = net_bind(a->pull, a->ep, err);
	if (e == PX_OK)
		e = dist_sock(a->ctx, NET_REQ, s->coord, DIST_EP_REP, false,
			      &a->req, err);
	if (e != PX_OK) {
		agent_chan_close(a);
		return e;
	}
	*ret = a;
	return PX_OK;
}

void agent_chan_close(struct agent_chan *a)
{
	if (!a)
		return;
	net_close(a->req);
	net_close(a->pull);
	wire_ctx_free(a->ctx);
	free(a);
}

enum px_err agent_chan_register(struct agent_chan *a, const char *instance,
				int timeout_ms, struct px_error *err)
{
	struct wire_register info;
	struct wire_msg r;
	enum px_err e;

	memset(&info, 0, sizeof info);
	info.roles = WIRE_ROLE_AGENT;
	snprintf(info.instance, sizeof info.instance, "%s", instance);
	snprintf(info.addr, sizeof info.addr, "%s", a->ep);
	e = net_register(a->req, (struct wire_node){ DIST_COORD_NODE },
			 &info, timeout_ms, &r, err);
	if (e != PX_OK)
		return e;
	if (r.hdr.type == WIRE_ACK && r.u.ack.status == PX_OK)
		e = PX_OK;
	else
		e = px_errorf(err, PX_EPROTO, "the coordinator refused the "
			      "agent's registration");
	wire_msg_release(&r);
	return e;
}

enum px_err agent_chan_send(struct agent_chan *a, const struct wire_command *c,
			    struct px_error *err)
{
	struct wire_msg m;

	wire_msg_init(&m, WIRE_COMMAND, (struct wire_node){ DIST_COORD_NODE },
		      0);
	m.u.command = *c;
	return net_send(a->req, &m, 0, err);
}

enum px_err agent_chan_answer(struct agent_chan *a, int ms,
			      uint32_t *ret_status, char *detail, size_t len,
			      struct px_error *err)
{
	struct wire_msg m;
	enum px_err e = net_recv(a->req, &m, ms, err);

	if (e != PX_OK)
		return e;
	*ret_status = m.hdr.type == WIRE_ACK ? m.u.ack.status : PX_OK;
	if (len)
		snprintf(detail, len, "%s", m.hdr.type == WIRE_ACK ?
			 m.u.ack.detail : "");
	wire_msg_release(&m);
	return PX_OK;
}

enum px_err agent_chan_answer_fd(struct agent_chan *a, int *ret_fd,
				 struct px_error *err)
{
	return net_fd(a->req, false, ret_fd, err);
}

enum px_err agent_chan_progress(struct agent_chan *a, int ms,
				struct wire_msg *ret, struct px_error *err)
{
	enum px_err e;

	while ((e = net_recv(a->pull, ret, ms, err)) == PX_OK) {
		if (ret->hdr.type == WIRE_PROGRESS &&
		    ret->hdr.sender.v == DIST_COORD_NODE)
			return PX_OK;
		wire_msg_release(ret);
		ms = 0;
	}
	return e;
}
