/* config.c -- the config table and what walks it: defaults, the file
 * parser, reload, formatting and JSON (see config.h, docs/proteusd.md).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "proto.h"

#define CFG(f) offsetof(struct proteusd_config, f)

/* The world of jobs whose spec names none.  The daemon runs jobs in the
 * local world only (jobs.c refuses a job that names ec2), so that is the
 * one value accepted; the others are refused at load and reload rather
 * than accepted and ignored. */
static const struct config_choice world_choices[] = {
	{"local", WORLD_LOCAL, NULL},
	{"ec2", WORLD_EC2, "is not supported by this daemon yet: it runs "
			   "jobs in the local world only"},
	{"sim", WORLD_SIM, "is no world for jobs: simulations run with "
			   "'proteusctl simulate'"},
	{NULL, 0, NULL},
};

static const struct config_choice level_choices[] = {
	{"err", LOG_LVL_ERR, NULL},       {"warning", LOG_LVL_WARN, NULL},
	{"notice", LOG_LVL_NOTICE, NULL}, {"info", LOG_LVL_INFO, NULL},
	{"debug", LOG_LVL_DEBUG, NULL},   {NULL, 0, NULL},
};

/* The one table.  Keep docs/proteusd.md, proteusd(8) and
 * etc/proteusd.conf in step with it. */
static const struct config_key config_table[] = {
	{"db", CONFIG_STR, CFG(db), 1, CONFIG_PATH_MAX - 1, NULL,
	 CONFIG_IMMUTABLE,
	 "SQLite database: markets, prices, jobs, instances, events, costs "
	 "(default $PROTEUS_DB, $STATE_DIRECTORY/proteus.db, "
	 "/var/lib/proteus/proteus.db for root, else "
	 "$XDG_DATA_HOME/proteus/proteus.db or "
	 "~/.local/share/proteus/proteus.db)",
	 NULL, proto_default_db},
	{"world", CONFIG_ENUM, CFG(world), 0, 0, "local", CONFIG_IMMUTABLE,
	 "the world of jobs whose spec names none: local (processes here, "
	 "the market replayed from a trace), the only one this daemon runs",
	 world_choices, NULL},
	{"region", CONFIG_STR, CFG(region), 1, CONFIG_NAME_MAX - 1,
	 "us-east-1", CONFIG_IMMUTABLE,
	 "AWS region for markets and on-demand prices", NULL, NULL},
	{"log_level", CONFIG_ENUM, CFG(log_level), 0, 0, "notice",
	 CONFIG_RELOADABLE,
	 "most verbose level logged: err, warning, notice, info, debug",
	 level_choices, NULL},
	{"control_socket", CONFIG_STR, CFG(control_socket), 1,
	 CONFIG_SOCKET_MAX - 1, NULL, CONFIG_IMMUTABLE,
	 "control socket path (default $PROTEUS_SOCKET, "
	 "$RUNTIME_DIRECTORY/proteusd.sock, "
	 "/run/proteus/proteusd.sock for root, $XDG_RUNTIME_DIR/"
	 "proteusd.sock otherwise)",
	 NULL, proto_default_socket},
	{"control_socket_mode", CONFIG_MODE, CFG(control_socket_mode), 0,
	 0777, "0660", CONFIG_IMMUTABLE,
	 "control socket permissions, octal; o+w is refused", NULL, NULL},
	{"max_clients", CONFIG_INT, CFG(max_clients), 1, 4096, "64",
	 CONFIG_RELOADABLE,
	 "control connections at once; more are answered with an error",
	 NULL, NULL},
	{"client_timeout_ms", CONFIG_INT, CFG(client_timeout_ms), 100,
	 3600000, "10000", CONFIG_RELOADABLE,
	 "a control client silent this long, or stuck mid-request, is "
	 "disconnected",
	 NULL, NULL},
	{"max_jobs", CONFIG_INT, CFG(max_jobs), 1, 256, "4",
	 CONFIG_RELOADABLE,
	 "jobs running at once; later submissions wait, queued", NULL, NULL},
	{"local_speedup", CONFIG_INT, CFG(local_speedup), 1, 1200, "60",
	 CONFIG_RELOADABLE,
	 "local world: market seconds per real second (60: a trace minute "
	 "per second, so that a 2-minute notice leaves the trainer 2 s), "
	 "for jobs that do not set world.speedup", NULL, NULL},
	{"local_max_instances", CONFIG_INT, CFG(local_max_instances), 0,
	 4096, "0", CONFIG_RELOADABLE,
	 "local world: instances (trainer node processes) this host runs "
	 "at once, all jobs together; a job whose reliable tier does not "
	 "fit is refused, its spot fleet capped (0: 8 per online CPU, at "
	 "most one per 256 MiB of memory, at least 2)", NULL, NULL},
	{"local_trace", CONFIG_STR, CFG(local_trace), 0, CONFIG_PATH_MAX - 1,
	 "", CONFIG_RELOADABLE,
	 "local world: the spot-price trace jobs replay unless they name "
	 "one (empty: the shipped 7-day us-east-1 2016 slice)", NULL, NULL},
	{"local_ondemand_prices", CONFIG_STR, CFG(local_ondemand_prices), 0,
	 CONFIG_PATH_MAX - 1, "", CONFIG_RELOADABLE,
	 "local world: the on-demand price table (empty: the shipped one "
	 "of the shipped trace's era)", NULL, NULL},
	{"spot_advisor", CONFIG_STR, CFG(spot_advisor), 0,
	 CONFIG_PATH_MAX - 1, "", CONFIG_RELOADABLE,
	 "per-second billing: the Spot Instance Advisor snapshot whose "
	 "interruption buckets give each type's hazard, for jobs that name "
	 "none (empty: the shipped snapshot of the job's start month)",
	 NULL, NULL},
	{"data_dir", CONFIG_STR, CFG(data_dir), 0, CONFIG_PATH_MAX - 1, "",
	 CONFIG_RELOADABLE,
	 "the Fashion-MNIST files the jobs' trainer processes read (empty: "
	 "the trainer's default, /usr/share/datasets/fashion-mnist)", NULL,
	 NULL},
	{"job_dir", CONFIG_STR, CFG(job_dir), 0, CONFIG_PATH_MAX - 1, "",
	 CONFIG_IMMUTABLE,
	 "where each job keeps its sockets and checkpoint (empty: "
	 "<db>.jobs beside the database)", NULL, NULL},
	{"trainer", CONFIG_STR, CFG(trainer), 0, CONFIG_PATH_MAX - 1, "",
	 CONFIG_RELOADABLE,
	 "the proteus-trainer program (empty: the one beside proteusd)",
	 NULL, NULL},
	{"stage2_ratio_pct", CONFIG_INT, CFG(stage2_ratio_pct), 1, 100000,
	 "100", CONFIG_RELOADABLE,
	 "reliability tiers: stage 2 once transient/reliable nodes reach "
	 "this, in percent", NULL, NULL},
	{"stage3_ratio_pct", CONFIG_INT, CFG(stage3_ratio_pct), 1, 100000,
	 "800", CONFIG_RELOADABLE,
	 "reliability tiers: stage 3 from this ratio, in percent", NULL,
	 NULL},
	{"stage_up_after_s", CONFIG_INT, CFG(stage_up_after_s), 0, 86400,
	 "120", CONFIG_RELOADABLE,
	 "reliability tiers: a spot instance counts towards a higher stage "
	 "once it has been ready this many market seconds", NULL, NULL},
};

#define CONFIG_NKEYS (sizeof(config_table) / sizeof(config_table[0]))

const struct config_key *config_keys(size_t *ret_n)
{
	*ret_n = CONFIG_NKEYS;
	return config_table;
}

const struct config_key *config_key_find(const char *name)
{
	for (size_t i = 0; i < CONFIG_NKEYS; i++)
		if (!strcmp(config_table[i].name, name))
			return &config_table[i];
	return NULL;
}

const char *config_world_name(int world)
{
	for (const struct config_choice *c = world_choices; c->name; c++)
		if (c->value == world)
			return c->name;
	return "unknown";
}

void config_diag_release(struct config_diag *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->msgs[i]);
	free(d->msgs);
	*d = (struct config_diag){0};
}

static void diag_add(struct config_diag *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void diag_add(struct config_diag *d, const char *fmt, ...)
{
	va_list ap;
	char *m = NULL, **nm;

	if (!d)
		return;
	if (d->n >= CONFIG_DIAG_MAX) {
		d->dropped++;
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	nm = m ? px_reallocarray(d->msgs, d->n + 1, sizeof(*nm)) : NULL;
	if (!nm) {
		free(m);
		d->dropped++;
		return;
	}
	nm[d->n++] = m;
	d->msgs = nm;
}

/* Parse and check one value; on failure write why into why. */
static bool set_value(const struct config_key *k,
		      struct proteusd_config *cfg, const char *val,
		      char *why, size_t wlen)
{
	char *field = (char *)cfg + k->offset, *end;
	const char *sep;
	size_t n = strlen(val);
	long long v;

	switch (k->type) {
	case CONFIG_STR:
		if ((int64_t)n < k->min || (int64_t)n > k->max) {
			snprintf(why, wlen, "length %zu is outside %" PRId64
				 "..%" PRId64 " bytes", n, k->min, k->max);
			return false;
		}
		memcpy(field, val, n + 1);
		return true;
	case CONFIG_INT:
		errno = 0;
		v = strtoll(val, &end, 10);
		if (!n || *end || errno || (val[0] != '-' && (val[0] < '0' ||
							    val[0] > '9'))) {
			snprintf(why, wlen, "'%.64s' is not an integer", val);
			return false;
		}
		if (v < k->min || v > k->max) {
			snprintf(why, wlen, "%lld is outside %" PRId64
				 "..%" PRId64, v, k->min, k->max);
			return false;
		}
		memcpy(field, &(int64_t){v}, sizeof(int64_t));
		return true;
	case CONFIG_MODE:
		if (n < 1 || n > 4 || strspn(val, "01234567") != n) {
			snprintf(why, wlen, "'%.64s' is not an octal mode "
				 "such as 0660", val);
			return false;
		}
		v = strtoll(val, NULL, 8);
		if (v < k->min || v > k->max) {
			snprintf(why, wlen, "mode %04llo is outside %04" PRIo64
				 "..%04" PRIo64, v, k->min, k->max);
			return false;
		}
		if (v & 02) {
			snprintf(why, wlen, "mode %04llo lets any user write "
				 "(o+w); use 0660 or tighter", v);
			return false;
		}
		memcpy(field, &(int){(int)v}, sizeof(int));
		return true;
	case CONFIG_ENUM:
		for (const struct config_choice *c = k->choices; c->name; c++)
			if (!strcmp(c->name, val) && c->refused) {
				snprintf(why, wlen, "'%s' %s", c->name,
					 c->refused);
				return false;
			} else if (!strcmp(c->name, val)) {
				memcpy(field, &c->value, sizeof(int));
				return true;
			}
		n = (size_t)snprintf(why, wlen, "'%.64s' is not one of", val);
		sep = " ";
		for (const struct config_choice *c = k->choices;
		     c->name && n < wlen; c++)
			if (!c->refused) {
				n += (size_t)snprintf(why + n, wlen - n, "%s%s",
						      sep, c->name);
				sep = ", ";
			}
		return false;
	}
	snprintf(why, wlen, "bad table entry");
	return false;
}

void config_format_default(const struct config_key *k, char *buf,
			   size_t len)
{
	if (k->dflt)
		snprintf(buf, len, "%s", k->dflt);
	else if (k->dflt_fn(buf, len) != PX_OK)
		snprintf(buf, len, "(none)");
}

enum px_err config_defaults(struct proteusd_config *cfg,
			    struct config_diag *d)
{
	char buf[CONFIG_PATH_MAX], why[256];
	enum px_err r = PX_OK, e;

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < CONFIG_NKEYS; i++) {
		const struct config_key *k = &config_table[i];

		if (!k->dflt && (e = k->dflt_fn(buf, sizeof(buf))) != PX_OK) {
			diag_add(d, "'%s': %s", k->name,
				 e == PX_ETOOBIG ?
					 "default is too long" :
					 "no default: set PROTEUS_DB or HOME");
			r = PX_EINVAL;
			continue;
		}
		if (!set_value(k, cfg, k->dflt ? k->dflt : buf, why,
			       sizeof(why))) {
			diag_add(d, "'%s': default: %s", k->name, why);
			r = PX_EINVAL;
		}
	}
	return r;
}

/* Trim blanks at both ends in place; returns the new start. */
static char *trim(char *s)
{
	char *e;

	s += strspn(s, " \t\r");
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Split one line into key and value (in place); false for a blank or
 * comment line. */
static bool split_line(char *line, char **ret_key, char **ret_val)
{
	char *key = trim(line), *val, *hash;

	if (!*key || *key == '#')
		return false;
	val = key + strcspn(key, " \t");
	if (*val)
		*val++ = '\0';
	for (hash = val; (hash = strchr(hash, '#')); hash++)
		if (hash == val || hash[-1] == ' ' || hash[-1] == '\t') {
			*hash = '\0';
			break;
		}
	*ret_key = key;
	*ret_val = trim(val);
	return true;
}

enum px_err config_parse(const char *name, const char *text, size_t len,
			 struct proteusd_config *ret, struct config_diag *d)
{
	struct proteusd_config cfg;
	unsigned seen[CONFIG_NKEYS] = {0}; /* line a key was set on */
	char line[CONFIG_LINE_MAX + 1], why[256], *key, *val;
	const struct config_key *k;
	unsigned lineno = 0;
	bool bad = false;
	size_t pos = 0, n;

	if (config_defaults(&cfg, d) != PX_OK)
		return PX_EINVAL;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);

		n = nl ? (size_t)(nl - text) - pos : len - pos;
		lineno++;
		if (n > CONFIG_LINE_MAX || memchr(text + pos, '\0', n)) {
			diag_add(d, "%s:%u: line is over %d bytes or holds a "
				 "NUL byte", name, lineno, CONFIG_LINE_MAX);
			bad = true;
			pos += n + 1;
			continue;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos += n + 1;
		if (!split_line(line, &key, &val))
			continue;
		k = config_key_find(key);
		if (!k) {
			diag_add(d, "%s:%u: '%.64s': unknown key", name,
				 lineno, key);
			bad = true;
			continue;
		}
		if (seen[k - config_table]) {
			diag_add(d, "%s:%u: '%s': given again (first on line "
				 "%u)", name, lineno, k->name,
				 seen[k - config_table]);
			bad = true;
			continue;
		}
		seen[k - config_table] = lineno;
		/* "" is the empty string, for the keys that may be empty
		 * (what config_format writes for one) */
		if (k->type == CONFIG_STR && !strcmp(val, "\"\""))
			val[0] = '\0';
		else if (!*val)
			val = NULL;
		if (!val) {
			diag_add(d, "%s:%u: '%s': no value", name, lineno,
				 k->name);
			bad = true;
		} else if (!set_value(k, &cfg, val, why, sizeof(why))) {
			diag_add(d, "%s:%u: '%s': %s", name, lineno, k->name,
				 why);
			bad = true;
		}
	}
	if (bad)
		return PX_EINVAL;
	*ret = cfg;
	return PX_OK;
}

enum px_err config_load(const char *path, struct proteusd_config *ret,
			struct config_diag *d)
{
	char *text = NULL;
	size_t n = 0;
	enum px_err r;
	ssize_t k;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		diag_add(d, "%s: cannot open: %s", path, strerror(errno));
		return PX_ESYS | errno;
	}
	text = malloc(CONFIG_FILE_MAX + 1);
	if (!text) {
		close(fd);
		return PX_ENOMEM;
	}
	while ((k = read(fd, text + n, CONFIG_FILE_MAX + 1 - n)) > 0)
		n += (size_t)k;
	if (k < 0) {
		diag_add(d, "%s: cannot read: %s", path, strerror(errno));
		r = PX_ESYS | errno;
	} else if (n > CONFIG_FILE_MAX) {
		diag_add(d, "%s: file is over %d bytes", path,
			 CONFIG_FILE_MAX);
		r = PX_ETOOBIG;
	} else {
		r = config_parse(path, text, n, ret, d);
	}
	free(text);
	close(fd);
	return r;
}

bool config_equal(const struct config_key *k, const struct proteusd_config *a,
		  const struct proteusd_config *b)
{
	const char *fa = (const char *)a + k->offset;
	const char *fb = (const char *)b + k->offset;

	switch (k->type) {
	case CONFIG_STR:
		return !strcmp(fa, fb);
	case CONFIG_INT:
		return !memcmp(fa, fb, sizeof(int64_t));
	case CONFIG_MODE:
	case CONFIG_ENUM:
		return !memcmp(fa, fb, sizeof(int));
	}
	return false;
}

unsigned config_reload(struct proteusd_config *cur,
		       const struct proteusd_config *next,
		       struct config_diag *refused)
{
	unsigned changed = 0;
	char was[CONFIG_PATH_MAX], now[CONFIG_PATH_MAX];

	for (size_t i = 0; i < CONFIG_NKEYS; i++) {
		const struct config_key *k = &config_table[i];
		size_t sz = k->type == CONFIG_STR  ? (size_t)k->max + 1
			    : k->type == CONFIG_INT ? sizeof(int64_t)
						    : sizeof(int);

		if (config_equal(k, cur, next))
			continue;
		if (k->flags & CONFIG_IMMUTABLE) {
			config_format(k, cur, was, sizeof(was));
			config_format(k, next, now, sizeof(now));
			diag_add(refused, "'%s' cannot change from '%s' to "
				 "'%s' without a restart; keeping '%s'",
				 k->name, was, now, was);
			continue;
		}
		memcpy((char *)cur + k->offset, (const char *)next + k->offset,
		       sz);
		changed++;
	}
	return changed;
}

void config_format(const struct config_key *k,
		   const struct proteusd_config *cfg, char *buf, size_t len)
{
	const char *f = (const char *)cfg + k->offset;
	int64_t i64;
	int i;

	switch (k->type) {
	case CONFIG_STR:
		snprintf(buf, len, "%s", *f ? f : "\"\"");
		return;
	case CONFIG_INT:
		memcpy(&i64, f, sizeof(i64));
		snprintf(buf, len, "%" PRId64, i64);
		return;
	case CONFIG_MODE:
		memcpy(&i, f, sizeof(i));
		snprintf(buf, len, "%04o", (unsigned)i);
		return;
	case CONFIG_ENUM:
		memcpy(&i, f, sizeof(i));
		for (const struct config_choice *c = k->choices; c->name; c++)
			if (c->value == i) {
				snprintf(buf, len, "%s", c->name);
				return;
			}
		snprintf(buf, len, "%d", i);
		return;
	}
}

json_t *config_to_json(const struct proteusd_config *cfg)
{
	json_t *o = json_object(), *v;
	char buf[CONFIG_PATH_MAX];
	int64_t i64;

	if (!o)
		return NULL;
	for (size_t i = 0; i < CONFIG_NKEYS; i++) {
		const struct config_key *k = &config_table[i];

		if (k->type == CONFIG_INT) {
			memcpy(&i64, (const char *)cfg + k->offset,
			       sizeof(i64));
			v = json_integer(i64);
		} else if (k->type == CONFIG_STR) {
			v = json_string((const char *)cfg + k->offset);
		} else {
			config_format(k, cfg, buf, sizeof(buf));
			v = json_string(buf);
		}
		if (json_object_set_new(o, k->name, v) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
