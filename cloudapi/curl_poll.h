/* curl_poll.h -- curl multi socket words as EC2_POLL_* bits. */
#ifndef PX_CURL_POLL_H
#define PX_CURL_POLL_H

/*
 * One translation between libcurl's socket-callback words (CURL_POLL_*,
 * CURL_CSELECT_*) and ec2_api.h's EC2_POLL_* bits, shared by every curl multi
 * handle that runs on the daemon's loop (the EC2 client, notifications).
 */

#include <curl/curl.h>

#include "ec2_api.h"

/* CURLMOPT_SOCKETFUNCTION's `what` as EC2_POLL_* bits. */
static inline int ec2_poll_from_curl(int what)
{
	int w = 0;

	if (what == CURL_POLL_REMOVE)
		w = EC2_POLL_REMOVE;
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		w |= EC2_POLL_IN;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		w |= EC2_POLL_OUT;
	return w;
}

/* EC2_POLL_* readiness as curl_multi_socket_action's ev_bitmask. */
static inline int ec2_poll_to_cselect(int what)
{
	int ev = 0;

	if (what & EC2_POLL_IN)
		ev |= CURL_CSELECT_IN;
	if (what & EC2_POLL_OUT)
		ev |= CURL_CSELECT_OUT;
	return ev;
}

#endif
