/* prog_fence.c -- the program's cgroup and its fence off the instance
 * metadata (prog_fence.h).
 *
 * The cgroup: the agent's own cgroup is read from /proc/self/cgroup and
 * its folder from /proc/self/mountinfo; the program's is a child of it,
 * "proteus-prog-iINST-PID" (PID the agent's, so that a later agent can
 * tell one left by an agent that died and remove it).
 *
 * The fence: iptables(8) and ip6tables(8), run with a fixed argv (never a
 * shell), insert at the head of OUTPUT one rule per address:
 *   -p tcp -d ADDR --dport PORT -m owner --uid-owner UID
 *   -m comment --comment proteus-imds-PID -j REJECT --reject-with tcp-reset
 * which is the rule AWS documents for keeping users off IMDS ("Limit
 * access to the instance metadata service"), here for the program's user
 * only (the agent, root, still reads its notices).  A probe connects as
 * the program's user afterwards: only a refused connection counts. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prog_fence.h"

#define CG_PREFIX "proteus-prog-"
#define FENCE_TAG "proteus-imds-"
#define CMD_OUT_MAX (256u << 10)
#define PROBE_MS 1000
#define IMDS_V6 "fd00:ec2::254"   /* the default endpoint's IPv6 twin */

/* The reason, bounded (a path, an errno). */
__attribute__((format(printf, 3, 4)))
static void why_set(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static bool read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n >= 0;
}

static bool write_small(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t n = strlen(s);
	bool ok = fd >= 0 && write(fd, s, n) == (ssize_t)n;

	if (fd >= 0)
		close(fd);
	return ok;
}

static bool has_word(const char *list, const char *w, const char *seps)
{
	size_t n = strlen(w);

	for (const char *s = list; (s = strstr(s, w)); s += n)
		if ((s == list || strchr(seps, s[-1])) &&
		    (!s[n] || strchr(seps, s[n])))
			return true;
	return false;
}

/* ---- the cgroup ---- */

/* The mount of the hierarchy (cgroup2, or v1's with the pids
 * controller): its folder and the cgroup path it shows as its root. */
static bool mount_of(bool v2, char *dir, size_t dl, char *root, size_t rl)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	bool got = false;

	while (f && !got && fgets(line, sizeof line, f)) {
		char r[1024], mp[1024], type[64], opts[1024];
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", r, mp) != 2 ||
		    sscanf(dash + 3, "%63s %*s %1023s", type, opts) != 2)
			continue;
		if (v2 ? strcmp(type, "cgroup2") :
		    strcmp(type, "cgroup") || !has_word(opts, "pids", ","))
			continue;
		snprintf(dir, dl, "%s", mp);
		snprintf(root, rl, "%s", r);
		got = true;
	}
	if (f)
		fclose(f);
	return got;
}

/* The agent's cgroup path in the hierarchy (v2: "0::PATH"; v1: the
 * line whose controllers hold pids). */
static bool own_path(bool v2, char *path, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	bool got = false;

	while (f && !got && fgets(line, sizeof line, f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') :
			   NULL;

		if (!c2)
			continue;
		*c2 = 0;
		line[strcspn(line, ":")] = 0;
		if (v2 ? strcmp(line, "0") || c2 != c1 + 1 :
		    !has_word(c1 + 1, "pids", ","))
			continue;
		c2[1 + strcspn(c2 + 1, "\n")] = 0;
		snprintf(path, len, "%s", c2 + 1);
		got = true;
	}
	if (f)
		fclose(f);
	return got;
}

/* The folder of the agent's own cgroup in one hierarchy. */
static bool own_dir(bool v2, char *dir, size_t len)
{
	char mp[1024], root[1024], path[2048];
	size_t rl;

	if (!mount_of(v2, mp, sizeof mp, root, sizeof root) ||
	    !own_path(v2, path, sizeof path))
		return false;
	rl = strcmp(root, "/") ? strlen(root) : 0;
	if (rl && strncmp(path, root, rl))
		return false;     /* our cgroup is outside what is mounted */
	return (size_t)snprintf(dir, len, "%s%s", mp,
				strcmp(path + rl, "/") ? path + rl : "") < len;
}

static bool pid_alive(long pid)
{
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
}

static int signal_procs(const char *dir, int sig)
{
	char path[700];
	FILE *f;
	long pid;
	int n = 0;

	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	while (f && fscanf(f, "%ld", &pid) == 1)
		n += pid > 0 && kill((pid_t)pid, sig) == 0;
	if (f)
		fclose(f);
	return n;
}

/* rmdir, after SIGKILL to what is left, for at most about a second. */
static void remove_cg_dir(const char *dir)
{
	for (int i = 0; i < 100 && rmdir(dir) != 0 && errno == EBUSY; i++) {
		struct timespec ts = { 0, 10000000L };

		(void)signal_procs(dir, SIGKILL);
		nanosleep(&ts, NULL);
	}
}

/* Cgroups of agents that died (their tasks killed, their folders
 * removed). */
static void sweep(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		const char *dash = strrchr(e->d_name, '-');
		char path[1024];

		if (strncmp(e->d_name, CG_PREFIX, strlen(CG_PREFIX)) || !dash ||
		    pid_alive(strtol(dash + 1, NULL, 10)))
			continue;
		snprintf(path, sizeof path, "%s/%s", base, e->d_name);
		remove_cg_dir(path);
	}
	if (d)
		closedir(d);
}

/* v2: the pids controller for our children (enabled already, or by us
 * where our cgroup holds no process, as a delegated subtree's leaf
 * parent does). */
static bool v2_pids(const char *base)
{
	char path[1100], buf[512];

	snprintf(path, sizeof path, "%s/cgroup.subtree_control", base);
	if (read_small(path, buf, sizeof buf) && has_word(buf, "pids", " \n"))
		return true;
	return write_small(path, "+pids") &&
	       read_small(path, buf, sizeof buf) &&
	       has_word(buf, "pids", " \n");
}

static bool make_in(struct prog_cg *cg, enum prog_cg_kind kind,
		    const char *base, const char *name, int64_t max,
		    char *why, size_t len)
{
	char path[1200], num[32];

	sweep(base);
	snprintf(cg->path, sizeof cg->path, "%s/%s", base, name);
	if (mkdir(cg->path, 0755) != 0 && errno != EEXIST) {
		why_set(why, len, "%s: %s", cg->path, strerror(errno));
		cg->path[0] = 0;
		return false;
	}
	snprintf(path, sizeof path, "%s/pids.max", cg->path);
	snprintf(num, sizeof num, "%lld", (long long)max);
	if (write_small(path, num)) {
		snprintf(path, sizeof path, "%s/cgroup.procs", cg->path);
		cg->procs_fd = open(path, O_WRONLY | O_CLOEXEC);
	}
	if (cg->procs_fd < 0) {
		why_set(why, len, "%s: %s", path, strerror(errno));
		remove_cg_dir(cg->path);
		cg->path[0] = 0;
		return false;
	}
	cg->kind = kind;
	return true;
}

/* cgroup v2: below the agent's own cgroup where the pids controller is
 * on for its children, else at the hierarchy's root (exempt from the
 * rule that a cgroup with processes has no controllers for children:
 * the agent's own cgroup, a service's, usually holds processes). */
static bool make_v2(struct prog_cg *cg, const char *name, int64_t max,
		    char *why, size_t len)
{
	char base[1024], mp[1024], root[1024];

	if (!mount_of(true, mp, sizeof mp, root, sizeof root)) {
		why_set(why, len, "%s%s", "no cgroup v2 hierarchy", "");
		return false;
	}
	if (own_dir(true, base, sizeof base) && v2_pids(base))
		return make_in(cg, PROG_CG_V2, base, name, max, why, len);
	if (!v2_pids(mp)) {
		why_set(why, len, "%s: %s", mp, "no pids controller");
		return false;
	}
	return make_in(cg, PROG_CG_V2, mp, name, max, why, len);
}

bool prog_cg_make(struct prog_cg *cg, const char *name, int64_t max,
		  char *why, size_t len)
{
	char w2[400] = "", w1[400] = "", base[1024];

	*cg = (struct prog_cg){ .kind = PROG_CG_NONE, .procs_fd = -1 };
	if (max <= 0) {
		why_set(why, len, "%s%s", "no bound asked", "");
		return false;
	}
	if (make_v2(cg, name, max, w2, sizeof w2))
		return true;
	if (own_dir(false, base, sizeof base)) {
		if (make_in(cg, PROG_CG_V1, base, name, max, w1, sizeof w1))
			return true;
	} else {
		snprintf(w1, sizeof w1, "no cgroup v1 pids hierarchy");
	}
	why_set(why, len, "%s; %s", w2, w1);
	return false;
}

bool prog_cg_enter(const struct prog_cg *cg)
{
	char b[24], *s = b + sizeof b;
	long pid = (long)getpid();

	if (cg->kind == PROG_CG_NONE || cg->procs_fd < 0)
		return false;
	do {
		*--s = (char)('0' + pid % 10);
		pid /= 10;
	} while (pid && s > b);
	return write(cg->procs_fd, s, (size_t)(b + sizeof b - s)) ==
	       b + sizeof b - s;
}

int prog_cg_signal(const struct prog_cg *cg, int sig)
{
	return cg->kind == PROG_CG_NONE ? 0 : signal_procs(cg->path, sig);
}

void prog_cg_remove(struct prog_cg *cg)
{
	if (cg->procs_fd >= 0)
		close(cg->procs_fd);
	cg->procs_fd = -1;
	if (cg->kind != PROG_CG_NONE && cg->path[0])
		remove_cg_dir(cg->path);
	cg->kind = PROG_CG_NONE;
	cg->path[0] = 0;
}

const char *prog_cg_kind_name(enum prog_cg_kind k)
{
	return k == PROG_CG_V2 ? "cgroup v2" : k == PROG_CG_V1 ?
	       "cgroup v1" : "none";
}

/* ---- the fence ---- */

/* Run argv (a fixed program, no shell) with stdout into out (NULL:
 * dropped; at most CMD_OUT_MAX kept) and stderr's first line into err:
 * its exit status, or -1. */
static int run_cmd(char *const argv[], char **out, char *err, size_t el)
{
	static char *const envp[] = {
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL };
	int o[2], e[2], st = -1;
	size_t n = 0, cap = 0;
	char *buf = NULL;
	pid_t pid;

	if (err && el)
		err[0] = 0;
	if (pipe2(o, O_CLOEXEC) || pipe2(e, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		(void)dup2(nul, 0);
		(void)dup2(o[1], 1);
		(void)dup2(e[1], 2);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	for (;;) {
		char b[8192];
		ssize_t r = pid > 0 ? read(o[0], b, sizeof b) : 0;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (out && n + (size_t)r < CMD_OUT_MAX) {
			if (n + (size_t)r + 1 > cap) {
				char *nb = realloc(buf, cap = (n + r) * 2 + 1);

				if (!nb)
					break;
				buf = nb;
			}
			memcpy(buf + n, b, (size_t)r);
			n += (size_t)r;
		}
	}
	if (err && el && pid > 0) {
		ssize_t r = read(e[0], err, el - 1);

		err[r > 0 ? r : 0] = 0;
		err[strcspn(err, "\n")] = 0;
	}
	close(o[0]);
	close(e[0]);
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (out) {
		if (buf)
			buf[n] = 0;
		*out = buf;
	} else {
		free(buf);
	}
	return pid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *tool_path(bool v6)
{
	static const char *const v4p[] = { "/usr/sbin/iptables",
					   "/sbin/iptables", NULL };
	static const char *const v6p[] = { "/usr/sbin/ip6tables",
					   "/sbin/ip6tables", NULL };

	for (const char *const *p = v6 ? v6p : v4p; *p; p++)
		if (access(*p, X_OK) == 0)
			return *p;
	return NULL;
}

/* Insert (op "-I") or delete ("-D") the rule for addr. */
static int rule(const char *tool, const char *op, const char *addr,
		int port, uid_t uid, const char *tag, char *err, size_t el)
{
	char ps[16], us[16];
	char *argv[] = { (char *)tool, "-w", "5", (char *)op, "OUTPUT", "-p",
			 "tcp", "-d", (char *)addr, "--dport", ps, "-m", "owner",
			 "--uid-owner", us, "-m", "comment", "--comment",
			 (char *)tag, "-j", "REJECT", "--reject-with",
			 "tcp-reset", NULL };

	snprintf(ps, sizeof ps, "%d", port);
	snprintf(us, sizeof us, "%u", (unsigned)uid);
	return run_cmd(argv, NULL, err, el);
}

/* Rules of agents that died: each "-A OUTPUT ..." line of `-S OUTPUT`
 * with our tag, deleted by the same words after "-D". */
static void sweep_rules(const char *tool)
{
	char *argv[] = { (char *)tool, "-w", "5", "-S", "OUTPUT", NULL };
	char *out = NULL, *save = NULL;

	if (run_cmd(argv, &out, NULL, 0) != 0 || !out) {
		free(out);
		return;
	}
	for (char *l = strtok_r(out, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		const char *t = strstr(l, "--comment " FENCE_TAG);
		char *words[64], *ws = NULL;
		int n = 0;

		if (strncmp(l, "-A OUTPUT ", 10) || !t ||
		    pid_alive(strtol(t + 10 + strlen(FENCE_TAG), NULL, 10)))
			continue;
		words[n++] = (char *)tool;
		words[n++] = "-w";
		words[n++] = "5";
		words[n++] = "-D";
		for (char *w = strtok_r(l + 3, " ", &ws); w && n < 63;
		     w = strtok_r(NULL, " ", &ws))
			words[n++] = w;
		words[n] = NULL;
		(void)run_cmd(words, NULL, NULL, 0);
	}
	free(out);
}

/* Whether uid, gid can open a TCP connection to addr:port (in a child
 * that becomes them; a refusal, a timeout or no route all say no). */
static bool reachable(const char *addr, bool v6, int port, uid_t uid,
		      gid_t gid)
{
	int st = -1;
	pid_t pid = fork();

	if (pid == 0) {
		struct sockaddr_in6 s6 = { .sin6_family = AF_INET6,
					   .sin6_port = htons((uint16_t)port) };
		struct sockaddr_in s4 = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)port) };
		struct pollfd pf;
		socklen_t sl = sizeof(int);
		int fd, e = 0;

		if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
		    setresuid(uid, uid, uid) != 0)
			_exit(2);
		fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK,
			    0);
		if (fd < 0 || (v6 ? inet_pton(AF_INET6, addr, &s6.sin6_addr) :
			       inet_pton(AF_INET, addr, &s4.sin_addr)) != 1)
			_exit(2);
		if (connect(fd, v6 ? (struct sockaddr *)&s6 :
			    (struct sockaddr *)&s4, v6 ? sizeof s6 : sizeof s4) == 0)
			_exit(0);
		if (errno != EINPROGRESS)
			_exit(1);
		pf = (struct pollfd){ .fd = fd, .events = POLLOUT };
		if (poll(&pf, 1, PROBE_MS) != 1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0 || e)
			_exit(1);
		_exit(0);
	}
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	/* a probe that could not run says nothing: count it as reachable */
	return pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 1;
}

/* host:port of an http endpoint URL, host a literal address. */
static bool endpoint_of(const char *url, char *host, size_t hl, int *port,
			bool *v6)
{
	CURLU *u = curl_url();
	char *h = NULL, *p = NULL;
	unsigned char a[16];
	bool ok = false;

	if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) ==
	    CURLUE_OK) {
		size_t n = strlen(h);

		*v6 = n > 2 && h[0] == '[' && h[n - 1] == ']';
		snprintf(host, hl, "%.*s", (int)(*v6 ? n - 2 : n),
			 *v6 ? h + 1 : h);
		char *end;
		long pn = strtol(p, &end, 10);

		*port = !*end && pn > 0 && pn < 65536 ? (int)pn : 0;
		ok = *port > 0 &&
		     inet_pton(*v6 ? AF_INET6 : AF_INET, host, a) == 1;
	}
	curl_free(h);
	curl_free(p);
	curl_url_cleanup(u);
	return ok;
}

static bool fence_one(struct prog_imds_fence *f, const char *addr, bool v6,
		      int port, char *why, size_t len)
{
	const char *tool = tool_path(v6);
	char err[256];
	int rc;

	if (!tool) {
		why_set(why, len, "%s is not installed (it keeps the program's "
			"user off the instance metadata at %s)",
			v6 ? "ip6tables" : "iptables", addr);
		return false;
	}
	sweep_rules(tool);
	rc = rule(tool, "-I", addr, port, f->uid, f->tag, err, sizeof err);
	if (rc != 0) {
		why_set(why, len, "the rule keeping the program's user off %s "
			"was refused: %s", addr, err[0] ? err : "iptables failed");
		return false;
	}
	*(v6 ? &f->applied_v6 : &f->applied) = true;
	return true;
}

bool prog_imds_fence(struct prog_imds_fence *f, const char *endpoint,
		     uid_t uid, gid_t gid, char *why, size_t len)
{
	bool is_default;

	*f = (struct prog_imds_fence){ .uid = uid };
	snprintf(f->tag, sizeof f->tag, FENCE_TAG "%ld", (long)getpid());
	if (!endpoint || !*endpoint)
		endpoint = "http://169.254.169.254";
	if (uid == 0) {
		why_set(why, len, "the program would run as root, which no "
			"rule can keep off %s%s", endpoint, "");
		return false;
	}
	if (!endpoint_of(endpoint, f->host, sizeof f->host, &f->port, &f->v6)) {
		why_set(why, len, "the instance metadata endpoint '%s' is not "
			"an http URL with an address%s", endpoint, "");
		f->host[0] = 0;
		return false;
	}
	is_default = !f->v6 && !strcmp(f->host, "169.254.169.254") &&
		     f->port == 80;
	(void)fence_one(f, f->host, f->v6, f->port, why, len);
	if (reachable(f->host, f->v6, f->port, uid, gid)) {
		if (f->applied)
			why_set(why, len, "the program's user still reaches "
				"the instance metadata at %s %s", f->host,
				"after the rule");
		return false;
	}
	/* the default's IPv6 twin (Nitro, where enabled): fenced too where
	 * ip6tables is there; what matters is that it is not reachable */
	if (is_default) {
		char w6[256];

		(void)fence_one(f, IMDS_V6, true, 80, w6, sizeof w6);
		if (reachable(IMDS_V6, true, 80, uid, gid)) {
			why_set(why, len, "the program's user reaches the "
				"instance metadata at %s: %s", IMDS_V6, w6);
			return false;
		}
	}
	return true;
}

void prog_imds_sweep(void)
{
	for (int v6 = 0; v6 < 2; v6++)
		if (tool_path(v6))
			sweep_rules(tool_path(v6));
}

void prog_imds_unfence(struct prog_imds_fence *f)
{
	const char *t4 = tool_path(false), *t6 = tool_path(true);

	if (f->applied && t4)
		(void)rule(t4, "-D", f->v6 ? "" : f->host, f->port, f->uid,
			   f->tag, NULL, 0);
	if (f->applied_v6 && t6)
		(void)rule(t6, "-D", f->v6 ? f->host : IMDS_V6, f->v6 ? f->port :
			   80, f->uid, f->tag, NULL, 0);
	f->applied = f->applied_v6 = false;
}
