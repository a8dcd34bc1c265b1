/*
 * The single-level hashed wheel with round counting (Netty's
 * HashedWheelTimer), kept as a compatibility mode and as the baseline the
 * hierarchical wheel is measured against.
 *
 *   slots:   ticks per wheel rounded up to a power of two (default 512),
 *            so that bucket = tick & mask;
 *   insert:  with `next` the tick the wheel will process next (cur + 1),
 *            rounds = (due - next) / slots, bucket = max(due, next) & mask
 *            (due > cur always holds here, so max(due, next) == due);
 *   tick:    cur advances one tick at a time, even across empty time, and
 *            the whole bucket cur & mask is walked: a timer with no rounds
 *            left is due, every other one loses a round. Only a wheel with
 *            nothing pending jumps to the target at once.
 *
 * The rounds are not stored. A timer in the bucket of tick cur has a due
 * tick e >= cur with e == cur (mod slots), so it has no rounds left exactly
 * when e == cur, that is when its deadline is at or before the boundary of
 * cur. Comparing the deadline with that boundary gives Netty's decision at
 * every visit without a per-timer field or a store per visit, and keeps
 * struct tw_timer at 40 bytes.
 *
 * A timer waits in one bucket for (due - next) / slots revolutions and is
 * visited once per revolution, so a delay of D ticks costs D / slots visits
 * and advancing costs one bucket walk per tick: the design's known costs,
 * which the benchmarks show. Netty computes `calculated = deadline / tick`
 * and processes tick t at time (t + 1) * tick; using the ceiling here fires
 * at the same boundary except for deadlines exactly on one, which fire on
 * it instead of a tick later (the guarantee in timewheel.h).
 *
 * Invariant: a timer with due tick e in bucket b satisfies e > cur and
 * b == e & mask; it fires at the visit of tick e, after (e - v) / slots
 * visits that leave it, v being the first tick after cur that lands on b.
 */
#include <errno.h>

#include "insert.h"
#include "list.h"
#include "wheel.h"

int tw__hashed_layout(struct tw_wheel *w, const struct tw_config *cfg)
{
    uint64_t want, slots = 1;

    if (cfg->levels != 1)
        return -EINVAL;
    want = cfg->slots[0];
    if (want == 0 || want > TW_MAX_HASHED_SLOTS)
        return -EINVAL;
    while (slots < want) {
        slots <<= 1;
        w->shift++;
    }
    /* Netty refuses a wheel whose tick x slots overflows signed 64-bit ns. */
    if (cfg->tick_ns > (uint64_t)INT64_MAX / slots)
        return -EINVAL;
    w->mask = slots - 1;
    w->nslots = (size_t)slots;
    return 0;
}

/* t sits in the bucket of tick cur: due now exactly when its deadline is at
 * or before that tick's boundary (no rounds left); then it goes to the
 * expired list, else it stays for another revolution. */
static void visit(struct tw_wheel *w, struct tw_link *n, uint64_t due_ns)
{
    struct tw_timer *t = tw__list_timer(n);

    if (t->deadline <= due_ns) {
        tw__list_unlink(&t->link);
        tw__list_push_back(&w->expired, &t->link);
    }
}

/* Walk the bucket of the next tick from both ends at once
 * (tw__list_walk_both(): a bucket holds every timer of its residue class,
 * n / slots of them, a cache miss each once it is cold); the timers due
 * here are all due at tick cur, whose order is unspecified. */
bool tw__hashed_collect(struct tw_wheel *w, uint64_t target)
{
    struct tw_link *head;

    if (w->cur >= target)
        return false;
    /* Nothing pending (the due lists are empty when a collect is asked
     * for, and count holds every pending timer): no tick needs walking.
     * Without this an empty wheel walked every tick to the target, hours
     * of them for an advance across years. */
    if (w->count == 0) {
        w->cur = target;
        return false;
    }
    w->cur++;
    head = &w->slots[w->cur & w->mask];
    if (!tw__list_empty(head))
        tw__list_walk_both(head->next, head->prev, visit, w,
                           tw__tick_time(w, w->cur));
    return true;
}

int tw__hashed_check(const struct tw_wheel *w, char *why, size_t len)
{
    uint64_t slots = w->mask + 1;

    for (uint64_t b = 0; b < slots; b++) {
        const struct tw_link *head = &w->slots[b];

        for (const struct tw_link *n = head->next; n != head; n = n->next) {
            const struct tw_timer *t = tw__list_timer((struct tw_link *)n);
            uint64_t e = tw__due_tick(w, t->deadline);

            if (e <= w->cur || (e & w->mask) != b)
                return tw__fail(why, len,
                                "bucket %llu: due tick %llu, cur "
                                "%llu",
                                (unsigned long long)b, (unsigned long long)e,
                                (unsigned long long)w->cur);
        }
    }
    return 0;
}
