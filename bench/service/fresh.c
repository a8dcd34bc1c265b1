/*
 * fresh.c: what a producer thread new to the service pays against one that
 * has scheduled before (issue 21 part 5). bench/netty/Figures.java's
 * runFresh() runs the same through Netty's HashedWheelTimer.
 *
 *   fresh-thread  On one service, a warm thread (a thread kept for the whole
 *                 run, which has already scheduled and cancelled a round of
 *                 N timers) and a brand-new thread each schedule N timers
 *                 with handles, due 1..60 s out (none fires), and cancel
 *                 them; the next burst starts once the worker has freed
 *                 them. Measured over the N schedules only: thread CPU ns
 *                 and wall ns per schedule, and minor page faults per 1,000
 *                 schedules (getrusage RUSAGE_THREAD), for each; then the
 *                 ratios fresh/warm. FRESH_PAIRS pairs, fresh and warm in
 *                 turn, first one then the other; the rows are the medians.
 *   fresh-burst   FRESH_BURSTS bursts of N / FRESH_BURSTS schedules (then
 *                 cancels), each by a new thread, against the same bursts
 *                 from the warm thread, in turn: schedules/s over the bursts'
 *                 scheduling windows and the ratio fresh/warm, thread CPU
 *                 ns per schedule and faults per 1,000 schedules.
 *
 * --warmup K gives the warm thread K more unrecorded rounds first.
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "svcbench.h"

#define FRESH_PAIRS 5   /* fresh/warm pairs of a run: the medians' sample */
#define FRESH_BURSTS 10 /* bursts of fresh-burst */
#define FRESH_SEED UINT64_C(0x2545f4914f6cdd1d)
#define FRESH_REAP_NS (250 * MS) /* longer than the worker's reap period */

/* One burst: its input and what it measured. */
struct burst {
    struct tw_service *s;
    struct tw_handle **h;
    uint64_t count, seed;
    uint64_t cpu, wall, faults; /* over the schedules only */
};

static uint64_t thread_faults(void)
{
    struct rusage ru;

    getrusage(RUSAGE_THREAD, &ru);
    return (uint64_t)ru.ru_minflt;
}

/* A delay of 1..60 s: no timer of a burst fires while it runs. */
static uint64_t delay_1s_60s(uint64_t *seed)
{
    return SEC + next_rand(seed) % (59 * SEC + 1);
}

/* Schedule b->count timers, measured, then cancel them all, not. */
static void run_burst(struct burst *b)
{
    uint64_t f0 = thread_faults(), c0 = thread_cpu_ns(), t0 = now_ns();

    for (uint64_t i = 0; i < b->count; i++)
        put(b->s, delay_1s_60s(&b->seed), nop_cb, NULL, &b->h[i]);
    b->wall = now_ns() - t0;
    b->cpu = thread_cpu_ns() - c0;
    b->faults = thread_faults() - f0;
    for (uint64_t i = 0; i < b->count; i++)
        tw_handle_cancel_release(b->h[i]);
}

/* Wait until the worker has taken every cancel and freed the handles. */
static void await_freed(struct tw_service *s)
{
    struct tw_service_stats st;

    do {
        sleep_until(now_ns() + MS);
        must(tw_service_stats(s, &st), "stats");
    } while (st.pending);
    sleep_until(now_ns() + FRESH_REAP_NS);
}

/* New threads of fresh-thread stay alive, parked, until the run ends, as a
 * pool's threads do: jemalloc binds a new thread to the automatic arena
 * with the fewest threads, so each lands on an arena of its own that no
 * earlier burst has freed memory into (8 arenas on 2 cores: the main
 * thread, the worker, the warm thread and FRESH_PAIRS new ones). The
 * threads of fresh-burst end with their burst, and the next may take the
 * arena the last one left. */
struct park {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
};

static struct park park = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                           false};

struct job {
    struct burst *b;
    bool stay;       /* park after the burst */
    atomic_int done; /* the burst is over */
};

static void *burst_thread(void *arg)
{
    struct job *j = arg;

    run_burst(j->b);
    atomic_store(&j->done, 1);
    if (!j->stay)
        return NULL;
    pthread_mutex_lock(&park.mu);
    while (!park.open)
        pthread_cond_wait(&park.cv, &park.mu);
    pthread_mutex_unlock(&park.mu);
    return NULL;
}

/* The parked threads of this run, joined by unpark_all(). */
static pthread_t parked[FRESH_PAIRS];
static int nparked;

/* A burst on a brand-new thread: parked afterwards if stay, else ended. */
static void on_new_thread(struct burst *b, bool stay)
{
    struct job j = {.b = b, .stay = stay};
    pthread_t t;

    if (pthread_create(&t, NULL, burst_thread, &j)) {
        fprintf(stderr, "svcbench: fresh: cannot start a thread\n");
        exit(2);
    }
    if (stay) {
        while (!atomic_load(&j.done))
            sleep_until(now_ns() + MS);
        parked[nparked++] = t;
    } else {
        pthread_join(t, NULL);
    }
}

static void unpark_all(void)
{
    pthread_mutex_lock(&park.mu);
    park.open = true;
    pthread_cond_broadcast(&park.cv);
    pthread_mutex_unlock(&park.mu);
    for (int i = 0; i < nparked; i++)
        pthread_join(parked[i], NULL);
    nparked = 0;
    park.open = false;
}

/* ---- the warm thread: one thread that runs burst after burst ------------ */

struct warm {
    pthread_t t;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct burst *job; /* set by the caller, cleared by the thread */
    bool quit;
};

static void *warm_main(void *arg)
{
    struct warm *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->job && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->job)
            break;
        pthread_mutex_unlock(&w->mu);
        run_burst(w->job);
        pthread_mutex_lock(&w->mu);
        w->job = NULL;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void warm_start(struct warm *w)
{
    *w = (struct warm){0};
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->t, NULL, warm_main, w)) {
        fprintf(stderr, "svcbench: fresh: cannot start a thread\n");
        exit(2);
    }
}

/* Run b on the warm thread and wait for it. */
static void on_warm_thread(struct warm *w, struct burst *b)
{
    pthread_mutex_lock(&w->mu);
    w->job = b;
    pthread_cond_broadcast(&w->cv);
    while (w->job)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

static void warm_stop(struct warm *w)
{
    pthread_mutex_lock(&w->mu);
    w->quit = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->t, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* ---- the figures ----------------------------------------------------------
 */

/* One burst of n on the warm thread (w) or a new one (w NULL; parked after
 * it if stay), the handles freed before it returns. */
static struct burst burst(struct tw_service *s, struct warm *w, bool stay,
                          struct tw_handle **h, uint64_t n, uint64_t seed)
{
    struct burst b = {.s = s, .h = h, .count = n, .seed = seed};

    if (w)
        on_warm_thread(w, &b);
    else
        on_new_thread(&b, stay);
    await_freed(s);
    return b;
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: a handful of values */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];

            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Per pair k: [0] cpu, [1] wall, [2] faults; fresh then warm. */
struct pairs {
    double v[2][3][FRESH_PAIRS];
};

static void record(struct pairs *p, int side, int k, const struct burst *b)
{
    p->v[side][0][k] = (double)b->cpu / (double)b->count;
    p->v[side][1][k] = (double)b->wall / (double)b->count;
    p->v[side][2][k] = (double)b->faults * 1000.0 / (double)b->count;
}

static void emit_pairs(const struct impl *im, uint64_t n, struct pairs *p)
{
    static const char *const side[2] = {"fresh", "warm"};
    static const char *const what[3] = {"cpu_ns_per_op", "wall_ns_per_op",
                                        "faults_per_1k"};
    static const char *const unit[3] = {"ns", "ns", "1"};
    double m[2][3];
    char name[48];

    for (int s = 0; s < 2; s++)
        for (int q = 0; q < 3; q++) {
            m[s][q] = median(p->v[s][q], FRESH_PAIRS);
            snprintf(name, sizeof(name), "%s_%s", side[s], what[q]);
            emit("fresh-thread", im->name, n, name, m[s][q], unit[q]);
        }
    emit("fresh-thread", im->name, n, "ratio_cpu", m[0][0] / m[1][0], "x");
    emit("fresh-thread", im->name, n, "ratio_wall", m[0][1] / m[1][1], "x");
}

static void fresh_thread(const struct impl *im, struct tw_service *s,
                         struct warm *w, struct tw_handle **h, uint64_t n)
{
    struct pairs p;

    for (int k = 0; k < FRESH_PAIRS; k++) {
        bool fresh_first = k % 2 == 0;
        struct burst a =
            burst(s, fresh_first ? NULL : w, true, h, n, FRESH_SEED + k);
        struct burst b =
            burst(s, fresh_first ? w : NULL, true, h, n, FRESH_SEED + k);

        record(&p, fresh_first ? 0 : 1, k, &a);
        record(&p, fresh_first ? 1 : 0, k, &b);
    }
    emit_pairs(im, n, &p);
    unpark_all();
}

/* Sums over bursts: [0] schedules, [1] wall ns, [2] thread CPU ns, [3]
 * minor faults. */
static void add(double sum[4], const struct burst *b)
{
    sum[0] += (double)b->count;
    sum[1] += (double)b->wall;
    sum[2] += (double)b->cpu;
    sum[3] += (double)b->faults;
}

/* FRESH_BURSTS bursts of n / FRESH_BURSTS from new threads and as many
 * from the warm thread, in turn (which goes first alternates). */
static void fresh_burst(const struct impl *im, struct tw_service *s,
                        struct warm *w, struct tw_handle **h, uint64_t n)
{
    uint64_t each = n / FRESH_BURSTS;
    double f[4] = {0}, m[4] = {0}, fr, wr;

    for (int k = 0; k < FRESH_BURSTS; k++) {
        uint64_t seed = FRESH_SEED + 100 + (uint64_t)k;
        struct burst a = burst(s, k % 2 ? w : NULL, false, h, each, seed);
        struct burst b = burst(s, k % 2 ? NULL : w, false, h, each, seed);

        add(k % 2 ? m : f, &a);
        add(k % 2 ? f : m, &b);
    }
    fr = f[0] * 1e9 / f[1];
    wr = m[0] * 1e9 / m[1];
    emit("fresh-burst", im->name, n, "fresh_ops_per_s", fr, "1/s");
    emit("fresh-burst", im->name, n, "warm_ops_per_s", wr, "1/s");
    emit("fresh-burst", im->name, n, "ratio", fr / wr, "x");
    emit("fresh-burst", im->name, n, "fresh_cpu_ns_per_op", f[2] / f[0], "ns");
    emit("fresh-burst", im->name, n, "warm_cpu_ns_per_op", m[2] / m[0], "ns");
    emit("fresh-burst", im->name, n, "fresh_faults_per_1k", f[3] * 1000 / f[0],
         "1");
    emit("fresh-burst", im->name, n, "warm_faults_per_1k", m[3] * 1000 / m[0],
         "1");
}

void fig_fresh(const struct impl *im, const struct sizes *sz, int warmup)
{
    struct tw_service *s = make(im->mode, 0);
    struct tw_handle **h = calloc(sz->timers, sizeof(*h));
    struct warm w;

    if (!h) {
        fprintf(stderr, "svcbench: fresh: out of memory\n");
        exit(2);
    }
    refusals_reset();
    warm_start(&w);
    for (int k = 0; k <= warmup; k++)
        burst(s, &w, false, h, sz->timers, FRESH_SEED - 1 - (uint64_t)k);
    fresh_thread(im, s, &w, h, sz->timers);
    fresh_burst(im, s, &w, h, sz->timers);
    warm_stop(&w);
    must(tw_service_destroy(s), "destroy");
    free(h);
    emit("fresh-thread", im->name, sz->timers, "refused", (double)refusals(),
         "1");
}
