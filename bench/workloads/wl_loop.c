/*
 * loop: idle-connection timers under a real libuv loop, re-armed on every
 * message, through timewheel (one uv_timer_t drives the whole wheel, as
 * docs/examples/uv_server.c) against libuv's own timers (one uv_timer_t per
 * connection, re-armed by uv_timer_start()).
 *
 * The messages are real I/O at a steady rate: a producer thread writes the
 * connection ids of the sequence (random permutations of the connections,
 * fixed seed) into a socketpair in one batch every 5 ms, so that every
 * connection has a message each second, and the loop reads them through a
 * uv_pipe_t and re-arms each id's timer 30 s ahead. A repetition is half a
 * second of this. The time inside the re-arms of each read is measured, per
 * message; the loop's iterations (a uv_check_t counts them) per second are
 * the wake-ups: about 200 come from the batches, the rest from timers. No
 * timer is due within a repetition, so neither side fires anything: the
 * wheel's driver wakes only when the wheel must move coarse timers down.
 *
 * Only "hier" (the library's default wheel) and "libuv" run it: the others
 * have no libuv loop of their own to be measured under.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <timewheel/loop.h>
#include <unistd.h>
#include <uv.h>

#include "clock.h"
#include "rng.h"
#include "stop.h"
#include "workload.h"

#define LOOP_IDLE_NS (30 * UINT64_C(1000000000))
#define LOOP_IDLE_MS 30000
/* One batch of messages every 5 ms, 100 batches a repetition (0.5 s), each
 * of n / 200 messages: every connection has a message a second. */
#define LOOP_BATCH_NS UINT64_C(5000000)
#define LOOP_BATCHES 100

struct loopseq {
    uint32_t *ids; /* the messages: connection ids */
    uint64_t msgs; /* LOOP_BATCHES batches of `batch` */
    uint64_t batch;
    uint64_t n;
};

/* One repetition's loop: the same for both sides but for the timers. */
struct lrun {
    const struct loopseq *seq;
    uv_loop_t loop;
    uv_pipe_t in;
    uv_check_t iter;
    int fd[2];
    uint32_t carry;   /* a partly read id */
    unsigned carried; /* bytes of it read so far */
    uint64_t got, rearm_ns, iterations;
    /* timewheel */
    struct tw_wheel *w;
    struct tw_timer *tt;
    uv_timer_t driver;
    uv_prepare_t aim;
    /* libuv */
    uv_timer_t *ut;
    bool wheel;
};

static void *prepare(const struct bench_params *p, unsigned variant, uint64_t n)
{
    struct loopseq *s = calloc(1, sizeof(*s));
    uint32_t *perm = malloc(n * sizeof(*perm));
    struct rng r;

    (void)variant;
    s->batch = n / 200 ? n / 200 : 1;
    s->msgs = s->batch * LOOP_BATCHES;
    if (!s || !perm || !(s->ids = malloc(s->msgs * sizeof(*s->ids)))) {
        fprintf(stderr, "twbench: out of memory\n");
        exit(1);
    }
    rng_init(&r, p->seed, "loop", n);
    s->n = n;
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint64_t m = 0; m < s->msgs; m++) {
        if (m % n == 0) /* a new round: shuffle (Fisher-Yates) */
            for (uint64_t i = n - 1; i > 0; i--) {
                uint64_t j = rng_range(&r, 0, i);
                uint32_t t = perm[i];

                perm[i] = perm[j];
                perm[j] = t;
            }
        s->ids[m] = perm[m % n];
    }
    free(perm);
    return s;
}

static void release(void *seq)
{
    struct loopseq *s = seq;

    free(s->ids);
    free(s);
}

/* ---- the timers of each side ------------------------------------------- */

static void on_idle_tw(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg; /* never due within a repetition */
}

static void on_idle_uv(uv_timer_t *t)
{
    (void)t;
}

static void on_driver(uv_timer_t *t)
{
    struct lrun *l = t->data;

    tw_advance(l->w, uv_hrtime());
}

/* Before each poll: the driver at the wheel's next deadline. */
static void on_aim(uv_prepare_t *p)
{
    struct lrun *l = p->data;
    int ms = tw_loop_timeout_ms(l->w, uv_now(&l->loop) * 1000000);

    if (ms < 0)
        uv_timer_stop(&l->driver);
    else
        uv_timer_start(&l->driver, on_driver, (uint64_t)ms, 0);
}

static void rearm_ids(struct lrun *l, const uint32_t *ids, size_t k)
{
    uint64_t t0 = clock_now_ns();

    if (l->wheel) {
        uint64_t now = uv_hrtime(); /* one reading per read */

        for (size_t i = 0; i < k; i++)
            tw_loop_rearm_after(l->w, &l->tt[ids[i]], now, LOOP_IDLE_NS);
    } else {
        for (size_t i = 0; i < k; i++)
            uv_timer_start(&l->ut[ids[i]], on_idle_uv, LOOP_IDLE_MS, 0);
    }
    l->rearm_ns += clock_now_ns() - t0;
    l->got += k;
}

/* ---- the loop ------------------------------------------------------------ */

static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *b)
{
    static char buf[65536];

    (void)h;
    (void)want;
    *b = uv_buf_init(buf, sizeof(buf));
}

/* Ids arrive as 4-byte records that a read may split. */
static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    struct lrun *l = st->data;
    const char *p = b->base, *end = b->base + (nread > 0 ? nread : 0);
    uint32_t ids[65536 / 4 + 1];
    size_t k = 0;

    if (nread < 0) {
        uv_close((uv_handle_t *)st, NULL);
        return;
    }
    while (p < end) {
        size_t take = 4 - l->carried;

        if ((size_t)(end - p) < take)
            take = (size_t)(end - p);
        memcpy((char *)&l->carry + l->carried, p, take);
        l->carried += (unsigned)take;
        p += take;
        if (l->carried == 4) {
            ids[k++] = l->carry;
            l->carried = 0;
        }
    }
    rearm_ids(l, ids, k);
}

static void on_iter(uv_check_t *c)
{
    ((struct lrun *)c->data)->iterations++;
}

static void write_all(int fd, const char *p, size_t left)
{
    while (left > 0) {
        ssize_t w = write(fd, p, left);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        left -= (size_t)w;
    }
}

/* One batch every LOOP_BATCH_NS on the real clock, then EOF. */
static void *producer(void *arg)
{
    struct lrun *l = arg;
    const struct loopseq *s = l->seq;
    struct timespec at;

    clock_gettime(CLOCK_MONOTONIC, &at);
    for (uint64_t b = 0; b < LOOP_BATCHES; b++) {
        write_all(l->fd[1], (const char *)(s->ids + b * s->batch),
                  s->batch * sizeof(uint32_t));
        at.tv_nsec += (long)LOOP_BATCH_NS;
        if (at.tv_nsec >= 1000000000L) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000L;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) ==
               EINTR)
            ;
    }
    close(l->fd[1]);
    return NULL;
}

/* ---- one side's set-up and tear-down ------------------------------------ */

static int timers_init(struct lrun *l)
{
    uint64_t n = l->seq->n;

    if (l->wheel) {
        struct tw_config cfg;

        tw_config_init(&cfg, TW_HIER);
        tw_loop_config(&cfg, CLOCK_MONOTONIC);
        l->tt = malloc(n * sizeof(*l->tt));
        l->w = tw_create(&cfg, NULL);
        if (!l->tt || !l->w)
            return -1;
        uv_timer_init(&l->loop, &l->driver);
        uv_prepare_init(&l->loop, &l->aim);
        l->driver.data = l->aim.data = l;
        uv_prepare_start(&l->aim, on_aim);
        for (uint64_t i = 0; i < n; i++) {
            tw_timer_init(&l->tt[i], on_idle_tw, NULL);
            tw_loop_schedule_after(l->w, &l->tt[i], uv_hrtime(), LOOP_IDLE_NS);
        }
        return 0;
    }
    if (!(l->ut = malloc(n * sizeof(*l->ut))))
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        uv_timer_init(&l->loop, &l->ut[i]);
        uv_timer_start(&l->ut[i], on_idle_uv, LOOP_IDLE_MS, 0);
    }
    return 0;
}

static void timers_close(struct lrun *l)
{
    if (l->wheel) {
        if (l->w) {
            uv_close((uv_handle_t *)&l->driver, NULL);
            uv_close((uv_handle_t *)&l->aim, NULL);
        }
        tw_destroy(l->w);
        free(l->tt);
        return;
    }
    for (uint64_t i = 0; l->ut && i < l->seq->n; i++)
        uv_close((uv_handle_t *)&l->ut[i], NULL);
}

/* One repetition: n timers, the whole message sequence, the loop until the
 * producer is done. Returns the wall time, or 0 on failure. */
static uint64_t one_rep(struct lrun *l)
{
    pthread_t th;
    uint64_t t0, t1;

    if (uv_loop_init(&l->loop) != 0)
        return 0;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, l->fd) < 0 ||
        timers_init(l) < 0) {
        uv_loop_close(&l->loop);
        return 0;
    }
    uv_pipe_init(&l->loop, &l->in, 0);
    uv_pipe_open(&l->in, l->fd[0]);
    l->in.data = l->iter.data = l;
    uv_check_init(&l->loop, &l->iter);
    uv_check_start(&l->iter, on_iter);
    uv_unref((uv_handle_t *)&l->iter);
    uv_read_start((uv_stream_t *)&l->in, on_alloc, on_read);
    t0 = clock_now_ns();
    if (pthread_create(&th, NULL, producer, l) != 0)
        return 0;
    /* The pipe keeps the loop alive until EOF; the timers are unreferenced
     * so that the idle timeouts do not. */
    if (l->wheel) {
        uv_unref((uv_handle_t *)&l->driver);
        uv_unref((uv_handle_t *)&l->aim);
    } else {
        for (uint64_t i = 0; i < l->seq->n; i++)
            uv_unref((uv_handle_t *)&l->ut[i]);
    }
    uv_run(&l->loop, UV_RUN_DEFAULT);
    t1 = clock_now_ns();
    pthread_join(th, NULL);
    timers_close(l);
    uv_close((uv_handle_t *)&l->iter, NULL);
    uv_run(&l->loop, UV_RUN_DEFAULT);
    uv_loop_close(&l->loop);
    free(l->ut);
    return t1 - t0;
}

/* One repetition, recorded when timed. Returns false to stop. */
static bool rep(struct loopseq *s, bool wheel, struct wl_result *out,
                bool timed)
{
    struct lrun l = {.seq = s, .wheel = wheel};
    uint64_t wall = one_rep(&l);

    if (stop_hit())
        return false;
    if (!wall || l.got != s->msgs) {
        wl_note(out, 0, "failed: %llu of %llu messages arrived",
                (unsigned long long)l.got, (unsigned long long)s->msgs);
        return false;
    }
    if (timed) {
        wl_add(out, 0, (double)l.rearm_ns / (double)l.got);
        wl_add(out, 1, (double)l.iterations * 1e9 / (double)wall);
    }
    return true;
}

static void run(void *seq, const struct impl *im, struct wl_plan *plan,
                struct wl_result *out)
{
    bool wheel = strcmp(im->name, "hier") == 0;

    if (!wheel && strcmp(im->name, "libuv") != 0) {
        wl_note(out, 0,
                "not run: this workload compares the default wheel "
                "(hier) under a real libuv loop with libuv's timers");
        wl_note(out, 1, "not run: only hier and libuv");
        return;
    }
    /* Always one untimed repetition first: it is no dearer than a timed
     * one. */
    if (plan->round == 0 && !rep(seq, wheel, out, false))
        return;
    for (unsigned r = 0; wl_more(plan, r); r++)
        if (!rep(seq, wheel, out, true))
            return;
}

static const struct wl_metric metrics[] = {
    {"ns_per_rearm", "ns", false,
     "Re-arm on every message under a real libuv loop, ns per re-arm"},
    {"wakeups_per_s", "wake-ups/s", false,
     "Loop wake-ups while the messages flow, iterations per second"},
};

const struct workload wl_loop = {
    .name = "loop",
    .about =
        "N connections' idle timeouts (30 s) under a real libuv loop. A "
        "producer thread writes the messages (connection ids, in rounds "
        "that are random permutations of the connections) into a "
        "socketpair, a batch every 5 ms so that each connection has a "
        "message a second, for 0.5 s a repetition; each message re-arms "
        "its connection's timer 30 s ahead: through timewheel, with one "
        "uv_timer_t aimed at the wheel's next deadline before each poll "
        "(docs/examples/uv_server.c), or through libuv's own timers, one "
        "uv_timer_t per connection re-armed by uv_timer_start(). Reported: "
        "ns inside the re-arms per message, and the loop's iterations per "
        "second (a wake-up each; about 200 come from the batches, the rest "
        "from timers). No timer comes due, so neither side fires; only hier "
        "and libuv run it. The re-arm time of a read includes two clock "
        "reads around it (and the wheel's one reading of the time), which "
        "at small N, with few messages a batch, weigh on both sides.",
    .x_label = "connections (pending timers)",
    .nvariants = 1,
    .sizes = {[SUITE_QUICK] = {100000},
              [SUITE_FULL] = {10000, 100000},
              [SUITE_SMOKE] = {1000}},
    WL_METRICS(metrics),
    .prepare = prepare,
    .run = run,
    .release = release,
};
