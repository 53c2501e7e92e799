/* ec2_userdata.c -- the user data of an ec2 world's instance: the node's
 * command as a shell script (ec2_userdata.h), in a bounded buffer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ec2_userdata.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

/* The script so far: p[0..n) and its end, within cap; over: something
 * did not fit (and nothing more is added). */
struct sbuf {
	char *p;
	size_t n, cap;
	bool over;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->over || b->n + n + 1 > b->cap) {
		b->over = true;
		return;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

/* s single-quoted for sh ('\'' for a quote). */
static void sb_quoted(struct sbuf *b, const char *s)
{
	sb_add(b, "'", 1);
	for (; *s; s++) {
		if (*s == '\'')
			sb_add(b, "'\\''", 4);
		else
			sb_add(b, s, 1);
	}
	sb_add(b, "'", 1);
}

#define LISTEN_HOST EC2W_LISTEN_HOST

/* Argument a, when it is the node's listen address: with the instance's
 * address, the script's $ip, in place of LISTEN_HOST (tcp://@PRIVATE_IP@:
 * PORT -> tcp://$ip:PORT).  False, nothing written: another argument. */
static bool sb_listen(struct sbuf *b, const char *a,
		      const struct world_place *pl)
{
	const char *at = strstr(a, LISTEN_HOST);

	if (!at || strcmp(a, pl->listen))
		return false;
	sb_add(b, a, (size_t)(at - a));
	sb_str(b, "$ip");
	sb_str(b, at + strlen(LISTEN_HOST));
	return true;
}

/* Whether every argument and environment entry of nd can go into a
 * systemd environment file unquoted and be split back at blanks
 * (ExecStart's $VAR): no blank, quote, backslash, `$` or backquote. */
static bool unit_safe(const struct world_node *nd)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
				 "QRSTUVWXYZ0123456789._:/@=,+-%";

	/* the unit runs `proteus-trainer node`: another command runs
	 * from the script */
	if (!nd->argv || !nd->argv[0] || !nd->argv[1] ||
	    strcmp(nd->argv[1], "node"))
		return false;
	for (char **a = nd->argv; a && *a; a++)
		if ((*a)[strspn(*a, ok)])
			return false;
	for (char **e = nd->env; e && *e; e++)
		if ((*e)[strspn(*e, ok)])
			return false;
	return true;
}

/* What a node's arguments gain on EC2: a spot node reads its own
 * interruption notice (only the instance can), on EC2's clock (the
 * fake's runs K times faster from T0). */
static void node_extra_args(const struct ec2w_userdata *u, struct sbuf *b)
{
	double k = u->clock_speedup;
	char line[96];

	if (!u->zone[0])
		return;
	sb_str(b, " --imds-notices");
	if (u->rebalance_leave)
		sb_str(b, " --leave-on-rebalance");
	if (k != 1.0 && u->clock_origin > 0) {
		snprintf(line, sizeof line, " --clock-speedup %.9g "
			 "--clock-origin %" PRId64, k, u->clock_origin);
		sb_str(b, line);
	}
}

/* On an instance whose image has the proteus-node unit (a real EC2
 * instance: no metadata endpoint set by hand), the node runs as that
 * unit: its arguments and environment go to /etc/proteus/node.env and
 * the unit starts (the journal keeps its log, systemd restarts a failed
 * node, the shutdown's SIGTERM is its leave).  Elsewhere (the fake EC2,
 * an image without the unit) the script goes on to run the node itself. */
static void unit_branch(const struct ec2w_userdata *u, struct sbuf *b)
{
	const struct world_node *nd = u->node;
	const struct world_place *pl = u->place;

	sb_str(b, "if [ -z \"${AWS_EC2_METADATA_SERVICE_ENDPOINT:-}\" ] && "
		  "command -v systemctl >/dev/null 2>&1 && "
		  "systemctl cat proteus-node.service >/dev/null 2>&1; then\n"
		  "  umask 077\n  mkdir -p /etc/proteus\n"
		  "  cat > /etc/proteus/node.env <<PROTEUS_NODE_ENV\n");
	for (char **e = nd->env; e && *e; e++) {
		sb_str(b, *e);
		sb_str(b, "\n");
	}
	for (char *const *e = u->enroll; e && *e; e++) {
		sb_str(b, *e);
		sb_str(b, "\n");
	}
	sb_str(b, "PROTEUS_NODE_ARGS=");
	/* argv[0] is the trainer and argv[1] "node": the unit has both */
	for (char **a = nd->argv && nd->argv[0] && nd->argv[1] ?
			nd->argv + 2 : NULL; a && *a; a++) {
		if (a != nd->argv + 2)
			sb_str(b, " ");
		if (!sb_listen(b, *a, pl))
			sb_str(b, *a);
	}
	node_extra_args(u, b);
	sb_str(b, "\nPROTEUS_NODE_ENV\n"
		  "  exec systemctl start --no-block proteus-node.service\n"
		  "fi\n");
}

enum px_err ec2w_userdata_check(const struct world_node *nd,
				struct px_error *err)
{
	for (char **e = nd->env; e && *e; e++) {
		if (!strncmp(*e, "PX_JOB_KEY=", 11) ||
		    !strncmp(*e, "PX_JOB_KEY_FILE=", 16))
			return px_errorf(err, PX_EINVAL, "the job key must not "
					 "reach an instance's user data");
		if (!strchr(*e, '=') || strchr(*e, '=') == *e)
			return px_errorf(err, PX_EINVAL, "bad environment "
					 "entry for a node");
	}
	return PX_OK;
}

/* The script finds the instance's own address (IMDSv2) and runs the
 * node's command (again after a failure, a few times: a node that lost
 * its coordinator, which a restarted daemon brings back at the same
 * address, registers anew). */
enum px_err ec2w_userdata(const struct ec2w_userdata *u, char *buf,
			  size_t cap, size_t *ret_len, struct px_error *err)
{
	const struct world_node *nd = u->node;
	const struct world_place *pl = u->place;
	struct sbuf sb = { .p = buf, .cap = cap };
	struct sbuf *b = &sb;
	char line[256];
	enum px_err rc;

	*ret_len = 0;
	if (cap)
		buf[0] = 0;
	sb_str(b, "#!/bin/sh\n");
	snprintf(line, sizeof line, "# proteusd %s: job %" PRId64 ", instance "
		 "%" PRIu64 " (%s%s%s)\n", u->daemon_id, u->job_id, u->id,
		 u->type_name, u->zone[0] ? " spot in " : " on-demand",
		 u->zone);
	sb_str(b, line);
	/* the metadata service may be slow at boot: asked again for a
	 * minute, not once (a lost answer cost the instance its join) */
	sb_str(b, "imds=${AWS_EC2_METADATA_SERVICE_ENDPOINT:-"
		  "http://169.254.169.254/}\nimds=${imds%/}\n"
		  "ip=; k=0\n"
		  "while [ -z \"$ip\" ] && [ $k -lt 30 ]; do\n"
		  "  k=$((k+1))\n"
		  "  tok=$(curl -sf -m 5 -X PUT -H "
		  "'X-aws-ec2-metadata-token-ttl-seconds: 300' "
		  "\"$imds/latest/api/token\")\n"
		  "  ip=$(curl -sf -m 5 -H \"X-aws-ec2-metadata-token: $tok\" "
		  "\"$imds/latest/meta-data/local-ipv4\")\n"
		  "  [ -n \"$ip\" ] || sleep 2\n"
		  "done\n"
		  "[ -n \"$ip\" ] || { echo 'proteus: no local-ipv4 from the "
		  "instance metadata' >&2; exit 1; }\n");
	rc = ec2w_userdata_check(nd, err);
	if (rc != PX_OK)
		return rc;
	if (unit_safe(nd))
		unit_branch(u, b);
	for (char **e = nd->env; e && *e; e++) {
		sb_str(b, "export ");
		sb_quoted(b, *e);
		sb_str(b, "\n");
	}
	for (char *const *e = u->enroll; e && *e; e++) {
		sb_str(b, "export ");
		sb_quoted(b, *e);
		sb_str(b, "\n");
	}
	sb_str(b, "n=0\nuntil");
	for (char **a = nd->argv; a && *a; a++) {
		sb_str(b, " ");
		if (!strcmp(*a, pl->listen) && strstr(*a, LISTEN_HOST)) {
			/* "tcp://$ip:PORT": the shell expands it */
			sb_add(b, "\"", 1);
			(void)sb_listen(b, *a, pl);
			sb_add(b, "\"", 1);
		} else {
			sb_quoted(b, *a);
		}
	}
	node_extra_args(u, b);
	sb_str(b, "; do n=$((n+1)); [ $n -lt 5 ] || exit 1; sleep 2; "
		  "done\n");
	if (b->over)
		return px_errorf(err, PX_ETOOBIG, "the node's command is past "
				 "EC2's %zu bytes of user data", cap);
	*ret_len = b->n;
	return PX_OK;
}
