/*
 * The echo server of epoll_server.c under a libuv loop: the same idle
 * timeouts (re-armed on every read) and per-request deadlines, all held by
 * one timing wheel, and one uv_timer_t that drives the whole wheel.
 *
 *   - before libuv polls (a uv_prepare_t), the driver timer is pointed at
 *     the wheel's next deadline: tw_loop_timeout_ms() counted from
 *     uv_now(), the base libuv counts its own timers from, so it never
 *     fires before the deadline; with nothing pending it is stopped;
 *   - when it fires, the wheel is advanced to uv_hrtime();
 *   - read callbacks re-arm timers from uv_hrtime() (CLOCK_MONOTONIC, the
 *     wheel's clock), not from uv_now(): that is the loop's cached time in
 *     whole ms, up to a ms and a whole iteration stale, which would close
 *     connections early.
 *
 *   uv_server [-p port] [-i idle_ms] [-r request_ms] [-t seconds]
 *
 * Options, output and exit as epoll_server.c.
 *
 * Build: cc -Wall -Wextra -Werror uv_server.c \
 *            $(pkg-config --cflags --libs timewheel-loop libuv)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <timewheel/loop.h>
#include <unistd.h>
#include <uv.h>

struct server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_timer_t driver;  /* the one libuv timer: the wheel's next deadline */
    uv_prepare_t aim;   /* points the driver before each poll */
    uv_signal_t sig[2]; /* SIGINT, SIGTERM */
    struct tw_wheel *w;
    uint64_t idle, request;
    struct tw_timer stop;
    struct conn *conns; /* every open connection, to close them at exit */
    char buf[65536];    /* reads land here; each is echoed before the next */
    unsigned long accepted, by_peer, by_idle, by_request;
    uint64_t late; /* the most a timer ran after its deadline */
};

struct conn {
    uv_tcp_t tcp;
    struct server *srv;
    struct conn *prev, *next;
    struct tw_timer idle;    /* re-armed on every read */
    struct tw_timer request; /* pending while a request is incomplete */
};

static void free_conn(uv_handle_t *h)
{
    free(h->data);
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
    uv_close((uv_handle_t *)&c->tcp, free_conn);
}

/* How late the loop ran t: tick rounding plus the loop's own delays. */
static void note_lateness(struct server *s, const struct tw_timer *t)
{
    uint64_t late = tw_now(s->w) - tw_timer_deadline(t);

    if (late > s->late)
        s->late = late;
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
    static char reply[] = "408 request timeout\n";
    struct conn *c = TW_CONTAINER_OF(t, struct conn, request);
    uv_buf_t b = uv_buf_init(reply, sizeof(reply) - 1);

    (void)arg;
    note_lateness(c->srv, t);
    uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    c->srv->by_request++;
    conn_close(c);
}

static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *b)
{
    struct conn *c = h->data;

    (void)want;
    *b = uv_buf_init(c->srv->buf, sizeof(c->srv->buf));
}

/* Echo, re-arm the idle timer, start or end the request's deadline: as
 * on_data() of epoll_server.c, counted from a fresh uv_hrtime(). */
static void on_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *b)
{
    struct conn *c = stream->data;
    struct server *s = c->srv;
    uint64_t now = uv_hrtime();
    uv_buf_t echo = uv_buf_init(b->base, (unsigned)(n > 0 ? n : 0));
    const char *end;

    if (n == 0)
        return; /* nothing read (EAGAIN) */
    if (n < 0 || uv_try_write(stream, &echo, 1) != n) {
        s->by_peer++;
        conn_close(c);
        return;
    }
    end = memrchr(b->base, '\n', (size_t)n);
    tw_loop_rearm_after(s->w, &c->idle, now, s->idle);
    if (end)
        tw_cancel(s->w, &c->request);
    if (end != b->base + n - 1 && !tw_timer_pending(&c->request))
        tw_loop_schedule_after(s->w, &c->request, now, s->request);
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct server *s = listener->data;
    struct conn *c;

    if (status < 0 || !(c = calloc(1, sizeof(*c))))
        return;
    c->srv = s;
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
        uv_close((uv_handle_t *)&c->tcp, free_conn);
        return;
    }
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    tw_timer_init(&c->idle, on_idle, NULL);
    tw_timer_init(&c->request, on_request_deadline, NULL);
    tw_loop_schedule_after(s->w, &c->idle, uv_hrtime(), s->idle);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    s->accepted++;
}

/* ---- the one timer that drives the wheel --------------------------------
 */

static void on_driver(uv_timer_t *t)
{
    struct server *s = t->data;

    tw_advance(s->w, uv_hrtime());
}

/* Before libuv polls: the driver at the wheel's next deadline. libuv fires
 * a timer once its cached time reaches uv_now() + timeout, so the timeout
 * is counted from uv_now() too, rounded up: never before the deadline. */
static void on_aim(uv_prepare_t *p)
{
    struct server *s = p->data;
    int ms = tw_loop_timeout_ms(s->w, uv_now(s->loop) * TW_NSEC_PER_MSEC);

    if (ms < 0)
        uv_timer_stop(&s->driver);
    else
        uv_timer_start(&s->driver, on_driver, (uint64_t)ms, 0);
}

/* ---- start and stop -------------------------------------------------------
 */

static void close_handle(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/* Close every connection and handle: uv_run() then returns. */
static void server_stop(struct server *s)
{
    while (s->conns)
        conn_close(s->conns);
    tw_cancel(s->w, &s->stop);
    close_handle((uv_handle_t *)&s->listener);
    close_handle((uv_handle_t *)&s->driver);
    close_handle((uv_handle_t *)&s->aim);
    close_handle((uv_handle_t *)&s->sig[0]);
    close_handle((uv_handle_t *)&s->sig[1]);
}

static void on_stop(struct tw_timer *t, void *arg)
{
    (void)t;
    server_stop(arg);
}

static void on_signal(uv_signal_t *h, int sig)
{
    (void)sig;
    server_stop(h->data);
}

static void listen_on(struct server *s, int port)
{
    struct sockaddr_storage a;
    struct sockaddr_in in;
    int len = sizeof(a);

    uv_ip4_addr("127.0.0.1", port, &in);
    uv_tcp_init(s->loop, &s->listener);
    s->listener.data = s;
    if (uv_tcp_bind(&s->listener, (struct sockaddr *)&in, 0) < 0 ||
        uv_listen((uv_stream_t *)&s->listener, 4096, on_connection) < 0 ||
        uv_tcp_getsockname(&s->listener, (struct sockaddr *)&a, &len) < 0) {
        fprintf(stderr, "uv_server: cannot listen on 127.0.0.1:%d\n", port);
        exit(1);
    }
    printf("listening on 127.0.0.1:%d\n",
           ntohs(((struct sockaddr_in *)&a)->sin_port));
    fflush(stdout);
}

/* The wheel starts at CLOCK_MONOTONIC, the clock of uv_hrtime(). */
static void server_init(struct server *s, int port, long lifetime_s)
{
    struct tw_config cfg;
    int err;

    s->loop = uv_default_loop();
    tw_config_init(&cfg, TW_HIER);
    if (tw_loop_config(&cfg, CLOCK_MONOTONIC) < 0 ||
        !(s->w = tw_create(&cfg, &err))) {
        fprintf(stderr, "uv_server: no wheel\n");
        exit(1);
    }
    listen_on(s, port);
    uv_timer_init(s->loop, &s->driver);
    uv_prepare_init(s->loop, &s->aim);
    s->driver.data = s->aim.data = s;
    uv_prepare_start(&s->aim, on_aim);
    for (int i = 0; i < 2; i++) {
        uv_signal_init(s->loop, &s->sig[i]);
        s->sig[i].data = s;
        uv_signal_start(&s->sig[i], on_signal, i ? SIGTERM : SIGINT);
    }
    tw_timer_init(&s->stop, on_stop, s);
    if (lifetime_s > 0)
        tw_loop_schedule_after(s->w, &s->stop, uv_hrtime(),
                               tw_sec((uint64_t)lifetime_s));
}

static struct server srv = {.idle = 2 * TW_NSEC_PER_SEC,
                            .request = TW_NSEC_PER_SEC};

int main(int argc, char **argv)
{
    struct rlimit rl;
    long lifetime = 0;
    int port = 0, opt;

    while ((opt = getopt(argc, argv, "p:i:r:t:")) != -1) {
        if (opt == 'p')
            port = atoi(optarg);
        else if (opt == 'i')
            srv.idle = tw_msec(strtoull(optarg, NULL, 10));
        else if (opt == 'r')
            srv.request = tw_msec(strtoull(optarg, NULL, 10));
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
    server_init(&srv, port, lifetime);
    uv_run(srv.loop, UV_RUN_DEFAULT);
    tw_destroy(srv.w);
    uv_loop_close(srv.loop);
    fprintf(stderr,
            "uv_server: %lu accepted; closed: %lu idle, %lu request "
            "timeout, %lu by the peer; timers ran up to %.1f ms after "
            "their deadline\n",
            srv.accepted, srv.by_idle, srv.by_request, srv.by_peer,
            srv.late / 1e6);
    return 0;
}
