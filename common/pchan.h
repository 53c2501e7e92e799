/* pchan.h -- the program channel: what a program job's node agent
 * (trainer/dist/prog_node.c) and proteusd (agent/workload_program.c) say
 * to each other, sealed under the job's key (docs/programs.md, "The
 * channel").
 *
 * Each message is one JSON object sealed with AES-256-GCM under a key
 * drawn from the job key (HKDF-SHA256, its own info string: no other
 * use of the job key shares it), the whole payload encrypted:
 *
 *   "PXPC" | version | dir | 0 0 | session (8) | counter (8) | nonce (12)
 *   | ciphertext | tag (16)
 *
 * The header is the additional data.  A node's agent draws a random
 * session at its start and counts its requests from 1; the daemon's
 * reply carries the request's session and counter with dir PCHAN_REPLY,
 * so that a reply answers one request only, and the daemon refuses a
 * request whose counter is not past the last it took from that session
 * (a replay).  Nothing here logs, and no error message holds a key.
 *
 * Also here: the names of the contract a program sees (its environment),
 * which both ends use.
 */
#ifndef PX_PCHAN_H
#define PX_PCHAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "px.h"

#define PCHAN_MAGIC "PXPC"
#define PCHAN_VERSION 1
#define PCHAN_HDR_LEN 36
#define PCHAN_TAG_LEN 16
#define PCHAN_MSG_MAX (4u << 20)     /* a sealed message, bytes */
#define PCHAN_CHUNK (1u << 20)       /* checkpoint bytes a message carries
				      * (base64: 4/3 of it) */
#define PCHAN_LINES_MAX 64           /* progress lines a beat carries */
#define PCHAN_LINE_MAX 4000          /* bytes of one progress line */
#define PCHAN_TAIL_MAX 2048          /* stderr bytes a node reports */

enum pchan_dir {
	PCHAN_REQUEST = 1,           /* agent -> daemon */
	PCHAN_REPLY = 2,             /* daemon -> agent */
};

struct pchan_key {
	uint8_t k[32];
};

/* The channel's key, from the job key (key_len bytes). */
enum px_err pchan_key_from_job(const uint8_t *key, size_t key_len,
			       struct pchan_key *ret, struct px_error *err);

/* A name for the job's node folders on a host (16 hex digits and the
 * NUL, drawn from the job key by HKDF: the same for the agents and the
 * daemon, unique across daemons, and no part of any key). */
#define PCHAN_TAG_HEX 17
enum px_err pchan_folder_tag(const uint8_t *key, size_t key_len,
			     char tag[PCHAN_TAG_HEX], struct px_error *err);

/* Seal msg (compact JSON) as dir from session/counter.  *ret (free())
 * holds *ret_len bytes.  PX_ETOOBIG past PCHAN_MSG_MAX. */
enum px_err pchan_seal(const struct pchan_key *k, enum pchan_dir dir,
		       uint64_t session, uint64_t counter, json_t *msg,
		       uint8_t **ret, size_t *ret_len, struct px_error *err);

/* Open buf[len]: PX_OK with its header's fields and the object (*ret,
 * json_decref it); PX_EPROTO for anything that is not a message of this
 * key (bad size, magic, version, tag, not a JSON object). */
enum px_err pchan_open(const struct pchan_key *k, const uint8_t *buf,
		       size_t len, enum pchan_dir *ret_dir,
		       uint64_t *ret_session, uint64_t *ret_counter,
		       json_t **ret, struct px_error *err);

/* Checkpoint bytes as a message carries them: s[len], base64 (len a
 * multiple of 4; the caller bounds it: out holds len / 4 * 3 bytes), into
 * out.  The bytes, the padding's not counted; -1 for what is not base64. */
int pchan_b64_decode(const char *s, size_t len, uint8_t *out);

/* ---- the contract's names (docs/programs.md) ---- */

#define PROG_ENV_JOB_ID "PROTEUS_JOB_ID"
#define PROG_ENV_RESTART "PROTEUS_RESTART"
#define PROG_ENV_RELIABLE "PROTEUS_RELIABLE"
#define PROG_ENV_NODE_RANK "PROTEUS_NODE_RANK"
#define PROG_ENV_NUM_NODES "PROTEUS_NUM_NODES"
#define PROG_ENV_NODE_ADDRS "PROTEUS_NODE_ADDRS"
#define PROG_ENV_CKPT_DIR "PROTEUS_CKPT_DIR"
#define PROG_ENV_CKPT_LATEST "PROTEUS_CKPT_LATEST"
#define PROG_ENV_PROGRESS "PROTEUS_PROGRESS"

#endif
