/* config.h -- proteusd's configuration: one table of keys (config.c) that
 * parsing, defaults, range checks, --print-config, the "config" control
 * command and SIGHUP reload all walk (after redis's static_configs[]).
 *
 * The file holds "key value" lines.  Blank lines and lines whose first
 * non-blank is '#' are ignored, and a '#' after a blank ends the value
 * (so values cannot contain " #").  Keys are lower-case; every key may be
 * given at most once; unknown keys are errors.  Does not log: errors come
 * back in a struct config_diag, each naming file:line: 'key'.
 */
#ifndef PX_CONFIG_H
#define PX_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../bidbrain/pool.h"
#include "../common/px.h"

#define CONFIG_PATH_MAX 4096   /* db path, with its NUL */
#define CONFIG_SOCKET_MAX 108  /* sizeof(sun_path), with the NUL */
#define CONFIG_NAME_MAX 64     /* region, with its NUL */
#define CONFIG_FILE_MAX (1024 * 1024) /* longest config file read */
#define CONFIG_LINE_MAX 8192   /* longest line in it */
#define CONFIG_DIAG_MAX 64     /* messages kept; later ones are counted */
/* the ec2 world's keys */
#define CONFIG_LIST_MAX 2048   /* a list as written (ec2_subnets...) */
#define CONFIG_ARN_MAX 1024    /* an instance profile's name or ARN */
#define CONFIG_HOST_MAX 256    /* a host name (253) or an address */
#define CONFIG_URL_MAX 1024    /* an endpoint URL */
#define CONFIG_EC2_SUBNETS_MAX 16 /* zones with a subnet */
#define CONFIG_EC2_SGS_MAX 8   /* security groups */
#define CONFIG_POOL_LIMIT_MAX 256 /* a pool vCPU limit as written (every
				   * group and a total: under 160) */

/* One zone's subnet (ec2_subnets). */
struct config_subnet {
	char zone[CONFIG_NAME_MAX];   /* e.g. us-east-1a */
	char subnet[CONFIG_NAME_MAX]; /* e.g. subnet-0123456789abcdef0 */
};


/* The whole configuration; plain values, so that it copies by assignment. */
struct proteusd_config {
	char db[CONFIG_PATH_MAX];             /* SQLite store path */
	char world[CONFIG_NAME_MAX];          /* the world of jobs whose
					       * spec names none: a name the
					       * registry has with create
					       * (world.h), local or ec2 */
	char region[CONFIG_NAME_MAX];         /* a region name, us-east-1 */
	int log_level;                        /* enum log_level (log.h) */
	char control_socket[CONFIG_SOCKET_MAX]; /* AF_UNIX path */
	int control_socket_mode;              /* permission bits, no o+w */
	int64_t max_clients;                  /* control connections at once */
	int64_t client_timeout_ms;            /* idle/stall limit per client */
	/* /metrics (agent/metrics.h) */
	char metrics_listen[CONFIG_NAME_MAX]; /* "": off; ADDR:PORT */
	char metrics_host[CONFIG_NAME_MAX];   /* parsed: the address, no
					       * brackets */
	int metrics_port;                     /* parsed; 0: off */
	int64_t metrics_timeout_ms;           /* per phase of a scrape */
	/* notifications (agent/notify.h) */
	char notify_url[CONFIG_URL_MAX];      /* "": none; http(s) URL */
	char notify_command[CONFIG_PATH_MAX]; /* "": none; absolute path */
	int64_t notify_timeout_ms;            /* per attempt / per run */
	int64_t notify_attempts;              /* tries per event */
	int64_t notify_backoff_ms;            /* first retry's wait */
	int64_t notify_queue_max;             /* events waiting, per URL */
	int64_t notify_commands_max;          /* commands running at once */
	/* outbound requests a job names (agent/outbound.h) */
	char notify_url_allow[CONFIG_LIST_MAX]; /* origins a job's own
						 * notify_url may name */
	char data_url_allow[CONFIG_LIST_MAX];   /* origins of http(s)
						 * data URLs */
	int data_s3_allowed;                  /* s3:// data: 0 no, 1 yes */
	char checkpoint_s3_prefixes[CONFIG_LIST_MAX]; /* where program jobs'
						 * checkpoint stores may be:
						 * s3://BUCKET[/PREFIX],...;
						 * "": nowhere */
	/* jobs (agent/jobs.c) */
	int64_t max_jobs;                     /* running at once */
	int64_t stall_seconds;                /* a standing clock, real s */
	int64_t local_speedup;                /* market s per real s */
	int64_t local_max_instances;          /* 0: from cores and memory */
	char local_trace[CONFIG_PATH_MAX];    /* "": the shipped slice */
	char local_ondemand_prices[CONFIG_PATH_MAX]; /* "": shipped */
	char spot_advisor[CONFIG_PATH_MAX];   /* "": shipped, by start */
	char data_dir[CONFIG_PATH_MAX];       /* "": the trainer's default */
	char job_dir[CONFIG_PATH_MAX];        /* "": <db>.jobs */
	char trainer[CONFIG_PATH_MAX];        /* "": beside proteusd */
	int64_t stage2_ratio_pct;             /* AgileML tier thresholds */
	int64_t stage3_ratio_pct;
	int64_t stage_up_after_s;             /* market s a transient lasts
					       * before it moves a stage up */
	/* the pool all jobs share (bidbrain/pool.h, docs/pool.md): the
	 * limits kept as written and parsed beside, into pool_limits */
	char pool_spot_vcpus[CONFIG_POOL_LIMIT_MAX]; /* "none", "64",
						      * "standard=64,g=16" */
	char pool_ondemand_vcpus[CONFIG_POOL_LIMIT_MAX]; /* the same */
	char pool_usd_per_hour[CONFIG_NAME_MAX]; /* "none", "12.5" */
	struct pool_limits pool_limits;       /* parsed: .spot, .ondemand,
					       * .uusd_per_hour (-1: none) */
	int64_t pool_lease_seconds;           /* how long a share holds */
	char pool_fairness[CONFIG_NAME_MAX];  /* "0.8" */
	double pool_fairness_f;               /* parsed: Themis's f, (0, 1] */
	int pool_arbiter;                     /* enum arb_kind (arbiter.h) */
	/* the ec2 world (config_ec2_check says whether it can run).  A
	 * list is kept as written (for --print-config, equality and
	 * reload) and parsed beside it, in the same struct. */
	char ec2_ami[CONFIG_NAME_MAX];        /* "": not set */
	char ec2_subnets[CONFIG_LIST_MAX];    /* "ZONE=subnet-ID,..." */
	struct config_subnet ec2_subnet[CONFIG_EC2_SUBNETS_MAX];
	int ec2_subnet_count;                 /* parsed: one per zone */
	char ec2_security_groups[CONFIG_LIST_MAX]; /* "sg-ID,..." */
	char ec2_sg[CONFIG_EC2_SGS_MAX][CONFIG_NAME_MAX];
	int ec2_sg_count;                     /* parsed */
	char ec2_instance_profile[CONFIG_ARN_MAX]; /* a name or an ARN */
	bool ec2_instance_profile_is_arn;     /* parsed: "arn:..." */
	char ec2_key_name[CONFIG_HOST_MAX];   /* "": no key pair */
	char head_address[CONFIG_HOST_MAX];   /* where nodes reach us */
	char trainer_ports[CONFIG_NAME_MAX];  /* "LO-HI" */
	int64_t trainer_port_lo, trainer_port_hi; /* parsed, inclusive */
	char ec2_endpoint[CONFIG_URL_MAX];    /* "": $AWS_ENDPOINT_URL_EC2,
					       * $AWS_ENDPOINT_URL, the
					       * region's (ec2_config) */
	char ec2_node_trainer[CONFIG_PATH_MAX]; /* on the instances */
	char ec2_identity_cert[CONFIG_PATH_MAX]; /* the region's AWS
						  * certificate (PEM) */
	int64_t ec2_price_poll_s;             /* live spot prices, every */
	int64_t ec2_call_timeout_s;           /* one attempt of a call */
	int64_t ec2_hb_timeout_ms;            /* a silent node is lost */
	int64_t ec2_clock_speedup;            /* a fake's: world s per s */
	int64_t ec2_clock_origin;             /* Unix s; 0: the start */
};

enum config_type {
	CONFIG_STR,  /* char array; min/max bound the length in bytes */
	CONFIG_INT,  /* int64_t; decimal, min <= value <= max */
	CONFIG_MODE, /* int; octal permission bits within max, never o+w */
	CONFIG_ENUM, /* int; one of choices[] (name -> value) */
};

enum config_flags {
	CONFIG_RELOADABLE = 1 << 0, /* SIGHUP applies a change */
	CONFIG_IMMUTABLE = 1 << 1,  /* a change needs a restart */
};

struct config_choice {
	const char *name;
	int value;
	const char *refused; /* non-NULL: a known name this daemon refuses,
			      * and why (shown after "'name' ") */
};

/* One key.  dflt is the default as it would be written in the file; a NULL
 * dflt means dflt_fn computes it (from the environment) into buf. */
struct config_key {
	const char *name;
	enum config_type type;
	size_t offset; /* offsetof(struct proteusd_config, field) */
	int64_t min, max;
	const char *dflt;
	enum config_flags flags;
	const char *help;
	const struct config_choice *choices; /* CONFIG_ENUM: NULL-terminated */
	enum px_err (*dflt_fn)(char *buf, size_t len);
	/* CONFIG_STR, optional: whether val is good for this key (false:
	 * why, without the key's name), and what it parses into beside
	 * the string (ec2_subnet from ec2_subnets); run on every set,
	 * defaults and reloads included. */
	bool (*check)(const char *val, struct proteusd_config *cfg,
		      char *why, size_t wlen);
};

/* Error messages, each "file:line: 'key': what" (or "file: what"). */
struct config_diag {
	char **msgs;    /* n messages, malloc'd */
	size_t n;
	size_t dropped; /* messages over CONFIG_DIAG_MAX, not kept */
};
void config_diag_release(struct config_diag *d);

/* The table: *ret_n entries, static. */
const struct config_key *config_keys(size_t *ret_n);
/* The key called name, or NULL. */
const struct config_key *config_key_find(const char *name);

/* Fill cfg with every key's default.  PX_EINVAL (with messages in d) only
 * if a computed default does not fit, e.g. a $RUNTIME_DIRECTORY so long
 * that the socket path is over CONFIG_SOCKET_MAX - 1 bytes. */
enum px_err config_defaults(struct proteusd_config *cfg,
			    struct config_diag *d);

/* Parse text (len bytes; name is used in messages) over the defaults.  All
 * errors are collected in d before returning PX_EINVAL; *ret is written
 * only on success. */
enum px_err config_parse(const char *name, const char *text, size_t len,
			 struct proteusd_config *ret, struct config_diag *d);
/* Read the file at path (at most CONFIG_FILE_MAX bytes) and parse it. */
enum px_err config_load(const char *path, struct proteusd_config *ret,
			struct config_diag *d);

/* Apply a freshly loaded config to the one in force: RELOADABLE keys that
 * differ are copied, IMMUTABLE keys that differ are kept and named in
 * refused ("'db' cannot change without a restart ...").  Returns the
 * number of keys changed. */
unsigned config_reload(struct proteusd_config *cur,
		       const struct proteusd_config *next,
		       struct config_diag *refused);

/* key's value in cfg as it would be written in the file ("0660",
 * "notice"), into buf; truncated to len. */
void config_format(const struct config_key *k,
		   const struct proteusd_config *cfg, char *buf, size_t len);
/* key's default as it would be written in the file, into buf. */
void config_format_default(const struct config_key *k, char *buf,
			   size_t len);
/* Whether key has the same value in a and b. */
bool config_equal(const struct config_key *k, const struct proteusd_config *a,
		  const struct proteusd_config *b);

/* The configuration as a JSON object {key: value} (integers as numbers,
 * the rest as strings); NULL on OOM.  The table holds no secrets (AWS
 * credentials never come from this file). */
json_t *config_to_json(const struct proteusd_config *cfg);

/* One problem more in d (printf-style); counted as dropped past
 * CONFIG_DIAG_MAX or out of memory.  For the checks of the worlds'
 * keys (agent/world/ec2_config.c). */
void config_diag_add(struct config_diag *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Whether zone (us-east-1a) is a zone of region (us-east-1). */
bool config_zone_in_region(const char *zone, const char *region);
/* Whether url is one proteusd may send to (ec2_endpoint, notify_url,
 * a job's notify_url): http:// or https://, a host, an optional port, no
 * user or password, no blank, control or non-ASCII byte.  false: why, in
 * why (the URL itself cut to 64 bytes). */
bool config_url_check(const char *url, char *why, size_t wlen);

/* Whether p is an S3 prefix as checkpoint_s3_prefixes and a program's
 * checkpoint_store name them: s3://BUCKET[/PREFIX], BUCKET 3..63 of
 * a-z 0-9 . - (starting and ending with a letter or digit), PREFIX
 * segments of printable ASCII but '\\', none empty, "." or ".." (a
 * trailing '/' is allowed), at most 512 bytes in all.  false: why. */
bool config_s3_prefix_valid(const char *p, char *why, size_t wlen);
/* Whether store (s3://BUCKET[/PREFIX]) lies under one of list's
 * prefixes (checkpoint_s3_prefixes, comma-separated), on path-segment
 * boundaries: s3://b/team allows s3://b/team and s3://b/team/x, never
 * s3://b/team2; s3://b allows all of bucket b.  Trailing '/'s count
 * for nothing. */
bool config_s3_prefix_allows(const char *list, const char *store);

/* Where this host listens for the nodes that reach it at head_address:
 * the address itself, or the IPv4 address a name resolves to (nanomsg
 * binds addresses, not names; the nodes keep dialling the name), into
 * buf (INET6_ADDRSTRLEN).  PX_EINVAL when it does not resolve or is no
 * address of this host (a TCP socket cannot bind it). */
enum px_err config_head_bind(const struct proteusd_config *c, char *buf,
			     size_t len, struct px_error *err);

/* What c allows but an operator likely did not mean, each added to d
 * (metrics_listen on the unspecified address: every interface);
 * returns how many.  proteusd logs them as warnings at start and in
 * --check-config. */
size_t config_warnings(const struct proteusd_config *c,
		       struct config_diag *d);

/* The subnet of zone in c (ec2_subnets), or NULL when none is set. */
const char *config_ec2_subnet(const struct proteusd_config *c,
			      const char *zone);

#endif
