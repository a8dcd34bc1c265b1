/*
 * An echo server on 127.0.0.1 driven by epoll and one timing wheel, as in
 * docs/embedding.md:
 *
 *   - every connection has an idle timeout, re-armed on every read;
 *   - every request (a line, ended by '\n') has a deadline counted from its
 *     first byte: a request still incomplete then is answered
 *     "408 request timeout" and the connection closed.
 *
 * The loop reads CLOCK_MONOTONIC once per wake-up, handles the I/O with
 * timers counted from that reading, then advances the wheel, then sleeps
 * for tw_loop_timeout_ms().
 *
 *   epoll_server [-p port] [-i idle_ms] [-r request_ms] [-t seconds]
 *
 * Port 0 (the default) picks a free port; the server prints
 * "listening on 127.0.0.1:PORT" on stdout. -t stops it after that many
 * seconds (a timer on the same wheel); SIGINT and SIGTERM stop it too. On
 * exit it prints what it did on stderr.
 *
 * Build: cc -Wall -Wextra -Werror epoll_server.c \
 *            $(pkg-config --cflags --libs timewheel-loop)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <timewheel/loop.h>
#include <unistd.h>

#define MAX_EVENTS 256

struct server {
    int ep, lfd;
    struct tw_wheel *w;
    uint64_t now; /* the loop's clock reading of this wake-up */
    uint64_t idle, request;
    struct tw_timer stop;
    struct conn *conns; /* every open connection, to close them at exit */
    unsigned long accepted, by_peer, by_idle, by_request;
    uint64_t late; /* the most a timer ran after its deadline */
};

struct conn {
    int fd;
    struct server *srv;
    struct conn *prev, *next;
    struct tw_timer idle;    /* re-armed on every read */
    struct tw_timer request; /* pending while a request is incomplete */
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static void conn_close(struct conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        c->srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    tw_cancel(c->srv->w, &c->idle);
    tw_cancel(c->srv->w, &c->request);
    close(c->fd); /* also takes it out of the epoll set */
    free(c);
}

/* How late the loop ran t: tick rounding plus the loop's own delays. */
static void note_lateness(struct server *s, const struct tw_timer *t)
{
    if (s->now - tw_timer_deadline(t) > s->late)
        s->late = s->now - tw_timer_deadline(t);
}

static void on_idle(struct tw_timer *t, void *arg)
{
    struct conn *c = TW_CONTAINER_OF(t, struct conn, idle);

    (void)arg;
    note_lateness(c->srv, t);
    c->srv->by_idle++;
    conn_close(c);
}

static void on_request_deadline(struct tw_timer *t, void *arg)
{
    static const char reply[] = "408 request timeout\n";
    struct conn *c = TW_CONTAINER_OF(t, struct conn, request);

    (void)arg;
    note_lateness(c->srv, t);
    (void)!write(c->fd, reply, sizeof(reply) - 1);
    c->srv->by_request++;
    conn_close(c);
}

/* Echo what came in. Each '\n' completes a request; bytes after the last
 * one start (or continue) a request whose deadline runs from the first of
 * them. Returns -1 when the connection is to be closed. */
static int on_data(struct conn *c, const char *buf, size_t n)
{
    struct server *s = c->srv;
    const char *end = memrchr(buf, '\n', n);

    if (write(c->fd, buf, n) != (ssize_t)n)
        return -1; /* a client that does not read its replies */
    tw_loop_rearm_after(s->w, &c->idle, s->now, s->idle);
    if (end)
        tw_cancel(s->w, &c->request);
    if (end != buf + n - 1 && !tw_timer_pending(&c->request))
        tw_loop_schedule_after(s->w, &c->request, s->now, s->request);
    return 0;
}

static void on_readable(struct conn *c)
{
    char buf[4096];
    ssize_t n = read(c->fd, buf, sizeof(buf));

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0 || on_data(c, buf, (size_t)n) < 0) {
        c->srv->by_peer++;
        conn_close(c);
    }
}

static void accept_all(struct server *s)
{
    for (;;) {
        struct epoll_event ev = {.events = EPOLLIN};
        struct conn *c;
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                perror("epoll_server: accept");
            return;
        }
        c = calloc(1, sizeof(*c));
        ev.data.ptr = c;
        if (!c || epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            free(c);
            continue;
        }
        c->fd = fd;
        c->srv = s;
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        tw_timer_init(&c->idle, on_idle, NULL);
        tw_timer_init(&c->request, on_request_deadline, NULL);
        tw_loop_schedule_after(s->w, &c->idle, s->now, s->idle);
        s->accepted++;
    }
}

static int listen_on(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(fd, SOMAXCONN) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        perror("epoll_server: listen");
        exit(1);
    }
    printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
    fflush(stdout);
    return fd;
}

static void on_stop(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
    stopping = 1;
}

/* The wheel starts at the clock; a -t lifetime is one more timer on it. */
static void server_init(struct server *s, int port, long lifetime_s)
{
    struct tw_config cfg;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    int err;

    tw_config_init(&cfg, TW_HIER);
    if (tw_loop_config(&cfg, CLOCK_MONOTONIC) < 0 ||
        !(s->w = tw_create(&cfg, &err))) {
        fprintf(stderr, "epoll_server: no wheel\n");
        exit(1);
    }
    s->now = tw_now(s->w);
    s->lfd = listen_on(port);
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    if (s->ep < 0 || epoll_ctl(s->ep, EPOLL_CTL_ADD, s->lfd, &ev) < 0) {
        perror("epoll_server: epoll");
        exit(1);
    }
    tw_timer_init(&s->stop, on_stop, NULL);
    if (lifetime_s > 0)
        tw_loop_schedule_after(s->w, &s->stop, s->now,
                               tw_sec((uint64_t)lifetime_s));
}

/* The loop of docs/embedding.md. */
static void run(struct server *s)
{
    struct epoll_event ev[MAX_EVENTS];

    while (!stopping) {
        int n =
            epoll_wait(s->ep, ev, MAX_EVENTS, tw_loop_timeout_ms(s->w, s->now));

        if (n < 0 && errno != EINTR) {
            perror("epoll_server: epoll_wait");
            return;
        }
        tw_loop_clock(CLOCK_MONOTONIC, &s->now);
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr)
                on_readable(ev[i].data.ptr);
            else
                accept_all(s);
        }
        tw_advance(s->w, s->now);
    }
}

int main(int argc, char **argv)
{
    struct server s = {.idle = 2 * TW_NSEC_PER_SEC, .request = TW_NSEC_PER_SEC};
    struct sigaction sa = {.sa_handler = on_signal};
    struct rlimit rl;
    long lifetime = 0;
    int port = 0, opt;

    while ((opt = getopt(argc, argv, "p:i:r:t:")) != -1) {
        if (opt == 'p')
            port = atoi(optarg);
        else if (opt == 'i')
            s.idle = tw_msec(strtoull(optarg, NULL, 10));
        else if (opt == 'r')
            s.request = tw_msec(strtoull(optarg, NULL, 10));
        else if (opt == 't')
            lifetime = atol(optarg);
        else
            return fprintf(stderr,
                           "usage: %s [-p port] [-i idle_ms] "
                           "[-r request_ms] [-t seconds]\n",
                           argv[0]),
                   2;
    }
    /* One descriptor per connection: take all the kernel allows. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    server_init(&s, port, lifetime);
    run(&s);
    while (s.conns)
        conn_close(s.conns);
    tw_cancel(s.w, &s.stop);
    tw_destroy(s.w);
    close(s.ep);
    close(s.lfd);
    fprintf(stderr,
            "epoll_server: %lu accepted; closed: %lu idle, %lu request "
            "timeout, %lu by the peer; timers ran up to %.1f ms after "
            "their deadline\n",
            s.accepted, s.by_idle, s.by_request, s.by_peer, s.late / 1e6);
    return 0;
}
