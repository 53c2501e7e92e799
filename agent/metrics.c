/* metrics.c -- the /metrics HTTP server on its own thread (metrics.h).
 *
 * Hand-written on poll(2): one thread, at most METRICS_MAX_CONNS
 * connections plus the listener and a wake-up eventfd, so a poll set of
 * at most 66 entries.  libmicrohttpd (in Debian) would do this too, but it
 * is not among the project's dependencies and what we need (one GET, a
 * fixed body, two deadlines) is less code than its setup.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "metrics.h"
#include "prom.h"

#define ACCEPT_PAUSE_MS 100      /* after EMFILE and friends */

const int metrics_codes[6] = { 200, 400, 404, 405, 431, 503 };

/* A published text; refs under m->mu. */
struct snap {
	unsigned refs;
	size_t len;
	char *text;
};

enum conn_state {
	CONN_READ,               /* the request head is arriving */
	CONN_WRITE,              /* the answer is going out */
	CONN_DRAIN,              /* answered, our side shut: reading to EOF
				  * so that unread input does not make the
				  * close a reset that loses the answer */
};

struct conn {
	int fd;
	enum conn_state st;
	uint64_t deadline_us;
	size_t in_len;
	char in[METRICS_REQ_MAX];
	char head[512];          /* status line, headers, an error's body */
	size_t head_len;
	struct snap *body;       /* NULL: no body beyond head */
	size_t off;              /* bytes of head + body sent */
};

struct metrics {
	int lfd, wakefd;
	uint64_t timeout_us;
	pthread_t th;
	bool started;
	pthread_mutex_t mu;
	struct snap *cur;        /* under mu */
	struct conn *conns[METRICS_MAX_CONNS];
	size_t n;
	uint64_t accept_pause_until;
	uint64_t answered[6];    /* __atomic */
	uint64_t timeouts;
	char addr[80];           /* for messages */
};

static void snap_unref(struct metrics *m, struct snap *s)
{
	bool last;

	if (!s)
		return;
	pthread_mutex_lock(&m->mu);
	last = --s->refs == 0;
	pthread_mutex_unlock(&m->mu);
	if (last) {
		free(s->text);
		free(s);
	}
}

static struct snap *snap_get(struct metrics *m)
{
	struct snap *s;

	pthread_mutex_lock(&m->mu);
	s = m->cur;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&m->mu);
	return s;
}

void metrics_publish(struct metrics *m, char *text, size_t len)
{
	struct snap *s, *old;

	if (!m || !text)
		return;
	s = malloc(sizeof *s);
	if (!s) {
		free(text);
		return;
	}
	*s = (struct snap){ .refs = 1, .len = len, .text = text };
	pthread_mutex_lock(&m->mu);
	old = m->cur;
	m->cur = s;
	pthread_mutex_unlock(&m->mu);
	snap_unref(m, old);
}

void metrics_counts(struct metrics *m, struct metrics_counts *ret)
{
	for (size_t i = 0; i < 6; i++)
		ret->answered[i] = __atomic_load_n(&m->answered[i],
						   __ATOMIC_RELAXED);
	ret->timeouts = __atomic_load_n(&m->timeouts, __ATOMIC_RELAXED);
}

static void conn_close(struct metrics *m, size_t i)
{
	struct conn *c = m->conns[i];

	close(c->fd);
	snap_unref(m, c->body);
	free(c);
	m->conns[i] = m->conns[--m->n];
}

static const char *reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	default: return "Service Unavailable";
	}
}

/* Start answering c with code; a 200 carries the published text (its
 * headers only for HEAD). */
static void respond(struct metrics *m, struct conn *c, int code, bool head)
{
	static const char *const msgs[] = {
		[0] = "", [1] = "not an HTTP/1.x request\n",
		[2] = "not found: the metrics are at /metrics\n",
		[3] = "only GET and HEAD are allowed\n",
		[4] = "request head over 8192 bytes\n",
		[5] = "no metrics yet\n",
	};
	size_t k = 0, len;
	int n;

	while (k < 5 && metrics_codes[k] != code)
		k++;
	if (code == 200 && !(c->body = snap_get(m)))
		code = 503, k = 5;
	len = c->body ? c->body->len : strlen(msgs[k]);
	n = snprintf(c->head, sizeof c->head,
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
		     "Content-Length: %zu\r\n%sConnection: close\r\n\r\n%s",
		     code, reason(code), c->body ? PROM_CONTENT_TYPE :
		     "text/plain; charset=utf-8", len,
		     code == 405 ? "Allow: GET, HEAD\r\n" : "",
		     head || c->body ? "" : msgs[k]);
	c->head_len = (size_t)n < sizeof c->head ? (size_t)n :
		      sizeof c->head - 1;
	if (head) {
		snap_unref(m, c->body);
		c->body = NULL;
	}
	c->off = 0;
	c->st = CONN_WRITE;
	c->deadline_us = px_now_mono_us() + m->timeout_us;
	__atomic_add_fetch(&m->answered[k], 1, __ATOMIC_RELAXED);
}

/* The request head in c->in (complete): its method, target and version. */
static void handle(struct metrics *m, struct conn *c)
{
	char *sp1, *sp2, *eol;
	size_t plen;
	bool get, head;

	eol = memchr(c->in, '\n', c->in_len);
	sp1 = memchr(c->in, ' ', (size_t)(eol - c->in));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || sp1 == c->in || sp2 == sp1 + 1 ||
	    (size_t)(eol - sp2) < 9 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (sp2[8] != '0' && sp2[8] != '1') ||
	    !(sp2 + 9 == eol || (sp2 + 10 == eol && sp2[9] == '\r'))) {
		respond(m, c, 400, false);
		return;
	}
	get = sp1 - c->in == 3 && !memcmp(c->in, "GET", 3);
	head = sp1 - c->in == 4 && !memcmp(c->in, "HEAD", 4);
	plen = strcspn(sp1 + 1, "? ");
	if (plen != 8 || memcmp(sp1 + 1, "/metrics", 8) != 0)
		respond(m, c, 404, head);
	else if (!get && !head)
		respond(m, c, 405, false);
	else
		respond(m, c, 200, head);
}

/* The end of the head: an empty line (CRLF or a bare LF, as RFC 9112
 * lets a server accept). */
static bool head_complete(const struct conn *c)
{
	for (size_t i = 1; i < c->in_len; i++)
		if (c->in[i] == '\n' && (c->in[i - 1] == '\n' ||
		    (i >= 2 && c->in[i - 1] == '\r' && c->in[i - 2] == '\n')))
			return true;
	return false;
}

/* Readable: false when the connection is to be closed. */
static bool conn_read(struct metrics *m, struct conn *c)
{
	char sink[4096];
	ssize_t r;

	if (c->st == CONN_DRAIN) {
		r = recv(c->fd, sink, sizeof sink, 0);
		return r > 0 || (r < 0 && (errno == EAGAIN || errno == EINTR));
	}
	r = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
	if (r < 0)
		return errno == EAGAIN || errno == EINTR;
	if (r == 0)
		return false;    /* gone before a whole request */
	c->in_len += (size_t)r;
	if (head_complete(c))
		handle(m, c);
	else if (c->in_len == sizeof c->in)
		respond(m, c, 431, false);
	return true;
}

/* Writable: false when the connection is to be closed. */
static bool conn_write(struct conn *c)
{
	struct iovec iov[2];
	struct msghdr mh = { .msg_iov = iov };
	size_t total = c->head_len + (c->body ? c->body->len : 0);
	ssize_t r;

	if (c->off < c->head_len) {
		iov[mh.msg_iovlen++] = (struct iovec){ c->head + c->off,
						       c->head_len - c->off };
		if (c->body && c->body->len)
			iov[mh.msg_iovlen++] = (struct iovec){
				c->body->text, c->body->len };
	} else {
		size_t o = c->off - c->head_len;

		iov[mh.msg_iovlen++] = (struct iovec){ c->body->text + o,
						       c->body->len - o };
	}
	r = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (r < 0)
		return errno == EAGAIN || errno == EINTR;
	c->off += (size_t)r;
	if (c->off == total) {
		shutdown(c->fd, SHUT_WR);
		c->st = CONN_DRAIN;
	}
	return true;
}

static void accept_some(struct metrics *m)
{
	while (m->n < METRICS_MAX_CONNS) {
		int fd = accept4(m->lfd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				m->accept_pause_until = px_now_mono_us() +
					ACCEPT_PAUSE_MS * 1000;
			return;  /* EAGAIN, or a connection already reset */
		}
		c = malloc(sizeof *c);
		if (!c) {
			close(fd);
			return;
		}
		c->fd = fd;
		c->st = CONN_READ;
		c->in_len = 0;
		c->head_len = 0;
		c->body = NULL;
		c->off = 0;
		c->deadline_us = px_now_mono_us() + m->timeout_us;
		m->conns[m->n++] = c;
	}
}

static void *serve(void *arg)
{
	struct metrics *m = arg;
	struct pollfd pf[METRICS_MAX_CONNS + 2];

	for (;;) {
		uint64_t now = px_now_mono_us(), next = UINT64_MAX;
		size_t np = 0, first;
		bool listening;
		int wait_ms, r;

		/* deadlines first: what passed its own is dropped */
		for (size_t i = 0; i < m->n;) {
			if (now >= m->conns[i]->deadline_us) {
				__atomic_add_fetch(&m->timeouts, 1,
						   __ATOMIC_RELAXED);
				conn_close(m, i);
				continue;
			}
			if (m->conns[i]->deadline_us < next)
				next = m->conns[i]->deadline_us;
			i++;
		}
		pf[np++] = (struct pollfd){ .fd = m->wakefd, .events = POLLIN };
		listening = m->n < METRICS_MAX_CONNS &&
			    now >= m->accept_pause_until;
		if (listening)
			pf[np++] = (struct pollfd){ .fd = m->lfd,
						    .events = POLLIN };
		else if (m->n < METRICS_MAX_CONNS &&
			 m->accept_pause_until < next)
			next = m->accept_pause_until;
		first = np;
		for (size_t i = 0; i < m->n; i++)
			pf[np++] = (struct pollfd){
				.fd = m->conns[i]->fd,
				.events = m->conns[i]->st == CONN_WRITE ?
					  POLLOUT : POLLIN };
		wait_ms = next == UINT64_MAX ? -1 :
			  (int)((next - now + 999) / 1000);
		r = poll(pf, np, wait_ms);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (pf[0].revents)
			break;   /* metrics_close */
		/* connections, from the last: conn_close moves the last
		 * into the slot it frees, which is then already done */
		for (size_t i = m->n; i-- > 0;) {
			struct conn *c = m->conns[i];
			short ev = pf[first + i].revents;
			bool keep = true;

			if (!ev)
				continue;
			if (c->st == CONN_WRITE)
				keep = (ev & (POLLOUT | POLLERR | POLLHUP)) ?
				       conn_write(c) : true;
			else
				keep = conn_read(m, c);
			if (keep && c->st == CONN_WRITE &&
			    (ev & (POLLERR | POLLHUP)) && !(ev & POLLOUT))
				keep = false;
			if (!keep)
				conn_close(m, i);
		}
		if (listening && pf[1].revents)
			accept_some(m);
	}
	while (m->n)
		conn_close(m, m->n - 1);
	return NULL;
}

enum px_err metrics_open(const char *host, int port, int64_t timeout_ms,
			 struct metrics **ret, struct px_error *err)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	struct metrics *m;
	sigset_t all, old;
	socklen_t len;
	int one = 1, e;

	*ret = NULL;
	m = calloc(1, sizeof *m);
	if (!m)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	m->lfd = m->wakefd = -1;
	m->timeout_us = (uint64_t)timeout_ms * 1000;
	pthread_mutex_init(&m->mu, NULL);
	snprintf(m->addr, sizeof m->addr, strchr(host, ':') ? "[%s]:%d" :
		 "%s:%d", host, port);
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		len = sizeof *a4;
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		len = sizeof *a6;
	} else {
		metrics_close(m);
		return px_errorf(err, PX_EINVAL, "metrics_listen '%s': not "
				 "a numeric IPv4 or IPv6 address", host);
	}
	m->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
			SOCK_CLOEXEC, 0);
	if (m->lfd < 0)
		goto out_sys;
	(void)setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ss.ss_family == AF_INET6)
		(void)setsockopt(m->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				 sizeof one);
	if (bind(m->lfd, (struct sockaddr *)&ss, len) != 0 ||
	    listen(m->lfd, METRICS_BACKLOG) != 0)
		goto out_sys;
	m->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->wakefd < 0)
		goto out_sys;
	/* the thread takes no signal: they are the loop's (signalfd) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&m->th, NULL, serve, m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		errno = e;
		goto out_sys;
	}
	m->started = true;
	*ret = m;
	return PX_OK;
out_sys:
	e = errno;
	px_errorf(err, PX_ESYS | e, "metrics_listen '%s': %s", m->addr,
		  strerror(e));
	metrics_close(m);
	return PX_ESYS | e;
}

void metrics_close(struct metrics *m)
{
	uint64_t one = 1;

	if (!m)
		return;
	if (m->started) {
		if (write(m->wakefd, &one, sizeof one) != sizeof one)
			abort(); /* an eventfd write of 1 cannot fail */
		pthread_join(m->th, NULL);
	}
	if (m->lfd >= 0)
		close(m->lfd);
	if (m->wakefd >= 0)
		close(m->wakefd);
	snap_unref(m, m->cur);
	pthread_mutex_destroy(&m->mu);
	free(m);
}
