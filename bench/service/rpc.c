/*
 * rpc.c: the RPC pattern, the service's side (bench/netty/RpcFigures.java
 * is Netty's): a steady state of outstanding requests, each with a 3 s
 * timeout that is cancelled 0.1-1 ms (uniform) after it was scheduled, as
 * a client cancels a request's timeout when the answer comes.
 *
 * Each of P producer threads (1 or 2) keeps N / P requests outstanding in
 * a FIFO: it schedules them all (tw_service_schedule with a handle), then
 * in a loop takes the oldest, waits until its cancel time if that is still
 * ahead, cancels it with tw_handle_cancel_release() (Netty's cancel() also
 * lets go of the timeout) and schedules a new one in its place. So N are
 * always outstanding, and a request lives 0.1-1 ms or, when the threads
 * cannot go round N that fast, for as long as a lap of the FIFO takes. A
 * cell runs RPC_RUN_NS; N is 10^4 and 10^5 (not --n).
 *
 * Rows per cell (workload rpc-Pp-1eK, n = N = 10^K):
 *   pairs_per_s          schedule + cancel pairs per second, all threads
 *   cpu_ns_per_pair      the process's CPU time (getrusage) per pair
 *   rss_bytes_per_req_mean, _max
 *                        resident memory (/proc/self/statm) sampled every
 *                        RPC_SAMPLE_NS during the churn, less the resident
 *                        memory before the N were scheduled, per request
 *                        outstanding: mean and max over the samples
 *   rss_static_bytes_per_req
 *                        the same once the N are scheduled and taken in,
 *                        before the churn: the static figure
 *   rss_max_over_static  the two divided: the target is at most 2
 *   alloc_bytes_per_req_mean, _max, alloc_static_bytes_per_req
 *                        the same from the allocator's count of bytes
 *                        handed out (jemalloc's stats.allocated), which
 *                        pages and the allocator's caches do not blur
 *   fired                timeouts that ran (the cancel came too late: 3 s)
 *
 * Before each cell the allocator gives its unused pages back (jemalloc's
 * arena purge, malloc_trim with ALLOC=libc), so that a cell does not reuse
 * the pages an earlier one left resident and the RSS it adds is its own.
 */
#define _DEFAULT_SOURCE /* malloc_trim, mallinfo2 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef TW_ALLOC_LIBC
#include <malloc.h>
#else
/* The library's private jemalloc (lib/core/jemalloc.c): tw_je_ names. */
#define JEMALLOC_NO_DEMANGLE 1
#include <jemalloc/jemalloc.h>
#endif

#include "svcbench.h"

#define US UINT64_C(1000)
#define RPC_TIMEOUT (3 * SEC)   /* the request's timeout */
#define RPC_MIN (100 * US)      /* its answer comes 0.1 ms .. */
#define RPC_SPAN (900 * US)     /* .. 1 ms after it was sent */
#define RPC_RUN_NS (2 * SEC)    /* the churn's length, per cell */
#define RPC_SAMPLE_NS (10 * MS) /* how often memory is sampled */
#define RPC_SEED UINT64_C(0x2545f4914f6cdd1d)

struct req {
    struct tw_handle *h;
    uint64_t answer_at; /* when its cancel is due */
};

struct rpc_prod {
    struct tw_service *s;
    struct req *q;
    uint64_t n;     /* requests this thread keeps outstanding */
    uint64_t pairs; /* cancels followed by a schedule */
    uint64_t fired; /* cancels that found the timeout run */
    uint64_t seed;
    atomic_int *phase;  /* 0 fill, 1 go, 2 stop */
    atomic_int *filled; /* threads done filling */
    pthread_t tid;
};

static atomic_int rpc_seen; /* sentinel callbacks run */

static void rpc_sentinel(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
    atomic_fetch_add(&rpc_seen, 1);
}

/* The worker has taken in everything scheduled before this call. */
static void rpc_caught_up(struct tw_service *s)
{
    int before = atomic_load(&rpc_seen);

    put(s, 0, rpc_sentinel, NULL, NULL);
    while (atomic_load(&rpc_seen) == before)
        sleep_until(now_ns() + 100 * US);
}

static uint64_t rss_bytes(void)
{
    unsigned long size = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%lu %lu", &size, &res) != 2)
            res = 0;
        fclose(f);
    }
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Give unused pages back to the system. */
static void purge(void)
{
#ifdef TW_ALLOC_LIBC
    malloc_trim(0);
#else
    char name[64];

    snprintf(name, sizeof(name), "arena.%u.purge", 4096u); /* all arenas */
    je_mallctl(name, NULL, NULL, NULL, 0);
#endif
}

static void send_one(struct rpc_prod *p, struct req *r, uint64_t now)
{
    put(p->s, RPC_TIMEOUT, nop_cb, NULL, &r->h);
    r->answer_at = now + RPC_MIN + next_rand(&p->seed) % (RPC_SPAN + 1);
}

/* The oldest request's answer: cancel it, send a new one in its place. */
static void answer_one(struct rpc_prod *p, struct req *r)
{
    uint64_t now = now_ns();

    while (now < r->answer_at)
        now = now_ns();
    if (tw_handle_cancel_release(r->h) != 1)
        p->fired++;
    send_one(p, r, now);
    p->pairs++;
}

static void *rpc_produce(void *arg)
{
    struct rpc_prod *p = arg;
    uint64_t i = 0;

    for (uint64_t k = 0; k < p->n; k++)
        send_one(p, &p->q[k], now_ns());
    atomic_fetch_add(p->filled, 1);
    while (atomic_load(p->phase) == 0)
        sched_yield();
    while (atomic_load_explicit(p->phase, memory_order_relaxed) == 1) {
        for (int k = 0; k < 256; k++) {
            answer_one(p, &p->q[i]);
            i = i + 1 == p->n ? 0 : i + 1;
        }
    }
    return NULL;
}

/* Memory samples over the churn, per outstanding request. */
struct samples {
    double rss_sum, rss_max, alloc_sum, alloc_max;
    unsigned k;
};

static void sample(struct samples *m, uint64_t rss0, uint64_t a0, uint64_t n)
{
    double rss = ((double)rss_bytes() - (double)rss0) / (double)n;
    double al = ((double)allocated_bytes() - (double)a0) / (double)n;

    m->rss_sum += rss;
    m->alloc_sum += al;
    if (!m->k || rss > m->rss_max)
        m->rss_max = rss;
    if (!m->k || al > m->alloc_max)
        m->alloc_max = al;
    m->k++;
}

static void rpc_start(struct rpc_prod *p, unsigned np, struct tw_service *s,
                      uint64_t n, atomic_int *phase, atomic_int *filled)
{
    for (unsigned t = 0; t < np; t++) {
        p[t] = (struct rpc_prod){.s = s,
                                 .n = n / np,
                                 .phase = phase,
                                 .filled = filled,
                                 .seed = RPC_SEED + t};
        p[t].q = calloc(p[t].n, sizeof(struct req));
        if (!p[t].q || pthread_create(&p[t].tid, NULL, rpc_produce, &p[t])) {
            fprintf(stderr, "svcbench: rpc: no memory or thread\n");
            exit(2);
        }
    }
    while (atomic_load(filled) < (int)np)
        sleep_until(now_ns() + MS);
}

static void rpc_rows(const struct impl *im, unsigned np, uint64_t n,
                     const struct rpc_prod *p, const double stat[2],
                     const struct samples *m, uint64_t wall, uint64_t cpu)
{
    char name[32];
    uint64_t pairs = 0, fired = 0;

    for (unsigned t = 0; t < np; t++) {
        pairs += p[t].pairs;
        fired += p[t].fired;
    }
    snprintf(name, sizeof(name), "rpc-%up-1e%d", np, n == 10000 ? 4 : 5);
    emit(name, im->name, n, "pairs_per_s", (double)pairs * 1e9 / (double)wall,
         "1/s");
    emit(name, im->name, n, "cpu_ns_per_pair", (double)cpu / (double)pairs,
         "ns");
    emit(name, im->name, n, "rss_bytes_per_req_mean", m->rss_sum / m->k, "B");
    emit(name, im->name, n, "rss_bytes_per_req_max", m->rss_max, "B");
    emit(name, im->name, n, "rss_static_bytes_per_req", stat[0], "B");
    emit(name, im->name, n, "rss_max_over_static", m->rss_max / stat[0], "x");
    emit(name, im->name, n, "alloc_bytes_per_req_mean", m->alloc_sum / m->k,
         "B");
    emit(name, im->name, n, "alloc_bytes_per_req_max", m->alloc_max, "B");
    emit(name, im->name, n, "alloc_static_bytes_per_req", stat[1], "B");
    emit(name, im->name, n, "fired", (double)fired, "1");
}

static void rpc_cell(const struct impl *im, unsigned np, uint64_t n)
{
    struct tw_service *s = make(im->mode, 0);
    struct rpc_prod p[2];
    atomic_int phase = 0, filled = 0;
    struct samples m = {0};
    uint64_t rss0, a0, t0, c0, end;
    double stat[2];

    rpc_caught_up(s);
    purge();
    rss0 = rss_bytes();
    a0 = allocated_bytes();
    rpc_start(p, np, s, n, &phase, &filled);
    rpc_caught_up(s);
    stat[0] = ((double)rss_bytes() - (double)rss0) / (double)n;
    stat[1] = ((double)allocated_bytes() - (double)a0) / (double)n;
    t0 = now_ns();
    c0 = cpu_ns();
    atomic_store(&phase, 1);
    for (end = t0 + RPC_RUN_NS; now_ns() < end;) {
        sleep_until(now_ns() + RPC_SAMPLE_NS);
        sample(&m, rss0, a0, n);
    }
    atomic_store(&phase, 2);
    for (unsigned t = 0; t < np; t++)
        pthread_join(p[t].tid, NULL);
    rpc_rows(im, np, n, p, stat, &m, now_ns() - t0, cpu_ns() - c0);
    for (unsigned t = 0; t < np; t++) {
        for (uint64_t k = 0; k < p[t].n; k++)
            tw_handle_cancel_release(p[t].q[k].h);
        free(p[t].q);
    }
    must(tw_service_destroy(s), "destroy");
}

void fig_rpc(const struct impl *im)
{
    for (unsigned np = 1; np <= 2; np++)
        for (uint64_t n = 10000; n <= 100000; n *= 10)
            rpc_cell(im, np, n);
}
