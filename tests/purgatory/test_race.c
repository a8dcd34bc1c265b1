/*
 * The purgatory's race test (suite purgatory_race), run plain, under TSan
 * and under valgrind: four threads watch operations on 1-3 keys out of
 * 1,000 and complete them by key while their timeouts fire on the service's
 * worker (or executor) and keys are cancelled now and then; then stop hands
 * back the rest. Asserted exactly, per operation and in total:
 *  - created == completed + expired + cancelled + handed back, and the
 *    purgatory's counters say the same;
 *  - on_complete ran exactly once for every operation not handed back, and
 *    never for one handed back;
 *  - on_expire ran only for the operations whose timeout won (state
 *    EXPIRED), always before their on_complete;
 *  - every block the purgatory and the service allocated came back (a
 *    counting allocator installed with tw_set_allocator()).
 *
 * Size: TW_PURGATORY_OPS operations (default 40,000; 10,000 under valgrind)
 * so that CI runs it in seconds under the sanitizers. `make purgatory-race`
 * runs it with 10^6 (tests/extra.mk). The seed is fixed and printed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "timewheel.h"
#include "util.h"

#define THREADS 4
#define NKEYS 1000
#define SEED UINT64_C(20261123)

static _Atomic long live_bytes;

static void *counting_alloc(void *ctx, size_t size)
{
    void *p = malloc(size);

    (void)ctx;
    if (p)
        atomic_fetch_add(&live_bytes, (long)size);
    return p;
}

static void counting_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    if (p)
        atomic_fetch_sub(&live_bytes, (long)size);
    free(p);
}

struct rop {
    struct tw_delayed op;
    atomic_bool ready;
    atomic_int completes, expires, handed_back;
    atomic_int expired_before_complete;
    uint16_t key[3];
    uint8_t nkeys;
};

struct race {
    struct tw_purgatory *p;
    struct rop *ops;
    long n;
    char names[NKEYS][12];
    size_t lens[NKEYS];
    _Atomic long cancel_calls;
};

struct worker {
    struct race *race;
    unsigned id;
    uint64_t rng;
};

static uint64_t next(uint64_t *s)
{
    /* xorshift64*: enough for picking keys and delays. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static bool try_ready(struct tw_delayed *op, void *arg)
{
    (void)arg;
    return atomic_load(&TW_CONTAINER_OF(op, struct rop, op)->ready);
}

static void on_complete(struct tw_delayed *op, void *arg)
{
    struct rop *r = TW_CONTAINER_OF(op, struct rop, op);

    (void)arg;
    atomic_store(&r->expired_before_complete, atomic_load(&r->expires));
    atomic_fetch_add(&r->completes, 1);
}

static void on_expire(struct tw_delayed *op, void *arg)
{
    (void)arg;
    atomic_fetch_add(&TW_CONTAINER_OF(op, struct rop, op)->expires, 1);
}

static void handback(struct tw_delayed *op, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&TW_CONTAINER_OF(op, struct rop, op)->handed_back, 1);
}

static void pick_keys(struct worker *w, struct rop *r, struct tw_key *k)
{
    struct race *g = w->race;

    r->nkeys = (uint8_t)(1 + next(&w->rng) % 3);
    for (unsigned i = 0; i < r->nkeys; i++) {
        bool dup;

        do {
            r->key[i] = (uint16_t)(next(&w->rng) % NKEYS);
            dup = false;
            for (unsigned j = 0; j < i; j++)
                dup |= r->key[j] == r->key[i];
        } while (dup);
        k[i] = (struct tw_key){g->names[r->key[i]], g->lens[r->key[i]]};
    }
}

/* One operation: watch it, then make one of this thread's last 64 ready
 * and check one of its keys; now and then cancel a key. */
static void step(struct worker *w, long lo, long j)
{
    struct race *g = w->race;
    struct rop *r = &g->ops[j], *m;
    struct tw_key k[3];
    uint16_t key;
    int rc;

    pick_keys(w, r, k);
    /* One in 20 is ready before it is watched: completed at once. */
    if (next(&w->rng) % 20 == 0)
        atomic_store(&r->ready, true);
    /* 0-20 ms: many expire while the threads still run. */
    rc = tw_purgatory_watch(g->p, &r->op, k, r->nkeys,
                            next(&w->rng) % (20 * MS + 1));
    cr_assert(rc == 0 || rc == 1, "watch: %d", rc);
    /* A recent one, so that completions keep up with the timeouts at any
     * speed (plain, TSan, valgrind). */
    m = &g->ops[j - (long)(next(&w->rng) %
                           (uint64_t)(j - lo < 64 ? j - lo + 1 : 64))];
    atomic_store(&m->ready, true);
    key = m->key[next(&w->rng) % m->nkeys];
    cr_assert_geq(tw_purgatory_check(g->p, g->names[key], g->lens[key]), 0);
    if (next(&w->rng) % 500 == 0) {
        key = (uint16_t)(next(&w->rng) % NKEYS);
        cr_assert_geq(tw_purgatory_cancel_key(g->p, g->names[key], g->lens[key],
                                              handback, NULL),
                      0);
        atomic_fetch_add(&g->cancel_calls, 1);
    }
}

static void *run_worker(void *arg)
{
    struct worker *w = arg;
    long per = w->race->n / THREADS, lo = per * w->id;

    for (long j = lo; j < lo + per; j++)
        step(w, lo, j);
    return NULL;
}

static long ops_wanted(void)
{
    const char *env = getenv("TW_PURGATORY_OPS");
    const char *pre = getenv("LD_PRELOAD");

    if (env && atol(env) >= THREADS)
        return atol(env) / THREADS * THREADS;
    if (pre && strstr(pre, "vgpreload"))
        return 10000;
    return 40000;
}

/* Every operation accounted for exactly; returns the totals by state. */
static void account(struct race *g, uint64_t *by_state)
{
    for (long i = 0; i < g->n; i++) {
        struct rop *r = &g->ops[i];
        int st = tw_delayed_state(&r->op);

        by_state[st]++;
        if (st == TW_DELAYED_CANCELLED) {
            cr_assert_eq(r->handed_back, 1, "op %ld", i);
            cr_assert_eq(r->completes + r->expires, 0, "op %ld", i);
            continue;
        }
        cr_assert(st == TW_DELAYED_COMPLETED || st == TW_DELAYED_EXPIRED,
                  "op %ld in state %d", i, st);
        cr_assert_eq(r->completes, 1, "op %ld: on_complete %d times", i,
                     (int)r->completes);
        cr_assert_eq(r->handed_back, 0, "op %ld", i);
        cr_assert_eq(r->expires, st == TW_DELAYED_EXPIRED, "op %ld", i);
        cr_assert_eq(r->expired_before_complete, r->expires, "op %ld", i);
    }
}

static void race(unsigned executors)
{
    static const struct tw_allocator a = {counting_alloc, counting_free, NULL};
    static struct race g;
    struct worker w[THREADS];
    struct tw_purgatory_config pcfg;
    struct tw_purgatory_stats st;
    struct tw_service *s;
    pthread_t th[THREADS];
    uint64_t by_state[5] = {0};
    int64_t returned;

    cr_assert_eq(tw_set_allocator(&a), 0);
    g.n = ops_wanted();
    printf("purgatory_race: %ld operations, %d threads, executors %u, "
           "seed %llu\n",
           g.n, THREADS, executors, (unsigned long long)SEED);
    g.ops = calloc((size_t)g.n, sizeof(*g.ops));
    cr_assert_not_null(g.ops);
    for (int i = 0; i < NKEYS; i++)
        g.lens[i] = (size_t)snprintf(g.names[i], 12, "topic-%d", i);
    for (long i = 0; i < g.n; i++)
        tw_delayed_init(&g.ops[i].op, try_ready, on_complete, on_expire, NULL);
    s = service_pool(TW_HIER, executors);
    tw_purgatory_config_init(&pcfg);
    pcfg.service = s;
    g.p = tw_purgatory_create(&pcfg, NULL);
    cr_assert_not_null(g.p);
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (struct worker){&g, i, SEED * (i + 1) | 1};
        cr_assert_eq(pthread_create(&th[i], NULL, run_worker, &w[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_join(th[i], NULL), 0);
    returned = tw_purgatory_stop(g.p, handback, NULL);
    cr_assert_geq(returned, 0);
    /* Joining the service's threads ends every expiry in flight. */
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    account(&g, by_state);
    cr_assert_eq(tw_purgatory_stats(g.p, &st), 0);
    printf("purgatory_race: completed %llu (at once %llu), expired %llu, "
           "cancelled %llu (%ld calls), handed back by stop %lld\n",
           (unsigned long long)st.completed, (unsigned long long)st.at_once,
           (unsigned long long)st.expired, (unsigned long long)st.cancelled,
           (long)g.cancel_calls, (long long)returned);
    cr_assert_eq(st.watched, (uint64_t)g.n);
    cr_assert_eq(st.completed + st.expired + st.cancelled + st.returned,
                 (uint64_t)g.n);
    cr_assert_eq(st.completed, by_state[TW_DELAYED_COMPLETED]);
    cr_assert_eq(st.expired, by_state[TW_DELAYED_EXPIRED]);
    cr_assert_eq(st.cancelled + st.returned, by_state[TW_DELAYED_CANCELLED]);
    cr_assert_eq(st.returned, (uint64_t)returned);
    cr_assert_eq(st.watching, 0);
    cr_assert_eq(st.keys, 0);
    /* A race test that did not race proves little. */
    cr_assert_gt(st.completed, 0);
    cr_assert_gt(st.expired, 0);
    cr_assert_eq(tw_purgatory_destroy(g.p), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(atomic_load(&live_bytes), 0, "%ld bytes not given back",
                 (long)atomic_load(&live_bytes));
    free(g.ops);
}

Test(purgatory_race, four_threads_complete_while_timeouts_fire_on_worker,
     .timeout = 600)
{
    race(0);
}

Test(purgatory_race, four_threads_complete_while_timeouts_fire_on_executor,
     .timeout = 600)
{
    race(2);
}
