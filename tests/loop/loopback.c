/*
 * The loopback test: a real server process (one of
 * docs/examples/) on 127.0.0.1 and a client with 2,000 connections.
 *
 *   loopback SERVER_BINARY
 *
 * The client starts the server with a 2 s idle timeout and a 1 s request
 * deadline, reads its port from its first line, then opens:
 *   - 1,000 busy connections: a byte ("\n", a complete request) and then
 *     more at random gaps of 0.3-1.5 s, for BUSY_FOR;
 *   - 1,000 silent ones: a byte, 0-2 more at such gaps, then none;
 *   - 20 probes: "GET" and no end of line, an incomplete request.
 * All connect first; each first byte goes at a random time in the first
 * second after that.
 * Pass: every silent connection is closed by the server no earlier than 2 s
 * after its last byte and no later than 2 s + 50 ms; no busy connection is
 * ever closed; every probe gets "408" and is closed no earlier than 1 s
 * after its byte and no later than 1 s + 50 ms; all within LIMIT. Then the
 * server is stopped (SIGTERM) and must exit 0.
 *
 * Times are this process's CLOCK_MONOTONIC: a byte's time is read just
 * before it is written (so it is never later than the server's reading of
 * it), a close's time right after epoll_wait() returns with it (so never
 * earlier than the close). The lower bounds are therefore exact; the upper
 * bound includes both processes' scheduling delays. So that other work on
 * the machine does not decide it, the client runs itself and the server at
 * real-time priority (SCHED_FIFO 1, inherited by the server) when it may:
 * both sleep nearly all the time, and the alarm and the server's -t bound
 * them. When it may not, it says so and the bound includes the machine's
 * load. Either way it prints the server's own lateness and the client's, so
 * that a failure on a loaded machine can be told apart from a late server.
 * The client paces its sends with a timing wheel too, but checks nothing
 * through it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <timewheel/loop.h>
#include <unistd.h>

#define MS UINT64_C(1000000)
#define BUSY 1000
#define SILENT 1000
#define PROBES 20
#define CONNS (BUSY + SILENT + PROBES)
#define IDLE (2000 * MS)
#define REQUEST (1000 * MS)
#define SLACK (50 * MS)
#define GAP_MIN (300 * MS)
#define GAP_MAX (1500 * MS)
#define BUSY_FOR (6000 * MS) /* busy connections send this long */
#define LIMIT (25000 * MS)   /* the client gives up after this */
#define SEED UINT64_C(20261123)

enum kind { KIND_BUSY, KIND_SILENT, KIND_PROBE };

struct cconn {
    int fd;
    enum kind kind;
    int extra; /* silent: sends still to come after the first */
    struct tw_timer send;
    uint64_t last_send; /* time read just before the last byte was written */
    uint64_t max_gap;   /* longest gap between two bytes, as sent */
    uint64_t closed_at; /* 0: open */
    int got_408;
};

struct client {
    struct tw_wheel *w;
    int ep;
    uint64_t start, now, rng;
    uint64_t max_late; /* latest send after its timer's deadline */
    int open_silent, open_probes;
    struct cconn c[CONNS];
};

static pid_t server_pid;

static uint64_t clock_ns(void)
{
    uint64_t t = 0;

    tw_loop_clock(CLOCK_MONOTONIC, &t);
    return t;
}

static uint64_t gap(struct client *cl)
{
    cl->rng ^= cl->rng << 13;
    cl->rng ^= cl->rng >> 7;
    cl->rng ^= cl->rng << 17;
    return GAP_MIN + cl->rng % (GAP_MAX - GAP_MIN + 1);
}

static void send_byte(struct client *cl, struct cconn *c)
{
    const char *msg = c->kind == KIND_PROBE ? "GET" : "\n";
    uint64_t at = clock_ns();

    if (c->last_send && at - c->last_send > c->max_gap)
        c->max_gap = at - c->last_send;
    c->last_send = at;
    if (write(c->fd, msg, strlen(msg)) != (ssize_t)strlen(msg)) {
        fprintf(stderr, "loopback: write: %s\n", strerror(errno));
        exit(1);
    }
    if ((c->kind == KIND_BUSY && at - cl->start < BUSY_FOR) ||
        (c->kind == KIND_SILENT && c->extra-- > 0))
        tw_loop_schedule_after(cl->w, &c->send, at, gap(cl));
}

static void on_send(struct tw_timer *t, void *arg)
{
    struct client *cl = arg;
    struct cconn *c = TW_CONTAINER_OF(t, struct cconn, send);
    uint64_t late = clock_ns() - tw_timer_deadline(t);

    if (late > cl->max_late)
        cl->max_late = late;
    send_byte(cl, c);
}

static void on_closed(struct client *cl, struct cconn *c)
{
    c->closed_at = cl->now;
    tw_cancel(cl->w, &c->send);
    close(c->fd);
    c->fd = -1;
    if (c->kind == KIND_SILENT)
        cl->open_silent--;
    else if (c->kind == KIND_PROBE)
        cl->open_probes--;
}

static void on_readable(struct client *cl, struct cconn *c)
{
    char buf[512];

    for (;;) {
        ssize_t n = read(c->fd, buf, sizeof(buf) - 1);

        if (n > 0) {
            buf[n] = 0;
            if (strstr(buf, "408"))
                c->got_408 = 1;
            continue;
        }
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0 && errno == EINTR)
            continue;
        on_closed(cl, c); /* EOF or reset: the server closed it */
        return;
    }
}

static int connect_one(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        fprintf(stderr, "loopback: connect: %s\n", strerror(errno));
        exit(1);
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

static void open_all(struct client *cl, int port)
{
    for (int i = 0; i < CONNS; i++) {
        struct cconn *c = &cl->c[i];
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};

        /* Busy and silent alternate in the order of connecting. */
        if (i < PROBES)
            c->kind = KIND_PROBE;
        else
            c->kind = (i - PROBES) % 2 ? KIND_SILENT : KIND_BUSY;
        c->extra = c->kind == KIND_SILENT ? (int)(gap(cl) % 3) : 0;
        c->fd = connect_one(port);
        tw_timer_init(&c->send, on_send, cl);
        if (epoll_ctl(cl->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
            perror("loopback: epoll_ctl");
            exit(1);
        }
        cl->open_silent += c->kind == KIND_SILENT;
        cl->open_probes += c->kind == KIND_PROBE;
    }
}

/* Every connection's first byte at a random time in the first second, so
 * that neither process starts with a burst of 2,000 at once. */
static void schedule_first_bytes(struct client *cl)
{
    for (int i = 0; i < CONNS; i++)
        tw_loop_schedule_after(cl->w, &cl->c[i].send, cl->start,
                               gap(cl) % (1000 * MS));
}

/* The client's own loop: the recipe of docs/embedding.md. */
static int run_client(struct client *cl)
{
    struct epoll_event ev[512];

    for (;;) {
        int ms = tw_loop_timeout_ms(cl->w, cl->now);
        int n = epoll_wait(cl->ep, ev, 512, ms < 0 || ms > 100 ? 100 : ms);

        if (n < 0 && errno != EINTR)
            return -1;
        tw_loop_clock(CLOCK_MONOTONIC, &cl->now);
        for (int i = 0; i < n; i++)
            on_readable(cl, ev[i].data.ptr);
        tw_advance(cl->w, cl->now);
        if (cl->now - cl->start >= BUSY_FOR && cl->open_silent == 0 &&
            cl->open_probes == 0)
            return 0;
        if (cl->now - cl->start >= LIMIT)
            return -1;
    }
}

/* ---- the verdict ----------------------------------------------------------
 */

struct range {
    uint64_t lo, hi;
    int outside;
};

static void range_add(struct range *r, uint64_t v, uint64_t want, int ok)
{
    if (v < r->lo)
        r->lo = v;
    if (v > r->hi)
        r->hi = v;
    r->outside += !ok;
    (void)want;
}

static int verdict(const struct client *cl, const char *server)
{
    struct range silent = {UINT64_MAX, 0, 0}, probe = {UINT64_MAX, 0, 0};
    int busy_closed = 0, no_408 = 0;
    uint64_t busy_gap = 0;

    for (int i = 0; i < CONNS; i++) {
        const struct cconn *c = &cl->c[i];
        uint64_t after = c->closed_at - c->last_send;

        if (c->kind == KIND_BUSY) {
            busy_closed += c->closed_at != 0;
            if (c->max_gap > busy_gap)
                busy_gap = c->max_gap;
        } else if (c->kind == KIND_SILENT) {
            range_add(&silent, after, IDLE,
                      after >= IDLE && after <= IDLE + SLACK);
        } else {
            range_add(&probe, after, REQUEST,
                      after >= REQUEST && after <= REQUEST + SLACK);
            no_408 += !c->got_408;
        }
    }
    printf("loopback %s: %d connections (%d busy, %d silent, %d probes) "
           "in %.2f s\n",
           server, CONNS, BUSY, SILENT, PROBES,
           (double)(cl->now - cl->start) / 1e9);
    printf("  silent: closed %.1f to %.1f ms after their last byte "
           "(bound [2000, 2050]): %d outside\n",
           silent.lo / 1e6, silent.hi / 1e6, silent.outside);
    printf("  probes: 408 and closed %.1f to %.1f ms after the request's "
           "byte (bound [1000, 1050]): %d outside, %d without 408\n",
           probe.lo / 1e6, probe.hi / 1e6, probe.outside, no_408);
    printf("  busy: %d closed; longest gap the client left %.1f ms; the "
           "client's sends were up to %.1f ms late\n",
           busy_closed, busy_gap / 1e6, cl->max_late / 1e6);
    return silent.outside || probe.outside || no_408 || busy_closed;
}

/* ---- the server process ---------------------------------------------------
 */

static void on_alarm(int sig)
{
    (void)sig;
    if (server_pid > 0)
        kill(server_pid, SIGKILL);
    _exit(3);
}

/* Start the server, return its port (from "listening on 127.0.0.1:PORT"). */
static int start_server(const char *path)
{
    char line[128] = "";
    char *args[] = {(char *)path, "-i", "2000", "-r", "1000", "-t", "40", NULL};
    struct pollfd pfd;
    int p[2], port = 0;
    ssize_t n;

    if (pipe(p) < 0 || (server_pid = fork()) < 0)
        return -1;
    if (server_pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execv(path, args);
        _exit(127);
    }
    close(p[1]);
    pfd = (struct pollfd){.fd = p[0], .events = POLLIN};
    if (poll(&pfd, 1, 10000) == 1 &&
        (n = read(p[0], line, sizeof(line) - 1)) > 0)
        sscanf(line, "listening on 127.0.0.1:%d", &port);
    close(p[0]);
    return port > 0 ? port : -1;
}

/* SIGTERM, then wait up to 5 s for a clean exit. */
static int stop_server(void)
{
    int status = 0;

    kill(server_pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
        if (waitpid(server_pid, &status, WNOHANG) == server_pid)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
        usleep(10000);
    }
    kill(server_pid, SIGKILL);
    waitpid(server_pid, &status, 0);
    return -1;
}

/* Both processes hold one descriptor per connection; the server inherits
 * this limit. */
static int raise_nofile(rlim_t want)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -1;
    if (rl.rlim_cur >= want)
        return 0;
    if (rl.rlim_max < want) {
        fprintf(stderr,
                "loopback: needs %lu descriptors, the hard limit "
                "is %lu\n",
                (unsigned long)want, (unsigned long)rl.rlim_max);
        return -1;
    }
    rl.rlim_cur = want;
    return setrlimit(RLIMIT_NOFILE, &rl);
}

/* Real-time priority when allowed (see the top of the file). */
static const char *priority(void)
{
    struct sched_param sp = {.sched_priority = 1};

    if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0)
        return "SCHED_FIFO 1";
    return "normal priority (SCHED_FIFO refused: the bound includes the "
           "machine's load)";
}

static struct client cl;

int main(int argc, char **argv)
{
    struct tw_config cfg;
    const char *name;
    int port, rc;

    if (argc != 2)
        return fprintf(stderr, "usage: %s SERVER_BINARY\n", argv[0]), 2;
    name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("loopback %s: at %s\n", name, priority());
    if (raise_nofile(CONNS + 64) < 0)
        return 1;
    signal(SIGALRM, on_alarm);
    alarm(30); /* the whole case, server start and stop included */
    if ((port = start_server(argv[1])) < 0) {
        fprintf(stderr, "loopback: %s did not start\n", argv[1]);
        return 1;
    }
    tw_config_init(&cfg, TW_HIER);
    tw_loop_config(&cfg, CLOCK_MONOTONIC);
    cl.w = tw_create(&cfg, NULL);
    cl.ep = epoll_create1(EPOLL_CLOEXEC);
    cl.rng = SEED;
    if (!cl.w || cl.ep < 0)
        return 1;
    open_all(&cl, port);
    cl.start = cl.now = clock_ns();
    schedule_first_bytes(&cl);
    rc = run_client(&cl);
    if (rc < 0)
        fprintf(stderr, "loopback: the client did not finish in time\n");
    rc |= verdict(&cl, name);
    for (int i = 0; i < CONNS; i++)
        if (cl.c[i].fd >= 0)
            close(cl.c[i].fd);
    if (stop_server() < 0) {
        fprintf(stderr, "loopback: %s did not exit cleanly\n", name);
        rc = 1;
    }
    tw_destroy(cl.w);
    printf("loopback %s: %s\n", name, rc ? "FAILED" : "passed");
    return rc ? 1 : 0;
}
