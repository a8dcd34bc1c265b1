/*
 * mqttload: MQTT v5 clients on 127.0.0.1 that measure when a Mosquitto
 * broker's timers act (keepalive disconnects, delayed wills, session
 * expiries) and what the broker spends. It starts the broker itself on
 * 127.0.0.1 only, drives every client from one epoll loop, reads the
 * broker's CPU time and peak RSS from /proc, stops the broker and exits,
 * bounded by --timeout. docs/brokers.md has the scenarios and the figures.
 *
 *   mqttload --broker PATH SCENARIO [options]
 *
 * Scenarios (each client's events are timed on CLOCK_MONOTONIC):
 *   keepalive  clients connect with keepalive K and go silent; lateness of
 *              the broker's close = close - CONNECT sent - 1.5 K
 *   order      the issue's case, shortened by --scale: client A closes at 0
 *              with a 30 s will delay, client B at 28 s with 5 s; lateness
 *              of each will = arrival - (close + delay), and their order
 *   stream     a client closes every 4 s with a 10 s will delay (x --scale)
 *   expiry     clients close with session expiry E (spread over --spread
 *              seconds) and a will delay E + 1000 s, so the will goes out
 *              when the session expires; lateness = arrival - (close + E)
 *   session-end  clients with session expiry 0 close with a 5 s will delay:
 *              MQTT 5 sends the will when the session ends, at the close
 *              (the patched broker with will_at_session_end true)
 *   restore    two sessions with expiry 4 s close; the broker (with
 *              persistence) is restarted 1 s later; one session must still
 *              be there 3.3 s after the close, the other gone 5.3 s after
 *              (the saved expiry is whole seconds: up to 1 s late)
 *   mixed      a third of each: silent with keepalive 2 s, a will delay of
 *              1 to 5 s, a session expiry of 2 to 6 s (the benchmark);
 *              2,000 connects a second, each client up 1 to 3 s
 *   churn      connect, DISCONNECT; session expiry --expiry (random: one
 *              hour to a day; the broker's CPU is the figure)
 *
 * Output: one line per measured kind, key=value, then the broker's line.
 * With --max-late-ms X the exit status is 1 if an event was early, later
 * than X ms, out of due order, or missing; 2 on a usage or system error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ULL
#define MS 1000000ULL
#define MAX_INFLIGHT                                                           \
    64 /* connects waiting for CONNACK: the broker's                           \
        * listen backlog is 100 */
#define PER_LISTENER                                                           \
    20000 /* clients per listening port: the ephemeral                         \
           * range of 127.0.0.1 holds about 28,000 */
#define MAX_LISTENERS 8
#define WATCH_BUF (1 << 20)

enum kind { K_NONE, K_KEEPALIVE, K_WILL, K_EXPIRY, K_KINDS };
enum plan { P_SILENT, P_CLOSE, P_DISCONNECT };
enum state { S_WAIT, S_CONNECTING, S_CONNACK, S_UP, S_DONE };

static const char *kind_name[K_KINDS] = {"none", "keepalive", "will", "expiry"};

struct client {
    int fd;
    uint8_t state, plan, kind;
    uint16_t keepalive;
    uint32_t will_delay; /* s; 0: no will */
    uint32_t expiry;     /* s */
    uint32_t due_s;      /* s from our close to the will, by MQTT */
    uint64_t t_start;    /* when to connect, relative ns */
    uint64_t t_close;    /* when to close (P_CLOSE, P_DISCONNECT) */
    uint64_t sent;       /* CONNECT written */
    uint64_t closed;     /* we closed, or the broker did */
    uint64_t event;      /* the measured event: broker's close, will */
    uint64_t due;        /* when the event is due by MQTT */
    long seq;            /* order of arrival of the will */
};

struct opts {
    const char *broker, *scenario, *conf_extra, *dir;
    long n, keepalive, expiry;
    double scale, spread, timeout, max_late_ms;
};

static struct client *cl;
static long ncl;
static int ep, watch_fd = -1, nlisten = 1;
static uint16_t ports[MAX_LISTENERS];
static uint64_t t0;
static uint8_t *wbuf;
static size_t wlen;
static long inflight, finished, arrivals;

/* ---- time and randomness ------------------------------------------------ */

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec - t0;
}

static uint64_t rng = 0x9E3779B97F4A7C15ULL; /* fixed seed: same runs */

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Uniform in [lo, hi]. */
static uint32_t rnd_range(uint32_t lo, uint32_t hi)
{
    return lo + (uint32_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* ---- MQTT v5 packets ----------------------------------------------------- */

static size_t put_varint(uint8_t *p, uint32_t v)
{
    size_t n = 0;

    do {
        p[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            p[n] |= 0x80;
        n++;
    } while (v);
    return n;
}

static size_t put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return 2;
}

static size_t put_u32(uint8_t *p, uint32_t v)
{
    put_u16(p, (uint16_t)(v >> 16));
    put_u16(p + 2, (uint16_t)v);
    return 4;
}

static size_t put_str(uint8_t *p, const char *s)
{
    size_t n = strlen(s);

    put_u16(p, (uint16_t)n);
    memcpy(p + 2, s, n);
    return n + 2;
}

/* A packet of type byte head around body[0..len): fixed header prepended. */
static size_t frame(uint8_t *out, uint8_t head, const uint8_t *body, size_t len)
{
    size_t n = 1;

    out[0] = head;
    n += put_varint(out + 1, (uint32_t)len);
    memcpy(out + n, body, len);
    return n + len;
}

/* CONNECT for client i: clean start, its keepalive and session expiry, and
 * a will on tw/will/<i> delayed by will_delay when it has one. */
static size_t connect_packet(long i, uint8_t *out)
{
    struct client *c = &cl[i];
    uint8_t b[256], *p = b;
    char id[32], topic[32];

    snprintf(id, sizeof id, "tw-%ld", i);
    snprintf(topic, sizeof topic, "tw/will/%ld", i);
    p += put_str(p, "MQTT");
    *p++ = 5;
    *p++ = (uint8_t)(0x02 | (c->will_delay ? 0x04 : 0));
    p += put_u16(p, c->keepalive);
    *p++ = 5; /* properties: session expiry interval */
    *p++ = 0x11;
    p += put_u32(p, c->expiry);
    p += put_str(p, id);
    if (c->will_delay) {
        *p++ = 5; /* will properties: will delay interval */
        *p++ = 0x18;
        p += put_u32(p, c->will_delay);
        p += put_str(p, topic);
        p += put_str(p, "w");
    }
    return frame(out, 0x10, b, (size_t)(p - b));
}

/* ---- sockets ------------------------------------------------------------- */

static int tcp_socket(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;

    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int connect_to(int fd, uint16_t port)
{
    struct sockaddr_in a;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 ||
        errno == EINPROGRESS)
        return 0;
    return -errno;
}

/* A free port on 127.0.0.1, as the kernel picks one. */
static uint16_t free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    uint16_t port = 0;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int ep_add(int fd, uint32_t events, uint64_t tag)
{
    struct epoll_event e = {.events = events, .data.u64 = tag};

    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

static void ep_mod(int fd, uint32_t events, uint64_t tag)
{
    struct epoll_event e = {.events = events, .data.u64 = tag};

    epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
}

/* ---- closes to come: a binary min-heap of (time, client) ----------------- */

struct due {
    uint64_t t;
    long i;
};

static struct due *heap;
static long nheap;

static void heap_push(uint64_t t, long i)
{
    long k = nheap++;

    while (k && heap[(k - 1) / 2].t > t) {
        heap[k] = heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    heap[k] = (struct due){t, i};
}

static struct due heap_pop(void)
{
    struct due top = heap[0], last = heap[--nheap];
    long k = 0;

    for (;;) {
        long c = 2 * k + 1;

        if (c >= nheap)
            break;
        if (c + 1 < nheap && heap[c + 1].t < heap[c].t)
            c++;
        if (heap[c].t >= last.t)
            break;
        heap[k] = heap[c];
        k = c;
    }
    if (nheap)
        heap[k] = last;
    return top;
}

/* ---- the broker ---------------------------------------------------------- */

static pid_t broker_pid;

static int write_conf(const struct opts *o, char *path, size_t len)
{
    FILE *f;

    snprintf(path, len, "%s/mosquitto.conf", o->dir);
    f = fopen(path, "w");
    if (!f)
        return -1;
    for (int i = 0; i < nlisten; i++)
        fprintf(f, "listener %u 127.0.0.1\n", ports[i]);
    fprintf(f, "allow_anonymous true\nlog_dest none\nset_tcp_nodelay true\n");
    if (!strcmp(o->scenario, "restore"))
        fprintf(f, "persistence true\npersistence_location %s/\n", o->dir);
    else
        fprintf(f, "persistence false\n");
    if (o->conf_extra)
        fprintf(f, "%s\n", o->conf_extra);
    return fclose(f);
}

/* Whether the broker accepts on its first port. */
static int broker_ready(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    int ok;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(ports[0]);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

static int broker_start(const struct opts *o)
{
    char conf[512];

    for (int i = 0; i < nlisten && !ports[i]; i++)
        ports[i] = free_port();
    if (write_conf(o, conf, sizeof conf))
        return -1;
    broker_pid = fork();
    if (broker_pid == 0) {
        execl(o->broker, o->broker, "-c", conf, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 100 && broker_pid > 0; i++) {
        if (broker_ready())
            return 0;
        if (waitpid(broker_pid, NULL, WNOHANG) == broker_pid)
            break;
        usleep(50000);
    }
    fprintf(stderr, "mqttload: the broker %s did not start\n", o->broker);
    return -1;
}

/* CPU seconds (user + system) and peak RSS of the broker, from /proc. */
static void broker_report(void)
{
    char path[64], line[256];
    unsigned long ut = 0, st = 0;
    long hwm = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)broker_pid);
    f = fopen(path, "r");
    if (f) {
        /* Fields 14 and 15; the name in field 2 has no spaces here. */
        if (fscanf(f,
                   "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                   "%lu %lu",
                   &ut, &st) != 2)
            ut = st = 0;
        fclose(f);
    }
    snprintf(path, sizeof path, "/proc/%d/status", (int)broker_pid);
    f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &hwm) == 1)
            break;
    if (f)
        fclose(f);
    printf("broker cpu_s=%.2f rss_max_kb=%ld\n",
           (double)(ut + st) / (double)sysconf(_SC_CLK_TCK), hwm);
}

static void broker_stop(void)
{
    if (broker_pid <= 0)
        return;
    kill(broker_pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        if (waitpid(broker_pid, NULL, WNOHANG) == broker_pid)
            return;
        usleep(50000);
    }
    kill(broker_pid, SIGKILL);
    waitpid(broker_pid, NULL, 0);
}

/* ---- scenarios ----------------------------------------------------------- */

static void add_client(uint8_t plan, uint8_t kind, uint16_t ka, uint32_t wd,
                       uint32_t exp, uint64_t start, uint64_t close_at)
{
    struct client *c = &cl[ncl++];

    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->plan = plan;
    c->kind = kind;
    c->keepalive = ka;
    c->will_delay = wd;
    c->expiry = exp;
    c->t_start = start;
    c->t_close = close_at;
    c->due_s = kind == K_EXPIRY ? exp : wd;
    if (plan == P_CLOSE)
        heap_push(close_at, ncl - 1);
}

/* Connects are spread over `ramp` ns, so that every client is up before
 * the first event is due. */
static uint64_t ramp_for(long n)
{
    return (uint64_t)n * 100000ULL + 200 * MS; /* 10,000 per second */
}

static int make_scenario(const struct opts *o)
{
    const char *s = o->scenario;
    long n = o->n;
    uint64_t ramp = ramp_for(n), spread = (uint64_t)(o->spread * (double)NS);

    cl = calloc((size_t)n + 16, sizeof *cl);
    heap = calloc((size_t)n + 16, sizeof *heap);
    if (!cl || !heap)
        return -1;
    if (!strcmp(s, "keepalive")) {
        for (long i = 0; i < n; i++)
            add_client(P_SILENT, K_KEEPALIVE, (uint16_t)o->keepalive, 0, 0,
                       spread * (uint64_t)i / (uint64_t)n, 0);
    } else if (!strcmp(s, "order")) {
        uint64_t a = ramp, b = ramp + (uint64_t)(28 * o->scale * NS);

        add_client(P_CLOSE, K_WILL, 0, (uint32_t)(30 * o->scale), 3600, 0, a);
        add_client(P_CLOSE, K_WILL, 0, (uint32_t)(5 * o->scale), 3600, 0, b);
    } else if (!strcmp(s, "stream")) {
        for (long i = 0; i < n; i++)
            add_client(P_CLOSE, K_WILL, 0, (uint32_t)(10 * o->scale), 3600, 0,
                       ramp + (uint64_t)i * (uint64_t)(4 * o->scale * NS));
    } else if (!strcmp(s, "expiry")) {
        for (long i = 0; i < n; i++) {
            uint32_t e = (uint32_t)o->expiry;

            add_client(P_CLOSE, K_EXPIRY, 0, e + 1000, e, 0,
                       ramp + spread * (uint64_t)i / (uint64_t)n);
        }
    } else if (!strcmp(s, "restore")) {
        return 0;
    } else if (!strcmp(s, "session-end")) {
        for (long i = 0; i < n; i++) {
            add_client(P_CLOSE, K_WILL, 0, 5, 0, 0,
                       ramp + spread * (uint64_t)i / (uint64_t)n);
            cl[ncl - 1].due_s = 0; /* the session ends with the connection */
        }
    } else if (!strcmp(s, "mixed")) {
        /* 2,000 connects a second, each client up for 1 to 3 s (silent
         * ones until the broker closes them): about 10^4 connected at once
         * at most, under this machine's hard limit of 20,000 descriptors
         * a process (no CAP_SYS_RESOURCE to raise it). */
        uint64_t pace = (uint64_t)n * 500000ULL;

        for (long i = 0; i < n; i++) {
            uint64_t start = pace * (uint64_t)i / (uint64_t)n;
            uint64_t at = start + NS + rnd() % (2 * NS + 1);
            uint32_t e = rnd_range(2, 6);

            if (i % 3 == 0)
                add_client(P_SILENT, K_KEEPALIVE, 2, 0, rnd_range(60, 3600),
                           start, 0);
            else if (i % 3 == 1)
                add_client(P_CLOSE, K_WILL, 0, rnd_range(1, 5), 3600, start,
                           at);
            else
                add_client(P_CLOSE, K_EXPIRY, 0, e + 1000, e, start, at);
        }
    } else if (!strcmp(s, "churn")) {
        for (long i = 0; i < n; i++)
            add_client(P_DISCONNECT, K_NONE, 60, 0,
                       o->expiry < 0 ? rnd_range(3600, 86400)
                                     : (uint32_t)o->expiry,
                       0, 0);
    } else {
        return -1;
    }
    return 0;
}

/* ---- the watcher: a client subscribed to tw/will/# ----------------------- */

static int watcher_start(void)
{
    uint8_t b[64], pkt[80], *p = b;
    size_t n;

    watch_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (watch_fd < 0 || connect_to(watch_fd, ports[0]))
        return -1;
    p += put_str(p, "MQTT");
    *p++ = 5;
    *p++ = 0x02;
    p += put_u16(p, 0); /* no keepalive: it only listens */
    *p++ = 0;
    p += put_str(p, "tw-watcher");
    n = frame(pkt, 0x10, b, (size_t)(p - b));
    if (write_all(watch_fd, pkt, n))
        return -1;
    p = b;
    p += put_u16(p, 1);
    *p++ = 0;
    p += put_str(p, "tw/will/#");
    *p++ = 0;
    n = frame(pkt, 0x82, b, (size_t)(p - b));
    if (write_all(watch_fd, pkt, n))
        return -1;
    fcntl(watch_fd, F_SETFL, O_NONBLOCK);
    wbuf = malloc(WATCH_BUF);
    return wbuf ? ep_add(watch_fd, EPOLLIN, UINT64_MAX) : -1;
}

static void will_arrived(const uint8_t *topic, size_t len, uint64_t t)
{
    char s[40];
    long i;

    if (len < 9 || len >= sizeof s || memcmp(topic, "tw/will/", 8))
        return;
    memcpy(s, topic + 8, len - 8);
    s[len - 8] = 0;
    i = strtol(s, NULL, 10);
    if (i >= 0 && i < ncl && !cl[i].event && cl[i].kind != K_KEEPALIVE) {
        cl[i].event = t;
        cl[i].seq = arrivals++;
        finished++;
    }
}

/* Parse every whole packet in wbuf; keep the tail. */
static void watcher_parse(uint64_t t)
{
    size_t off = 0;

    while (wlen - off >= 2) {
        uint32_t rl = 0, mult = 1;
        size_t h = 1;

        while (h < 5 && off + h < wlen) {
            rl += (uint32_t)(wbuf[off + h] & 0x7f) * mult;
            mult <<= 7;
            if (!(wbuf[off + h++] & 0x80))
                break;
        }
        if (off + h + rl > wlen || (wbuf[off + h - 1] & 0x80))
            break;
        if ((wbuf[off] & 0xf0) == 0x30 && rl >= 2) {
            const uint8_t *v = wbuf + off + h;
            size_t tl = (size_t)v[0] << 8 | v[1];

            if (tl + 2 <= rl)
                will_arrived(v + 2, tl, t);
        }
        off += h + rl;
    }
    memmove(wbuf, wbuf + off, wlen - off);
    wlen -= off;
}

static int watcher_read(uint64_t t)
{
    for (;;) {
        ssize_t r = read(watch_fd, wbuf + wlen, WATCH_BUF - wlen);

        if (r > 0) {
            wlen += (size_t)r;
            watcher_parse(t);
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        fprintf(stderr, "mqttload: the broker closed the watcher\n");
        return -1;
    }
}

/* ---- client life --------------------------------------------------------- */

static void client_close(long i, uint64_t t)
{
    struct client *c = &cl[i];

    if (c->fd >= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    if (c->state == S_CONNECTING || c->state == S_CONNACK)
        inflight--;
    c->closed = t;
    c->state = S_DONE;
}

static void client_finish(long i, uint64_t t)
{
    client_close(i, t);
    finished++;
}

static int client_connect(long i)
{
    struct client *c = &cl[i];

    c->fd = tcp_socket();
    if (c->fd < 0 || connect_to(c->fd, ports[i % nlisten]) ||
        ep_add(c->fd, EPOLLOUT, (uint64_t)i)) {
        fprintf(stderr, "mqttload: connect %ld: %s\n", i, strerror(errno));
        return -1;
    }
    c->state = S_CONNECTING;
    inflight++;
    return 0;
}

/* The socket is connected: send CONNECT, then wait for CONNACK. */
static int client_writable(long i, uint64_t t)
{
    struct client *c = &cl[i];
    uint8_t pkt[300];
    int err = 0;
    socklen_t len = sizeof err;
    size_t n = connect_packet(i, pkt);

    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err || write_all(c->fd, pkt, n)) {
        fprintf(stderr, "mqttload: client %ld: %s\n", i, strerror(err));
        return -1;
    }
    c->sent = t;
    c->state = S_CONNACK;
    ep_mod(c->fd, EPOLLIN, (uint64_t)i);
    return 0;
}

/* What a client reads: CONNACK, or the broker closing the connection. */
static int client_readable(long i, uint64_t t)
{
    struct client *c = &cl[i];
    uint8_t b[64];
    ssize_t r = read(c->fd, b, sizeof b);

    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (r <= 0) {
        if (c->kind == K_KEEPALIVE && c->state == S_UP) {
            c->event = t;
            client_finish(i, t);
            return 0;
        }
        if (c->plan == P_DISCONNECT && c->t_close) {
            client_finish(i, t);
            return 0;
        }
        fprintf(stderr, "mqttload: client %ld closed by the broker\n", i);
        return -1;
    }
    if (c->state == S_CONNACK && b[0] == 0x20) {
        if (r < 4 || b[3] != 0) {
            fprintf(stderr, "mqttload: client %ld refused\n", i);
            return -1;
        }
        c->state = S_UP;
        inflight--;
        if (c->plan == P_DISCONNECT) {
            static const uint8_t disconnect[2] = {0xe0, 0x00};

            c->t_close = t; /* at once; the broker closes */
            if (write_all(c->fd, disconnect, sizeof disconnect))
                return -1;
        }
    }
    return 0;
}

/* Close client i now: its will delay or session expiry starts. */
static void client_due(long i, uint64_t t)
{
    struct client *c = &cl[i];

    client_close(i, t);
    c->due = t + (uint64_t)c->due_s * NS;
}

/* ---- the loop ------------------------------------------------------------ */

static long next_start;

static uint64_t start_clients(uint64_t t)
{
    while (next_start < ncl && inflight < MAX_INFLIGHT &&
           cl[next_start].t_start <= t) {
        if (client_connect(next_start))
            return 0;
        next_start++;
    }
    if (next_start >= ncl)
        return UINT64_MAX;
    return inflight >= MAX_INFLIGHT ? t + MS : cl[next_start].t_start;
}

static int handle(struct epoll_event *e, uint64_t t)
{
    long i = (long)e->data.u64;

    if (e->data.u64 == UINT64_MAX)
        return watcher_read(t);
    if (cl[i].state == S_CONNECTING)
        return client_writable(i, t);
    return client_readable(i, t);
}

/* Close the clients whose time has come; one not up yet is tried again a
 * millisecond later. Returns the time of the next close. */
static uint64_t run_closes(uint64_t t)
{
    while (nheap && heap[0].t <= t) {
        struct due d = heap_pop();

        if (cl[d.i].state == S_UP)
            client_due(d.i, t);
        else if (cl[d.i].state != S_DONE)
            heap_push(t + MS, d.i);
    }
    return nheap ? heap[0].t : UINT64_MAX;
}

static int loop(double timeout_s)
{
    struct epoll_event ev[256];
    uint64_t end = now_ns() + (uint64_t)(timeout_s * (double)NS);

    while (finished < ncl) {
        uint64_t t = now_ns(), next = start_clients(t), c;
        int n, ms;

        if (t >= end || (!next && next_start < ncl))
            return -1;
        c = run_closes(t);
        next = c < next ? c : next;
        next = next < end ? next : end;
        ms = next <= t ? 0 : (int)((next - t + MS - 1) / MS);
        n = epoll_wait(ep, ev, 256, ms > 1000 ? 1000 : ms);
        t = now_ns();
        for (int k = 0; k < n; k++)
            if (handle(&ev[k], t))
                return -1;
    }
    return 0;
}

/* ---- results ------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

static double pct(const int64_t *v, long n, double p)
{
    long k = (long)(p * (double)(n - 1) + 0.5);

    return (double)v[k] / (double)MS;
}

/* Lateness of each event of kind k against its due time; prints the line
 * and returns how many broke the bound (early, too late, missing). */
static long report_kind(int k, double max_late_ms)
{
    int64_t *v = malloc(sizeof *v * (size_t)(ncl + 1));
    long n = 0, missing = 0, bad = 0, early = 0;

    for (long i = 0; i < ncl && v; i++) {
        struct client *c = &cl[i];

        if (c->kind != k)
            continue;
        if (!c->event) {
            missing++;
            continue;
        }
        if (k == K_KEEPALIVE)
            c->due = c->sent + (uint64_t)c->keepalive * 3 * NS / 2;
        v[n++] = (int64_t)c->event - (int64_t)c->due;
    }
    if (!v || (!n && !missing)) {
        free(v);
        return 0;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    for (long i = 0; i < n; i++) {
        early += v[i] < 0;
        if (v[i] < 0 || (max_late_ms > 0 && (double)v[i] > max_late_ms * MS))
            bad++;
    }
    printf("%s n=%ld missing=%ld early=%ld late_ms p50=%.1f p99=%.1f "
           "max=%.1f min=%.1f\n",
           kind_name[k], n, missing, early, n ? pct(v, n, 0.5) : 0,
           n ? pct(v, n, 0.99) : 0, n ? pct(v, n, 1) : 0, n ? pct(v, n, 0) : 0);
    free(v);
    return bad + missing;
}

static int cmp_event(const void *a, const void *b)
{
    long x = cl[*(const long *)a].seq, y = cl[*(const long *)b].seq;

    return (x > y) - (x < y);
}

/* Wills and expiries that arrived after one due later than them by more
 * than the slack (events due within it may come in either order): in
 * order of arrival, each due time against the latest one seen before. */
static long report_order(double slack_ms)
{
    long *idx = malloc(sizeof *idx * (size_t)(ncl + 1)), n = 0, bad = 0;
    uint64_t latest = 0;

    for (long i = 0; i < ncl && idx; i++)
        if (cl[i].kind >= K_WILL && cl[i].event)
            idx[n++] = i;
    if (idx)
        qsort(idx, (size_t)n, sizeof *idx, cmp_event);
    for (long k = 0; k < n; k++) {
        uint64_t due = cl[idx[k]].due;

        if (due + (uint64_t)(slack_ms * MS) < latest)
            bad++;
        latest = due > latest ? due : latest;
    }
    free(idx);
    printf("order inversions=%ld\n", bad);
    return bad;
}

/* ---- restore: session expiry across a restart ------------------------------
 */

/* Connect client tw-<i> (clean start or not, session expiry exp) with a
 * blocking socket and return CONNACK's session present flag, or -1. */
static int connect_once(long i, int clean, uint32_t exp, int *fd)
{
    uint8_t b[300], *p = b, pkt[320], ack[16];
    char id[32];
    size_t n;

    snprintf(id, sizeof id, "tw-%ld", i);
    p += put_str(p, "MQTT");
    *p++ = 5;
    *p++ = clean ? 0x02 : 0;
    p += put_u16(p, 60);
    *p++ = 5;
    *p++ = 0x11;
    p += put_u32(p, exp);
    p += put_str(p, id);
    n = frame(pkt, 0x10, b, (size_t)(p - b));
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*fd < 0 || connect_to(*fd, ports[0]) || write_all(*fd, pkt, n) ||
        read(*fd, ack, sizeof ack) < 4 || ack[0] != 0x20 || ack[3] != 0)
        return -1;
    return ack[2] & 1;
}

static void sleep_until(uint64_t t)
{
    uint64_t now = now_ns();

    if (t > now)
        usleep((useconds_t)((t - now) / 1000));
}

static int restore(const struct opts *o)
{
    int fx, fy, px, py;
    uint64_t closed;

    if (connect_once(0, 0, 4, &fx) < 0 || connect_once(1, 0, 4, &fy) < 0)
        return -1;
    close(fx);
    close(fy);
    closed = now_ns();
    sleep_until(closed + NS);
    broker_stop();
    if (broker_start(o))
        return -1;
    sleep_until(closed + 3300 * MS);
    px = connect_once(0, 0, 4, &fx);
    sleep_until(closed + 5300 * MS);
    py = connect_once(1, 0, 4, &fy);
    close(fx);
    close(fy);
    printf("restore before_expiry_present=%d after_expiry_present=%d\n", px,
           py);
    return px == 1 && py == 0 ? 0 : 1;
}

/* ---- main ---------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: mqttload --broker PATH [--conf LINE] [--dir DIR]\n"
            "        [--n N] [--keepalive S] [--expiry S|-1] [--spread S]\n"
            "        [--scale X] [--timeout S] [--max-late-ms MS]\n"
            "        keepalive|order|stream|expiry|session-end|restore|mixed|"
            "churn\n");
    exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.n = 20,
                       .keepalive = 2,
                       .expiry = 3,
                       .scale = 1,
                       .spread = 0,
                       .timeout = 120};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (a[0] != '-') {
            o->scenario = a;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--broker"))
            o->broker = v;
        else if (!strcmp(a, "--conf"))
            o->conf_extra = v;
        else if (!strcmp(a, "--dir"))
            o->dir = v;
        else if (!strcmp(a, "--n"))
            o->n = atol(v);
        else if (!strcmp(a, "--keepalive"))
            o->keepalive = atol(v);
        else if (!strcmp(a, "--expiry"))
            o->expiry = atol(v);
        else if (!strcmp(a, "--spread"))
            o->spread = atof(v);
        else if (!strcmp(a, "--scale"))
            o->scale = atof(v);
        else if (!strcmp(a, "--timeout"))
            o->timeout = atof(v);
        else if (!strcmp(a, "--max-late-ms"))
            o->max_late_ms = atof(v);
        else
            usage();
    }
    if (!o->broker || !o->scenario || o->n < 1 || o->scale <= 0)
        usage();
}

/* A directory of this run's own for the broker's configuration and
 * database, which the broker may write after dropping to `nobody`. */
static char tmpdir[] = "/tmp/mqttload.XXXXXX";

static int make_dir(struct opts *o)
{
    if (o->dir)
        return 0;
    if (!mkdtemp(tmpdir) || chmod(tmpdir, 0777))
        return -1;
    o->dir = tmpdir;
    return 0;
}

static void remove_dir(const struct opts *o)
{
    char path[600];

    if (o->dir != tmpdir)
        return;
    snprintf(path, sizeof path, "%s/mosquitto.conf", o->dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/mosquitto.db", o->dir);
    unlink(path);
    rmdir(o->dir);
}

/* Room for every client's socket here and in the broker, which inherits
 * the limit. */
static void raise_fd_limit(long n)
{
    struct rlimit r;
    rlim_t want = (rlim_t)n + 1024;

    getrlimit(RLIMIT_NOFILE, &r);
    if (r.rlim_cur >= want)
        return;
    if (r.rlim_max < want) {
        r.rlim_max = want; /* only root may raise the hard limit */
        if (setrlimit(RLIMIT_NOFILE, &(struct rlimit){want, want}) == 0)
            return;
        getrlimit(RLIMIT_NOFILE, &r);
    }
    r.rlim_cur = r.rlim_max < want ? r.rlim_max : want;
    setrlimit(RLIMIT_NOFILE, &r);
}

int main(int argc, char **argv)
{
    struct opts o;
    long bad = 0;
    int rc;

    parse(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit(o.n);
    nlisten = (int)((o.n + PER_LISTENER - 1) / PER_LISTENER);
    if (nlisten > MAX_LISTENERS || make_scenario(&o))
        usage();
    t0 = 0;
    t0 = now_ns();
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (make_dir(&o))
        return 2;
    if (!strcmp(o.scenario, "restore")) {
        rc = broker_start(&o) ? -1 : restore(&o);
        broker_stop();
        remove_dir(&o);
        return rc < 0 ? 2 : rc;
    }
    if (ep < 0 || broker_start(&o) || watcher_start()) {
        broker_stop();
        remove_dir(&o);
        return 2;
    }
    usleep(100000); /* the SUBSCRIBE is through before the first will */
    rc = loop(o.timeout);
    for (int k = K_KEEPALIVE; k < K_KINDS; k++)
        bad += report_kind(k, o.max_late_ms);
    if (strcmp(o.scenario, "keepalive") && strcmp(o.scenario, "churn"))
        bad += report_order(o.max_late_ms > 0 ? o.max_late_ms : 1);
    printf("clients n=%ld finished=%ld timed_out=%d\n", ncl, finished, rc != 0);
    broker_report();
    broker_stop();
    remove_dir(&o);
    if (o.max_late_ms > 0 && (bad || rc))
        return 1;
    return rc ? 1 : 0;
}
