/* outbound.h -- the requests a job makes the daemon's host send, held to
 * the operator's rules (docs/security.md, "Outbound requests"): a job's
 * own notify_url (agent/notify.h) and its data named by http(s):// or
 * s3:// URL (trainer/io/data_url.h, fetched by the trainer processes).
 *
 * An allow-list (notify_url_allow, data_url_allow) is a comma-separated
 * list of origins: "scheme://host[:port]" (the port defaults to the
 * scheme's) allows that origin, and also any other name for it whose
 * address is the entry's when the entry's host is an address; a host
 * "*" ("https://" then "*") allows any host, at any port, all of whose
 * addresses are public
 * (not loopback, private, shared, link-local, unique-local, multicast or
 * unspecified).  Whatever a list says, link-local addresses
 * (169.254.0.0/16, fe80::/10) and the cloud metadata addresses
 * (169.254.169.254, fd00:ec2::254) are never reached, nor the daemon's
 * own /metrics.  A name is resolved (getaddrinfo) and every address it
 * has is held to the rule; notify.c checks each address again as libcurl
 * connects, so that a name that resolves elsewhere later (DNS
 * rebinding) reaches nothing the list does not allow.
 */
#ifndef PX_OUTBOUND_H
#define PX_OUTBOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "../common/px.h"
#include "config.h"
#include "jobreq.h"

#define OUTBOUND_ALLOW_MAX 32    /* origins in one list */

/* Whether list is a good allow-list ("" is: it allows nothing); false:
 * why (naming the bad entry). */
bool outbound_allow_valid(const char *list, char *why, size_t wlen);

/* The job's outbound URLs against cfg, at submit: its notify_url against
 * notify_url_allow, trainer.data's train and test URLs against
 * data_url_allow (http(s)://), data_s3_allowed (s3://) and what the
 * trainer can fetch (no other scheme, http:// only to a loopback host, no
 * user or password, a format its name tells unless trainer.data.format
 * does, no IDX).  PX_EINVAL naming name and the field ("job.json:
 * notify_url: ...", "job.json: trainer.data.train: ..."); a data URL is
 * shown without its query, never with credentials. */
enum px_err outbound_check_job(const struct job_request *req,
			       const struct proteusd_config *cfg,
			       const char *name, struct px_error *err);

/* Whether the daemon may connect to address sa (as libcurl is about to)
 * for url, a job's notify_url (job: true; checked against cfg's
 * notify_url_allow) or the daemon's own notify_url (job: false: only the
 * addresses never reached are refused).  false: why. */
bool outbound_notify_addr_ok(const struct proteusd_config *cfg,
			     const char *url, bool job,
			     const struct sockaddr *sa, socklen_t salen,
			     char *why, size_t wlen);

/* Whether sa is an address no request ever goes to: link-local or a
 * cloud metadata address. */
bool outbound_addr_never(const struct sockaddr *sa);

#endif
