/*
 * A request for the purgatory's tests: a struct tw_delayed whose condition
 * is a flag, and counters of every callback, so that each test can assert
 * exactly what ran, how often and in which order. Header-only: the
 * tests' build compiles only the test_ files.
 */
#ifndef TW_TEST_PREQ_H
#define TW_TEST_PREQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <criterion/criterion.h>
#include <string.h>

#include "timewheel.h"

struct preq {
    struct tw_delayed op;
    atomic_bool ready;      /* try_complete's answer */
    atomic_int tries;       /* try_complete calls */
    atomic_int completes;   /* on_complete calls */
    atomic_int expires;     /* on_expire calls */
    atomic_int handed_back; /* handback calls */
    int expired_first;      /* on_complete saw on_expire before it */
    int state_in_complete;  /* tw_delayed_state() inside on_complete */
    /* Optional: flip ready to true at this try (1-based); 0: never. */
    int ready_at_try;
    /* Optional: a call made from inside try_complete, and its answer. */
    int (*in_try)(struct preq *r);
    int in_try_rc;
    struct tw_purgatory *p;
};

static inline bool try_cb(struct tw_delayed *op, void *arg)
{
    struct preq *r = arg;
    int n = atomic_fetch_add(&r->tries, 1) + 1;

    cr_assert_eq(op, &r->op);
    if (r->ready_at_try && n >= r->ready_at_try)
        atomic_store(&r->ready, true);
    if (r->in_try)
        r->in_try_rc = r->in_try(r);
    return atomic_load(&r->ready);
}

static inline void complete_cb(struct tw_delayed *op, void *arg)
{
    struct preq *r = arg;

    cr_assert_eq(op, &r->op);
    r->expired_first = atomic_load(&r->expires) > 0;
    r->state_in_complete = tw_delayed_state(op);
    atomic_fetch_add(&r->completes, 1);
}

static inline void expire_cb(struct tw_delayed *op, void *arg)
{
    struct preq *r = arg;

    cr_assert_eq(op, &r->op);
    cr_assert_eq(atomic_load(&r->completes), 0, "on_expire after on_complete");
    atomic_fetch_add(&r->expires, 1);
}

static inline void preq_init(struct preq *r, struct tw_purgatory *p)
{
    memset(r, 0, sizeof(*r));
    r->p = p;
    tw_delayed_init(&r->op, try_cb, complete_cb, expire_cb, r);
}

static inline void preq_handback(struct tw_delayed *op, void *ctx)
{
    struct preq *r = TW_CONTAINER_OF(op, struct preq, op);

    (void)ctx;
    cr_assert_eq(tw_delayed_state(op), TW_DELAYED_CANCELLED);
    atomic_fetch_add(&r->handed_back, 1);
}

static inline struct tw_key pkey(const char *s)
{
    return (struct tw_key){s, strlen(s)};
}

/* A virtual clock for a purgatory over a wheel that the tests advance by
 * hand: the wheel's own time is the time (cfg.now, ctx the wheel). */
static inline uint64_t wheel_clock(void *ctx)
{
    return tw_now(ctx);
}

static inline struct tw_purgatory *purgatory_on_wheel(struct tw_wheel *w)
{
    struct tw_purgatory_config cfg;
    struct tw_purgatory *p;
    int err = 1;

    tw_purgatory_config_init(&cfg);
    cfg.wheel = w;
    cfg.now = wheel_clock;
    cfg.now_ctx = w;
    p = tw_purgatory_create(&cfg, &err);
    cr_assert(p && err == 0, "purgatory create: %d", err);
    return p;
}

/* A purgatory whose timeouts are the service s's timers. */
static inline struct tw_purgatory *purgatory_on(struct tw_service *s)
{
    struct tw_purgatory_config cfg;
    struct tw_purgatory *p;
    int err = 1;

    tw_purgatory_config_init(&cfg);
    cfg.service = s;
    p = tw_purgatory_create(&cfg, &err);
    cr_assert(p && err == 0, "purgatory create: %d", err);
    return p;
}

static inline void stats_are(struct tw_purgatory *p, uint64_t watched,
                             uint64_t completed, uint64_t expired,
                             uint64_t cancelled, uint64_t returned,
                             uint64_t watching, uint64_t keys)
{
    struct tw_purgatory_stats st;

    cr_assert_eq(tw_purgatory_stats(p, &st), 0);
    cr_assert_eq(st.watched, watched, "watched %llu",
                 (unsigned long long)st.watched);
    cr_assert_eq(st.completed, completed, "completed %llu",
                 (unsigned long long)st.completed);
    cr_assert_eq(st.expired, expired, "expired %llu",
                 (unsigned long long)st.expired);
    cr_assert_eq(st.cancelled, cancelled, "cancelled %llu",
                 (unsigned long long)st.cancelled);
    cr_assert_eq(st.returned, returned, "returned %llu",
                 (unsigned long long)st.returned);
    cr_assert_eq(st.watching, watching, "watching %llu",
                 (unsigned long long)st.watching);
    cr_assert_eq(st.keys, keys, "keys %llu", (unsigned long long)st.keys);
}

#endif /* TW_TEST_PREQ_H */
