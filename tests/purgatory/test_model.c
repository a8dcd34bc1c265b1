/*
 * The purgatory over a core wheel against a brute-force model (suite
 * purgatory_model): random watches, events, checks, key cancels and
 * advances, with a fixed seed printed (TW_SEED to replay another). After
 * every step each operation's callbacks, state and the counters must be
 * what the model says: the model is a plain array scanned in full.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "preq.h"
#include "util.h"

#define OPS 200
#define KEYS 20
#define STEPS 20000

struct mop {
    int state; /* enum tw_delayed_state, as the model expects */
    bool ready;
    unsigned nkeys;
    unsigned key[3];
    uint64_t deadline;
    int completes, expires, handed_back; /* expected, this watch */
};

static struct preq real[OPS];
static struct mop model[OPS];
static char names[KEYS][8];
static uint64_t seed;

static uint64_t rnd(void)
{
    seed ^= seed >> 12;
    seed ^= seed << 25;
    seed ^= seed >> 27;
    return seed * UINT64_C(2685821657736338717);
}

static bool on_key(const struct mop *m, unsigned key)
{
    for (unsigned i = 0; i < m->nkeys; i++)
        if (m->key[i] == key)
            return true;
    return false;
}

static void agree(struct tw_purgatory *p, long step)
{
    uint64_t watched = 0;
    struct tw_purgatory_stats st;

    for (int i = 0; i < OPS; i++) {
        struct mop *m = &model[i];
        struct preq *r = &real[i];

        cr_assert_eq(tw_delayed_state(&r->op), m->state, "step %ld op %d", step,
                     i);
        cr_assert_eq(r->completes, m->completes, "step %ld op %d", step, i);
        cr_assert_eq(r->expires, m->expires, "step %ld op %d", step, i);
        cr_assert_eq(r->handed_back, m->handed_back, "step %ld op %d", step, i);
        watched += m->state == TW_DELAYED_WATCHED;
    }
    cr_assert_eq(tw_purgatory_stats(p, &st), 0);
    cr_assert_eq(st.watching, watched, "step %ld", step);
}

static void do_watch(struct tw_purgatory *p, struct tw_wheel *w, int i)
{
    struct mop *m = &model[i];
    struct tw_key k[3];
    int rc, want;

    if (m->state == TW_DELAYED_WATCHED)
        return;
    /* Initialise it again: its callbacks count this watch only. */
    preq_init(&real[i], p);
    m->completes = m->expires = m->handed_back = 0;
    m->nkeys = 1 + (unsigned)(rnd() % 3);
    for (unsigned j = 0; j < m->nkeys; j++) {
        bool dup;

        do {
            m->key[j] = (unsigned)(rnd() % KEYS);
            dup = false;
            for (unsigned q = 0; q < j; q++)
                dup |= m->key[q] == m->key[j];
        } while (dup);
        k[j] = pkey(names[m->key[j]]);
    }
    m->ready = rnd() % 10 == 0;
    atomic_store(&real[i].ready, m->ready);
    m->deadline = tw_now(w) + (rnd() % 50) * MS;
    rc = tw_purgatory_watch(p, &real[i].op, k, m->nkeys,
                            m->deadline - tw_now(w));
    want = m->ready ? 1 : 0;
    cr_assert_eq(rc, want, "watch op %d: %d", i, rc);
    m->state = m->ready ? TW_DELAYED_COMPLETED : TW_DELAYED_WATCHED;
    m->completes += m->ready;
}

static void do_check(struct tw_purgatory *p, unsigned key)
{
    int64_t want = 0;

    for (int i = 0; i < OPS; i++) {
        struct mop *m = &model[i];

        if (m->state == TW_DELAYED_WATCHED && on_key(m, key) && m->ready) {
            m->state = TW_DELAYED_COMPLETED;
            m->completes++;
            want++;
        }
    }
    cr_assert_eq(tw_purgatory_check(p, names[key], strlen(names[key])), want,
                 "check key %u", key);
}

static void do_cancel(struct tw_purgatory *p, unsigned key)
{
    int64_t want = 0;

    for (int i = 0; i < OPS; i++) {
        struct mop *m = &model[i];

        if (m->state == TW_DELAYED_WATCHED && on_key(m, key)) {
            m->state = TW_DELAYED_CANCELLED;
            m->handed_back++;
            want++;
        }
    }
    cr_assert_eq(tw_purgatory_cancel_key(p, names[key], strlen(names[key]),
                                         preq_handback, NULL),
                 want, "cancel key %u", key);
}

static void do_advance(struct tw_wheel *w)
{
    uint64_t to = tw_now(w) + (1 + rnd() % 10) * MS;
    int64_t want = 0;

    for (int i = 0; i < OPS; i++) {
        struct mop *m = &model[i];

        if (m->state == TW_DELAYED_WATCHED && m->deadline <= to) {
            m->state = TW_DELAYED_EXPIRED;
            m->expires++;
            m->completes++;
            want++;
        }
    }
    cr_assert_eq(tw_advance(w, to), want, "advance to %llu",
                 (unsigned long long)to);
}

Test(purgatory_model, random_operations_agree_with_the_model)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw_purgatory *p = purgatory_on_wheel(w);
    const char *env = getenv("TW_SEED");
    int64_t returned;

    seed = env ? strtoull(env, NULL, 10) : UINT64_C(20261123);
    printf("purgatory_model: seed %llu (rerun with TW_SEED=%llu)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    seed |= 1;
    for (int k = 0; k < KEYS; k++)
        snprintf(names[k], sizeof(names[k]), "k%d", k);
    for (int i = 0; i < OPS; i++)
        preq_init(&real[i], p);
    for (long step = 0; step < STEPS; step++) {
        uint64_t r = rnd() % 100;
        int i = (int)(rnd() % OPS);

        if (r < 40) {
            do_watch(p, w, i);
        } else if (r < 60) {
            if (model[i].state == TW_DELAYED_WATCHED) {
                model[i].ready = true; /* an event, not yet checked */
                atomic_store(&real[i].ready, true);
            }
        } else if (r < 85) {
            do_check(p, (unsigned)(rnd() % KEYS));
        } else if (r < 87) {
            do_cancel(p, (unsigned)(rnd() % KEYS));
        } else {
            do_advance(w);
        }
        agree(p, step);
    }
    returned = tw_purgatory_stop(p, preq_handback, NULL);
    for (int i = 0; i < OPS; i++)
        if (model[i].state == TW_DELAYED_WATCHED) {
            model[i].state = TW_DELAYED_CANCELLED;
            model[i].handed_back++;
            returned--;
        }
    cr_assert_eq(returned, 0);
    agree(p, STEPS);
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    cr_assert_eq(tw_pending(w), 0);
    cr_assert_eq(tw_destroy(w), 0);
}
