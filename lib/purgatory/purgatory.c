/*
 * The purgatory object: create, stop, destroy, stats, and the small
 * helpers every file shares (the in-try marker, key checks, counters).
 *
 * Stop closes a gate that every watch passes (a count of watches in
 * progress and a closed bit, as the service's schedule gate), waits until
 * no watch is inside, then empties the shards one by one, waiting for
 * records that another thread owns (its try_complete is running) or is
 * still detaching. After that no list holds a record and no watch can
 * add one, so destroy may free the shards.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "purgatory.h"
#include "reserved.h"

_Thread_local const struct tw_purgatory *tw__p_trying;
_Thread_local unsigned tw__p_stripe_ix;

/* Round-robin: two threads that start one after the other get different
 * stripes. */
unsigned tw__p_stripe_assign(void)
{
    static atomic_uint next;

    tw__p_stripe_ix = atomic_fetch_add(&next, 1) % TW__P_STRIPES + 1;
    return tw__p_stripe_ix;
}

int tw__p_key_ok(const void *bytes, size_t len)
{
    if (!bytes || len == 0)
        return -EINVAL;
    return len > TW_PURGATORY_MAX_KEY_LEN ? -E2BIG : 0;
}

/* Over a service sequentially consistent, so that stats can read the
 * outcomes before the watches and never see more outcomes than watches;
 * with one thread a plain increment. */
void tw__p_count(struct tw_purgatory *p, unsigned which)
{
    _Atomic uint64_t *c;

    if (p->threaded) {
        atomic_fetch_add(&tw__p_stripe(p)->count[which], 1);
        return;
    }
    c = &p->stripes[0].count[which]; /* one thread: no need to choose */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

void tw_purgatory_config_init(struct tw_purgatory_config *cfg)
{
    if (cfg)
        *cfg = (struct tw_purgatory_config){0};
}

static unsigned round_pow2(unsigned n)
{
    unsigned r = 1;

    while (r < n)
        r <<= 1;
    return r;
}

static void free_shards(struct tw_purgatory *p, unsigned ready)
{
    tw__p_tick_free(p);
    for (unsigned i = 0; i < ready; i++)
        tw__p_shard_fini(&p->shards[i]);
    tw_free(p->shards, p->nshards * sizeof(*p->shards));
    tw_free(p, sizeof(*p));
}

static int config_ok(const struct tw_purgatory_config *cfg)
{
    if (!cfg || !!cfg->wheel + !!cfg->service + !!cfg->timer != 1 ||
        !tw__reserved_zero(cfg->reserved))
        return -EINVAL;
    if (!cfg->wheel != !cfg->now) /* a wheel needs the loop's clock */
        return -EINVAL;
    if (cfg->timer && (!cfg->timer->arm || !cfg->timer->disarm))
        return -EINVAL;
    return cfg->shards > TW_PURGATORY_MAX_SHARDS ? -EINVAL : 0;
}

/*
 * fork. A purgatory over a service, inherited by a child of fork(), has
 * no thread to fire its timeouts (its service's are not in the child) and
 * may have a shard lock held by a parent thread that is not there either:
 * every call on it answers -ECHILD, tw_purgatory_destroy() at once,
 * freeing nothing (the child's copy of the parent's memory, gone with the
 * child). A pthread_atfork() child handler, installed with the first such
 * purgatory, bumps a generation each purgatory compares with the one it
 * was made in: one load per call. A purgatory over a core wheel or a
 * caller's timer has no thread and no lock of its own: the child may use
 * its copy as the parent did.
 */
atomic_uint tw__p_fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void forked(void)
{
    atomic_fetch_add_explicit(&tw__p_fork_gen, 1, memory_order_relaxed);
}

static void watch_fork(void)
{
    pthread_atfork(NULL, NULL, forked);
}

static struct tw_purgatory *create(const struct tw_purgatory_config *cfg)
{
    unsigned dflt = cfg->service ? TW_PURGATORY_DEFAULT_SERVICE_SHARDS
                                 : TW_PURGATORY_DEFAULT_SHARDS;
    unsigned n = round_pow2(cfg->shards ? cfg->shards : dflt);
    struct tw_purgatory *p = tw_alloc(sizeof(*p));

    if (!p)
        return NULL;
    memset(p, 0, sizeof(*p));
    p->wheel = cfg->wheel;
    p->now = cfg->now;
    p->now_ctx = cfg->now_ctx;
    p->svc = cfg->service;
    p->threaded = cfg->service != NULL;
    if (p->threaded)
        pthread_once(&fork_once, watch_fork);
    p->fork_gen = atomic_load_explicit(&tw__p_fork_gen, memory_order_relaxed);
    if (cfg->timer)
        p->timer = *cfg->timer;
    p->nshards = n;
    p->shards = tw_alloc(n * sizeof(*p->shards));
    if (!p->shards) {
        tw_free(p, sizeof(*p));
        return NULL;
    }
    memset(p->shards, 0, n * sizeof(*p->shards));
    for (unsigned i = 0; i < n; i++) {
        if (tw__p_shard_init(&p->shards[i], p->threaded) < 0) {
            free_shards(p, i);
            return NULL;
        }
    }
    if (p->svc && tw__p_tick_create(p) < 0) {
        free_shards(p, n);
        return NULL;
    }
    return p;
}

void tw__p_free(struct tw_purgatory *p)
{
    free_shards(p, p->nshards);
}

struct tw_purgatory *tw_purgatory_create(const struct tw_purgatory_config *cfg,
                                         int *err)
{
    struct tw_purgatory *p = NULL;
    int rc = config_ok(cfg);

    if (rc == 0) {
        p = create(cfg);
        rc = p ? 0 : -ENOMEM;
    }
    if (err)
        *err = rc;
    return p;
}

/* Counter c summed over the stripes. */
static uint64_t total(const struct tw_purgatory *p, unsigned c)
{
    uint64_t n = 0;

    for (unsigned i = 0; i < TW__P_STRIPES; i++)
        n += atomic_load(&p->stripes[i].count[c]);
    return n;
}

int tw_purgatory_stats(struct tw_purgatory *p, struct tw_purgatory_stats *out)
{
    if (!p || !out)
        return -EINVAL;
    if (tw__p_inherited(p))
        return -ECHILD;
    /* Outcomes first: each is counted after its watch was (on whatever
     * stripe), so every outcome read has its watch read after it. */
    *out = (struct tw_purgatory_stats){
        .completed = total(p, TW__P_COMPLETED),
        .expired = total(p, TW__P_EXPIRED),
        .cancelled = total(p, TW__P_CANCELLED),
        .returned = total(p, TW__P_RETURNED),
        .at_once = total(p, TW__P_AT_ONCE),
    };
    out->watched = total(p, TW__P_WATCHED);
    out->watching = out->watched - out->completed - out->expired -
                    out->cancelled - out->returned;
    for (unsigned i = 0; i < p->nshards; i++) {
        tw__p_lock(&p->shards[i]);
        out->keys += p->shards[i].nkeys;
        tw__p_unlock(&p->shards[i]);
    }
    return 0;
}
