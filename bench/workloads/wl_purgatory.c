/*
 * purgatory: Kafka's purgatory performance test, through the purgatory API
 * (timewheel/purgatory.h). Requests arrive as a Poisson process; each is
 * watched on 1-3 keys out of PURG_KEYS with a timeout, and its completing
 * event comes after a log-normal latency: the completer marks it ready and
 * checks one of its keys (tw_purgatory_check()), unless the timeout fires
 * first.
 *
 * One thread, every implementation: the same purgatory over the
 * implementation's timers (a timer of the caller's, struct
 * tw_purgatory_timer: arm is im->schedule, disarm im->cancel) on the
 * virtual clock. impl.h has no per-timer callback, so after each advance
 * the workload hands the timeouts now due to tw_purgatory_expire(), in
 * deadline order (one timeout for all, so arrival order), and checks that
 * their number is what the implementation says fired.
 *
 * Two threads, the library's wheel only: a purgatory over the service
 * (its worker expires in real time), each thread replaying half of the
 * requests (by parity) on the shared keys as fast as it can, twice: with
 * the sequence's timeout in real time (the "flood": the replay runs
 * several times faster than the sequence's clock, so the timed-out
 * requests stay watched over several times as many arrivals, and every
 * key holds several times the watchers it holds in the one-thread run),
 * and "scaled": each watch's timeout is the sequence's, scaled by how fast
 * this thread has replayed the sequence so far (its sequence time over
 * its real time), so that a timeout spans the share of the sequence it
 * spans on one thread; a replay that slows down gets shorter timeouts,
 * so the scaling steadies itself. Both runs count the tries per check
 * (the bench's own try_complete), which shows whether the keys held alike.
 *
 * Reported: requests per second of the thread's CPU time with one thread
 * (what one core sustains, however loaded the machine), CPU ns per
 * request, the p99 delay (real time) from the completing event (the check) to
 * its on_complete (one completion in 8 sampled), and with two threads the
 * requests per second of wall time and per second of the process's CPU
 * time (both replaying threads, the service's worker and the main thread,
 * from their start until every request has its answer: what the two-thread
 * run costs in CPU however loaded the machine); for the scaled run the
 * requests per CPU second of the process, the figure comparable with the
 * one-thread one; and tries per check for the one-thread and scaled runs.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "rng.h"
#include "stop.h"
#include "timewheel/purgatory.h"
#include "workload.h"

/* The 75th percentile of a standard normal: fixes sigma from p75 / p50. */
#define Z75 0.6744897501960817
/* Keys (topic-partitions) the requests are watched on. */
#define PURG_KEYS 1000
/* The two-thread run replays at most this many requests (it keeps one
 * operation per request, none reused). */
#define PURG_2T_MAX UINT64_C(1000000)
/* A scaled replay reads the clock for its speed once in this many
 * watches, and gives no timeout shorter than a tick. */
#define PURG_2T_CLOCK_EVERY 16u
/* One completing event in this many is timed for the p99. */
#define PURG_SAMPLE 8

enum { EV_ARRIVE, EV_COMPLETE };

struct event {
    uint64_t time;
    uint32_t req;
    uint32_t kind;
};

struct purgatory {
    struct event *ev;
    uint64_t nev, requests, expected_expired, slots;
    uint16_t (*keys)[3];
    uint8_t *nkeys;
    uint64_t timeout;
    char names[PURG_KEYS][16];
    size_t lens[PURG_KEYS];
};

static int by_time(const void *a, const void *b)
{
    const struct event *x = a, *y = b;

    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

static void pick_keys(struct purgatory *g, struct rng *r, uint64_t i)
{
    g->nkeys[i] = (uint8_t)rng_range(r, 1, 3);
    for (unsigned k = 0; k < g->nkeys[i]; k++) {
        bool dup;

        do {
            g->keys[i][k] = (uint16_t)rng_range(r, 0, PURG_KEYS - 1);
            dup = false;
            for (unsigned j = 0; j < k; j++)
                dup |= g->keys[i][j] == g->keys[i][k];
        } while (dup);
    }
}

/* Arrivals and the completing events that come before the timeout. */
static void make_events(struct purgatory *g, const struct bench_params *p,
                        uint64_t n)
{
    double mu = log(p->purg_p50_ms * 1e6);
    double sigma = log(p->purg_p75_ms / p->purg_p50_ms) / Z75;
    double t = 0;
    struct rng r;

    rng_init(&r, p->seed, "purgatory", n);
    for (uint64_t i = 0; i < n; i++) {
        double latency = exp(mu + sigma * rng_normal(&r));

        t += rng_exp(&r, 1e9 / p->purg_rate);
        pick_keys(g, &r, i);
        g->ev[g->nev++] = (struct event){(uint64_t)t, (uint32_t)i, EV_ARRIVE};
        if (latency < (double)g->timeout)
            g->ev[g->nev++] = (struct event){(uint64_t)(t + latency),
                                             (uint32_t)i, EV_COMPLETE};
        else
            g->expected_expired++;
    }
    qsort(g->ev, g->nev, sizeof(*g->ev), by_time);
}

/* Timers needed at once: a request holds one from its arrival until it
 * completes or its timeout has certainly been handed out (two ticks after
 * its deadline). An upper bound of what the replay uses. */
static uint64_t count_slots(const struct purgatory *g)
{
    uint64_t held = 0, most = 0, out = 0, nexp = 0;
    uint64_t *gone = malloc(g->nev * sizeof(*gone));
    uint8_t *completes = calloc(g->requests, 1);

    if (!gone || !completes) {
        free(gone);
        free(completes);
        return g->requests;
    }
    for (uint64_t k = 0; k < g->nev; k++)
        if (g->ev[k].kind == EV_COMPLETE)
            completes[g->ev[k].req] = 1;
    for (uint64_t k = 0; k < g->nev; k++) {
        const struct event *e = &g->ev[k];

        for (; out < nexp && gone[out] <= e->time; out++)
            held--;
        if (e->kind == EV_COMPLETE) {
            held--;
            continue;
        }
        most = ++held > most ? held : most;
        if (!completes[e->req])
            gone[nexp++] = e->time + g->timeout + 2 * BENCH_TICK_NS;
    }
    free(gone);
    free(completes);
    return most;
}

static void *purgatory_prepare(const struct bench_params *p, unsigned variant,
                               uint64_t n)
{
    struct purgatory *g = calloc(1, sizeof(*g));

    (void)variant;
    if (g) {
        g->ev = malloc(2 * n * sizeof(*g->ev));
        g->keys = malloc(n * sizeof(*g->keys));
        g->nkeys = malloc(n);
    }
    if (!g || !g->ev || !g->keys || !g->nkeys) {
        fprintf(stderr, "twbench: purgatory: out of memory\n");
        exit(1);
    }
    g->requests = n;
    g->timeout = (uint64_t)(p->purg_timeout_ms * 1e6);
    for (int k = 0; k < PURG_KEYS; k++)
        g->lens[k] =
            (size_t)snprintf(g->names[k], sizeof(g->names[k]), "topic-%d", k);
    make_events(g, p, n);
    g->slots = count_slots(g) + 64;
    return g;
}

/* ---- one thread, over the implementation's timers ------------------------ */

struct req {
    struct tw_delayed op;
    uint32_t id;  /* the request using this slot */
    bool ready;   /* its completing event came */
    bool sampled; /* time its on_complete */
};

struct run1 {
    struct purgatory *g;
    const struct impl *im;
    void *ctx;
    struct tw_purgatory *p;
    struct req *req;      /* one per slot */
    uint32_t *slot_of;    /* per request */
    uint32_t *free_slots; /* a stack */
    uint64_t nfree;
    uint32_t *fifo;     /* requests in arrival (= deadline) order */
    uint64_t *fifo_due; /* and the tick their timeout is due */
    uint64_t head, tail;
    uint64_t now, fired, expired, completed, checks;
    uint64_t t_event;            /* clock at the sampled check */
    uint64_t *lat, nlat, maxlat; /* sampled delays */
};

static int arm(void *ctx, struct tw_delayed *op, uint64_t timeout_ns)
{
    struct run1 *x = ctx;
    struct req *r = TW_CONTAINER_OF(op, struct req, op);

    x->im->schedule(x->ctx, (uint32_t)(r - x->req), x->now + timeout_ns);
    return 0;
}

static void disarm(void *ctx, struct tw_delayed *op)
{
    struct run1 *x = ctx;
    struct req *r = TW_CONTAINER_OF(op, struct req, op);

    x->im->cancel(x->ctx, (uint32_t)(r - x->req));
}

/* Tries of the bench's try_complete on this thread (each thread sums
 * its own: a shared counter would add its own contention). */
static _Thread_local uint64_t tries;

static bool try_ready(struct tw_delayed *op, void *arg)
{
    (void)arg;
    tries++;
    return TW_CONTAINER_OF(op, struct req, op)->ready;
}

static void done1(struct tw_delayed *op, void *arg)
{
    struct run1 *x = arg;
    struct req *r = TW_CONTAINER_OF(op, struct req, op);

    if (r->sampled && x->nlat < x->maxlat)
        x->lat[x->nlat++] = clock_now_ns() - x->t_event;
    x->free_slots[x->nfree++] = (uint32_t)(r - x->req);
}

/* Advance the implementation to now and hand out the timeouts now due:
 * the requests at the head of the FIFO whose timeout's tick has come and
 * that are still watched. */
static void advance1(struct run1 *x, uint64_t now)
{
    uint64_t tick = now / BENCH_TICK_NS;

    x->now = now;
    x->fired += x->im->advance(x->ctx, now, UINT64_MAX);
    for (; x->head < x->tail && x->fifo_due[x->head] <= tick; x->head++) {
        uint32_t id = x->fifo[x->head];
        struct req *r = &x->req[x->slot_of[id]];

        if (r->id == id && tw_delayed_state(&r->op) == TW_DELAYED_WATCHED)
            x->expired += tw_purgatory_expire(x->p, &r->op) == 1;
    }
}

static void arrive1(struct run1 *x, uint32_t id)
{
    struct purgatory *g = x->g;
    struct tw_key k[3];
    struct req *r;
    uint32_t slot;

    if (x->nfree == 0)
        abort(); /* count_slots() is an upper bound: a bug */
    slot = x->free_slots[--x->nfree];
    r = &x->req[slot];
    r->id = id;
    r->ready = false;
    r->sampled = false;
    x->slot_of[id] = slot;
    for (unsigned i = 0; i < g->nkeys[id]; i++)
        k[i] =
            (struct tw_key){g->names[g->keys[id][i]], g->lens[g->keys[id][i]]};
    tw_delayed_init(&r->op, try_ready, done1, NULL, x);
    if (tw_purgatory_watch(x->p, &r->op, k, g->nkeys[id], g->timeout) != 0)
        abort(); /* never ready at arrival: it must be watched */
    x->fifo[x->tail] = id;
    x->fifo_due[x->tail++] = due_tick(x->now + g->timeout);
}

static void complete1(struct run1 *x, uint32_t id)
{
    struct purgatory *g = x->g;
    struct req *r = &x->req[x->slot_of[id]];
    uint16_t key = g->keys[id][0];

    r->ready = true;
    r->sampled = id % PURG_SAMPLE == 0;
    if (r->sampled)
        x->t_event = clock_now_ns();
    x->completed +=
        (uint64_t)tw_purgatory_check(x->p, g->names[key], g->lens[key]);
    x->checks++;
}

/* The whole replay; false if the hard stop cut it. */
static bool replay1(struct run1 *x)
{
    struct purgatory *g = x->g;
    uint64_t tick = 0;

    for (uint64_t k = 0; k < g->nev; k++) {
        const struct event *e = &g->ev[k];

        if (e->time / BENCH_TICK_NS > tick) {
            tick = e->time / BENCH_TICK_NS;
            advance1(x, tick * BENCH_TICK_NS);
            if ((tick & 255) == 0 && stop_hit())
                return false;
        }
        x->now = e->time;
        if (e->kind == EV_ARRIVE)
            arrive1(x, e->req);
        else
            complete1(x, e->req);
    }
    advance1(x, (tick + 1) * BENCH_TICK_NS + g->timeout + BENCH_TICK_NS);
    return true;
}

static bool run1_init(struct run1 *x, struct purgatory *g,
                      const struct impl *im, void *ctx)
{
    struct tw_purgatory_timer tm = {arm, disarm, x};
    struct tw_purgatory_config cfg;

    *x = (struct run1){.g = g, .im = im, .ctx = ctx};
    x->req = calloc(g->slots, sizeof(*x->req));
    x->slot_of = malloc(g->requests * sizeof(*x->slot_of));
    x->free_slots = malloc(g->slots * sizeof(*x->free_slots));
    x->fifo = malloc(g->requests * sizeof(*x->fifo));
    x->fifo_due = malloc(g->requests * sizeof(*x->fifo_due));
    x->maxlat = g->requests / PURG_SAMPLE + 1;
    x->lat = malloc(x->maxlat * sizeof(*x->lat));
    tw_purgatory_config_init(&cfg);
    cfg.timer = &tm;
    x->p = tw_purgatory_create(&cfg, NULL);
    for (uint64_t i = 0; i < g->slots; i++)
        x->free_slots[x->nfree++] = (uint32_t)(g->slots - 1 - i);
    return x->req && x->slot_of && x->free_slots && x->fifo && x->fifo_due &&
           x->lat && x->p;
}

static void run1_free(struct run1 *x)
{
    tw_purgatory_destroy(x->p);
    free(x->req);
    free(x->slot_of);
    free(x->free_slots);
    free(x->fifo);
    free(x->fifo_due);
    free(x->lat);
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static double p99(uint64_t *v, uint64_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), by_value);
    return (double)v[(n * 99) / 100];
}

static void once1(struct purgatory *g, const struct impl *im,
                  struct wl_result *out, bool timed)
{
    void *ctx = wl_create(im, g->slots, 3, out);
    struct run1 x;
    uint64_t t0, t1;
    bool whole;

    if (!ctx)
        return;
    if (!run1_init(&x, g, im, ctx)) {
        fprintf(stderr, "twbench: purgatory: out of memory\n");
        exit(1);
    }
    /* CPU time of this thread: what one core does, whatever else the
     * (shared) machine runs meanwhile. */
    tries = 0;
    t0 = clock_cpu_ns();
    whole = replay1(&x);
    t1 = clock_cpu_ns();
    run1_free(&x);
    im->destroy(ctx);
    if (!whole || stop_hit())
        return;
    wl_check_fired(out, 0, x.fired, g->expected_expired);
    wl_check_fired(out, 0, x.expired, g->expected_expired);
    wl_check_fired(out, 0, x.completed, g->requests - g->expected_expired);
    if (!timed)
        return;
    wl_add(out, 0, (double)g->requests * 1e9 / (double)(t1 - t0));
    wl_add(out, 1, (double)(t1 - t0) / (double)g->requests);
    wl_add(out, 2, p99(x.lat, x.nlat));
    if (x.checks)
        wl_add(out, 8, (double)tries / (double)x.checks);
}

/* ---- two threads, over the service ----------------------------------------
 */

struct req2 {
    struct tw_delayed op;
    atomic_bool ready;
};

struct run2 {
    struct purgatory *g;
    struct tw_purgatory *p;
    struct req2 *req;
    uint64_t n;
    bool scaled;    /* timeouts scaled by the replay's speed */
    uint64_t start; /* the replay's start, clock_now_ns() */
    atomic_uint_fast64_t done;
};

struct half {
    struct run2 *x;
    struct event *ev; /* this thread's events, in order */
    uint64_t nev;
    bool failed;
    uint64_t timeout; /* the watches' timeout now, ns */
    unsigned watches; /* made so far, for PURG_2T_CLOCK_EVERY */
    uint64_t tries, checks;
};

/* The timeout of a watch made at sequence time e->time: the sequence's,
 * in a scaled run times this thread's real time so far over the sequence
 * time it has replayed (read once in PURG_2T_CLOCK_EVERY watches: the
 * clock costs as much as a third of a watch), at least a tick. */
static uint64_t timeout_for(struct half *h, const struct event *e)
{
    struct run2 *x = h->x;

    if (!x->scaled)
        return x->g->timeout;
    if (h->watches++ % PURG_2T_CLOCK_EVERY == 0) {
        double real = (double)(clock_now_ns() - x->start);
        double seq =
            e->time > BENCH_TICK_NS ? (double)e->time : (double)BENCH_TICK_NS;

        h->timeout = (uint64_t)((double)x->g->timeout * real / seq);
        if (h->timeout < BENCH_TICK_NS)
            h->timeout = BENCH_TICK_NS;
    }
    return h->timeout;
}

static bool try2(struct tw_delayed *op, void *arg)
{
    (void)arg;
    tries++;
    return atomic_load_explicit(&TW_CONTAINER_OF(op, struct req2, op)->ready,
                                memory_order_acquire);
}

static void done2(struct tw_delayed *op, void *arg)
{
    (void)op;
    atomic_fetch_add_explicit(&((struct run2 *)arg)->done, 1,
                              memory_order_relaxed);
}

static void *replay_half(void *arg)
{
    struct half *h = arg;
    struct run2 *x = h->x;
    struct purgatory *g = x->g;

    for (uint64_t k = 0; k < h->nev; k++) {
        const struct event *e = &h->ev[k];
        struct req2 *r = &x->req[e->req];
        struct tw_key key[3];

        if (e->kind == EV_COMPLETE) {
            uint16_t kk = g->keys[e->req][0];

            atomic_store_explicit(&r->ready, true, memory_order_release);
            tw_purgatory_check(x->p, g->names[kk], g->lens[kk]);
            h->checks++;
            continue;
        }
        for (unsigned i = 0; i < g->nkeys[e->req]; i++)
            key[i] = (struct tw_key){g->names[g->keys[e->req][i]],
                                     g->lens[g->keys[e->req][i]]};
        if (tw_purgatory_watch(x->p, &r->op, key, g->nkeys[e->req],
                               timeout_for(h, e)) < 0)
            h->failed = true;
    }
    h->tries = tries;
    return NULL;
}

/* Deal the events of the first x->n requests to the two halves by the
 * request's parity, before the clock starts. Returns false without
 * memory. */
static bool deal(struct run2 *x, struct half h[2])
{
    const struct purgatory *g = x->g;

    for (int i = 0; i < 2; i++) {
        h[i].nev = 0;
        h[i].ev = malloc(g->nev * sizeof(*h[i].ev));
        if (!h[i].ev)
            return false;
    }
    for (uint64_t k = 0; k < g->nev; k++) {
        const struct event *e = &g->ev[k];

        if (e->req < x->n)
            h[e->req % 2].ev[h[e->req % 2].nev++] = *e;
    }
    return true;
}

/* CPU time of the whole process: every thread, the service's included. */
static uint64_t process_cpu_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* Wait, sleeping (a yield loop would add its own CPU to the figure), until
 * every request has its answer or the deadline passes. */
static void wait_answers(struct run2 *x, uint64_t end)
{
    struct timespec nap = {0, 1000000};

    while (atomic_load(&x->done) < x->n && clock_now_ns() < end)
        nanosleep(&nap, NULL);
}

/* Notes metrics first..last of out. */
static void note_range(struct wl_result *out, unsigned first, unsigned last,
                       const char *what, unsigned long long a,
                       unsigned long long b)
{
    for (unsigned m = first; m <= last; m++)
        wl_note(out, m, what, a, b);
}

/* What one two-thread run measured (0 where it did not run). */
struct run2_figures {
    double per_s, per_cpu_s; /* requests per second of wall, of CPU time */
    double tries_per_check;
};

/* Two threads over the service, as fast as they go, with the sequence's
 * timeout or (scaled) with timeouts scaled by the replay's speed. Notes go
 * to metrics first..last. */
static void twice(struct purgatory *g, struct wl_result *out, bool scaled,
                  unsigned first, unsigned last, struct run2_figures *f)
{
    struct tw_service_config scfg;
    struct tw_purgatory_config pcfg;
    struct tw_service *s;
    struct run2 x = {.g = g, .scaled = scaled};
    struct half h[2] = {{.x = &x}, {.x = &x}};
    pthread_t th[2];
    uint64_t t0, t1, c0, c1;

    *f = (struct run2_figures){0};
    x.n = g->requests < PURG_2T_MAX ? g->requests : PURG_2T_MAX;
    x.req = calloc(x.n, sizeof(*x.req));
    tw_service_config_init(&scfg, TW_HIER);
    s = tw_service_create(&scfg, NULL);
    tw_purgatory_config_init(&pcfg);
    pcfg.service = s;
    x.p = s ? tw_purgatory_create(&pcfg, NULL) : NULL;
    if (!x.req || !x.p || !deal(&x, h)) {
        free(h[0].ev);
        free(h[1].ev);
        note_range(out, first, last, "not run: no memory for the service run",
                   0, 0);
        free(x.req);
        tw_service_destroy(s);
        return;
    }
    for (uint64_t i = 0; i < x.n; i++)
        tw_delayed_init(&x.req[i].op, try2, done2, NULL, &x);
    c0 = process_cpu_ns();
    t0 = x.start = clock_now_ns();
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, replay_half, &h[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    t1 = clock_now_ns();
    /* The rest expire on the worker, in real time. */
    wait_answers(&x, t1 + 10 * g->timeout + UINT64_C(2000000000));
    c1 = process_cpu_ns();
    if (atomic_load(&x.done) != x.n || h[0].failed || h[1].failed)
        note_range(out, first, last, "WRONG: %llu of %llu requests answered",
                   (unsigned long long)atomic_load(&x.done),
                   (unsigned long long)x.n);
    tw_purgatory_destroy(x.p);
    tw_service_destroy(s);
    free(x.req);
    free(h[0].ev);
    free(h[1].ev);
    if (x.n < g->requests)
        note_range(out, first, last,
                   "the first %llu requests (one operation each)",
                   (unsigned long long)x.n, 0);
    f->per_s = (double)x.n * 1e9 / (double)(t1 - t0);
    if (c1 > c0)
        f->per_cpu_s = (double)x.n * 1e9 / (double)(c1 - c0);
    if (h[0].checks + h[1].checks)
        f->tries_per_check = (double)(h[0].tries + h[1].tries) /
                             (double)(h[0].checks + h[1].checks);
}

static void purgatory_run(void *seq, const struct impl *im,
                          struct wl_plan *plan, struct wl_result *out)
{
    struct purgatory *g = seq;
    struct run2_figures f;

    /* The two-thread run once per cell, in its first call, before the
     * repetitions: the runner plans the next call from the last
     * repetition's time (wl_plan.rep_ns). */
    if (strcmp(im->name, "hier") != 0) {
        note_range(out, 3, 7,
                   "not run: the two-thread run is over the service, "
                   "which runs the library's wheel (see hier)",
                   0, 0);
    } else if (plan->round == 0) {
        twice(g, out, false, 3, 5, &f);
        wl_add(out, 3, f.per_s);
        wl_add(out, 4, f.per_cpu_s);
        wl_add(out, 5, f.tries_per_check);
        twice(g, out, true, 6, 7, &f);
        wl_add(out, 6, f.per_cpu_s);
        wl_add(out, 7, f.tries_per_check);
    }
    if (plan->warmup)
        once1(g, im, out, false);
    for (unsigned r = 0; wl_more(plan, r); r++)
        once1(g, im, out, true);
}

static void purgatory_release(void *seq)
{
    struct purgatory *g = seq;

    free(g->ev);
    free(g->keys);
    free(g->nkeys);
    free(g);
}

static const struct wl_metric metrics[] = {
    {"requests_per_s", "requests/s", true,
     "Purgatory throughput, one thread, requests per CPU second"},
    {"ns_per_request", "ns", false,
     "Purgatory, one thread, CPU ns per request"},
    {"p99_complete_ns", "ns", false,
     "Purgatory, completing event to on_complete, p99, ns"},
    {"requests_per_s_2threads", "requests/s", true,
     "Purgatory throughput, two threads over the service, requests per "
     "second"},
    {"requests_per_cpu_s_2threads", "requests/s", true,
     "Purgatory throughput, two threads over the service, requests per "
     "CPU second of the process (every thread, the service's included)"},
    {"tries_per_check_2threads", "tries", false,
     "Purgatory, two threads over the service, try_complete calls per "
     "check"},
    {"requests_per_cpu_s_2threads_scaled", "requests/s", true,
     "Purgatory throughput, two threads over the service, timeouts scaled "
     "by the replay speed, requests per CPU second of the process"},
    {"tries_per_check_2threads_scaled", "tries", false,
     "Purgatory, two threads, timeouts scaled, try_complete calls per "
     "check"},
    {"tries_per_check", "tries", false,
     "Purgatory, one thread, try_complete calls per check"},
};

const struct workload wl_purgatory = {
    .name = "purgatory",
    .about =
        "Kafka's purgatory performance test through the purgatory API "
        "(timewheel/purgatory.h). Requests arrive as a Poisson process "
        "(100,000 per virtual second by default); each is watched on 1-3 "
        "of 1,000 keys with a 200 ms timeout, and its completing event "
        "comes after a log-normal latency fixed by its median and 75th "
        "percentile (20 ms and 60 ms): the completer marks it ready and "
        "calls tw_purgatory_check() on one of its keys, which tries every "
        "request watched there. About 8% time out first. One thread: the "
        "same purgatory over each implementation's timers (the caller's-"
        "timer mode; the workload hands due timeouts to "
        "tw_purgatory_expire() after each advance), on the virtual clock, "
        "as fast as it goes, measured in the thread's CPU time (what one "
        "core sustains on a shared machine). The p99 delay is from the check "
        "to the "
        "request's on_complete, one completion in 8 timed. Two threads: "
        "the purgatory over the service (real-time timeouts on its worker), "
        "each thread replaying half the requests on the shared keys, at "
        "most 10^6 requests, in real time from the start of both threads "
        "until both have replayed their half, and in the process's CPU "
        "time (both threads, the service's worker, the main thread "
        "sleeping) from their start until every request has its answer. "
        "That flood replays several times faster than the sequence's clock "
        "while its timeouts are real time, so every key holds several "
        "times the watchers it holds with one thread. The scaled run "
        "replays as fast, with each watch's timeout scaled by how fast its "
        "thread has replayed the sequence so far, so that the keys hold "
        "what they hold with one thread: the figure comparable with the "
        "one-thread one, in the process's CPU time. Tries per check (calls "
        "of the bench's try_complete per tw_purgatory_check()) are counted "
        "in the one-thread, flood and scaled runs and show whether the keys "
        "held alike.",
    .x_label = "requests",
    .nvariants = 1,
    .sizes = {[SUITE_QUICK] = {1000000},
              [SUITE_FULL] = {1000000, 10000000},
              [SUITE_SMOKE] = {10000}},
    WL_METRICS(metrics),
    .prepare = purgatory_prepare,
    .run = purgatory_run,
    .release = purgatory_release,
};
