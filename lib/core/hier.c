/*
 * The hierarchical timing wheel (Kafka's TimingWheel, with bitmaps).
 *
 * Ticks are numbers written in a mixed radix: level k has n_k slots, each
 * width_k = n_0 * ... * n_{k-1} ticks wide, so a tick's digit at level k is
 * (tick / width_k) % n_k. With the default clock layout and a 1 ms tick:
 *
 *   level  slots  slot width   one revolution   holds timers due within
 *   0      1000   1 ms         1 s              the current second
 *   1      60     1 s          1 min            the current minute
 *   2      60     1 min        1 h              the current hour
 *   3      24     1 h          1 day            the current day
 *   4      64     1 day        64 days          ...
 *   5      64     64 days      ~11.2 years
 *   6      64     ~11.2 years  ~718 years       (UINT64_MAX ns: ~584 years)
 *
 * Levels past the configured ones have 64 slots and are added at creation
 * until the top level covers max_tick; they cost a few KB and are never
 * searched while empty.
 *
 * Invariant: a pending timer with due tick e > cur sits at the level of the
 * most significant digit in which e differs from cur, in the slot named by
 * e's digit there. So every digit above that level is shared with cur, and
 * e's digit there is greater than cur's (pos). Each level keeps the range of
 * ticks sharing its higher digits with cur, [base, last]: e belongs to the
 * lowest level whose last >= e.
 *
 * Consequences:
 *  - the lowest non-empty level always holds the next piece of work: its
 *    first occupied slot after pos, found with two ctz in its bitmap;
 *  - when cur reaches the start of a slot at level k > 0, every timer in it
 *    shares every digit from k up with cur, so re-inserting it puts it at a
 *    lower level (a demotion) or, when e == cur, on the expired list; a timer
 *    moves at most once per level and fires at its exact tick;
 *  - slots never wrap: no round counting at any level;
 *  - crossing empty time costs one bitmap search per occupied slot passed.
 *
 * Sliced demotion. Demoting a slot costs one re-insertion per timer in it:
 * a level-2 slot (one minute) of a wheel holding 10^7 timers spread over an
 * hour holds about 170,000, milliseconds of work in one call. A sliced
 * advance (tw_advance_sliced(), advance.c) bounds it: when cur reaches such
 * a slot's start, the slot's whole list moves in O(1) to w->demoting and its
 * bit is cleared, and each call then re-inserts at most its budget of them
 * (demote_some()). Meanwhile the wheel stays exactly as it was left: cur at
 * the slot's start, every lower level in the revolution that the slot spans
 * (move_to()), so a timer on w->demoting belongs, by its due tick in
 * [cur, demote_last], to those lower levels, where demote_some() puts it.
 * No tick is collected while w->demoting holds a timer (only callbacks of
 * timers already due run), so nothing fires out of order or early, and the
 * lists stay valid between calls for schedule, re-arm, cancel, visit and
 * drain, which treat w->demoting as one more list. An advance that does not
 * bound its work finishes such a demotion first (tw__hier_demote_rest()).
 */
#include <errno.h>

#include "alloc.h"
#include "insert.h"
#include "list.h"
#include "sat.h"
#include "wheel.h"

/* Last tick of the revolution starting at base; the revolutions at the end
 * of time are cut short at UINT64_MAX. */
static uint64_t revolution_last(uint64_t base, uint64_t span)
{
    return tw__add_sat(base, span - 1);
}

/* Start level k's revolution at tick base, with the fields insertion reads
 * in ns (wheel.h). org_ns wraps when base is 0 and start < tick - 1; the
 * slot arithmetic is modulo 2^64 and exact all the same. */
static void set_base(struct tw_wheel *w, unsigned k, uint64_t base)
{
    struct tw__level *lv = &w->levels[k];

    lv->base = base;
    /* A level of more than 2^64 ticks has one revolution: all of time. */
    lv->last =
        lv->span == UINT64_MAX ? UINT64_MAX : revolution_last(base, lv->span);
    w->place[k].org_ns = w->start_ns + 1 + (base - 1) * w->tick_ns;
    w->place[k].org2_ns = 2 * w->place[k].org_ns;
    w->place[k].last_ns = tw__tick_time(w, lv->last);
}

/* floor(2^k / d) for 64 <= k < 128 and a quotient below 2^64: long
 * division, one bit at a time (only when a wheel is created). */
static uint64_t pow2_div(unsigned k, uint64_t d)
{
    uint64_t q = 0, r = 1;

    for (unsigned i = 0; i < k; i++) {
        bool carry = r >> 63;

        r <<= 1;
        q <<= 1;
        if (carry || r >= d) {
            r -= d;
            q |= 1;
        }
    }
    return q;
}

/* The multiplier and shift that place in level k without a division, for
 * quotients n / width_ns with n < span_ns (wheel.h). False when the bound
 * does not hold, so that the level places by due tick. */
static bool set_reciprocal(struct tw__place *p, uint64_t width_ns,
                           uint64_t span_ns)
{
    uint64_t d = 2 * width_ns, mult, err;
    unsigned shift = 63 - (unsigned)__builtin_clzll(d - 1);

    if (width_ns > UINT64_MAX / 2 || span_ns > UINT64_MAX / 2)
        return false;
    /* 2^shift < d, so the quotient is below 2^64. */
    mult = pow2_div(64 + shift, d) + 1;
    err = mult * d; /* mult * d - 2^(64 + shift), which is below 2^64 */
    /* The largest 2n is 2 * (span_ns - 1); 2n * err < 2^(64 + shift)
     * exactly when the high word of the product is below 2^shift. */
    if (tw__mulhi(2 * (span_ns - 1), err) >> shift)
        return false;
    p->mult = mult;
    p->shift = shift;
    p->width_ns = width_ns;
    return true;
}

/* Append one level of n slots; width is the product of the slot counts
 * below it. Returns -EINVAL when its slots would be wider than 64-bit ns. */
static int add_level(struct tw_wheel *w, uint32_t n, uint64_t width,
                     uint64_t tick_ns)
{
    struct tw__level *lv;

    if (n < 2 || n > TW_MAX_LEVEL_SLOTS || w->nlevels == TW__LEVELS_MAX)
        return -EINVAL;
    if (width == UINT64_MAX || tw__mul_sat(width, tick_ns) == UINT64_MAX)
        return -EINVAL;
    lv = &w->levels[w->nlevels++];
    lv->nslots = n;
    lv->width = width;
    lv->span = tw__mul_sat(width, n);
    /* d - org_ns stays below span * tick: placed in ns while that fits
     * and the reciprocal is exact, and the levels below are placed so. */
    if (w->nexact == w->nlevels - 1 &&
        tw__mul_sat(lv->span, w->tick_ns) != UINT64_MAX &&
        set_reciprocal(&w->place[w->nlevels - 1], width * w->tick_ns,
                       lv->span * w->tick_ns))
        w->nexact = w->nlevels;
    set_base(w, w->nlevels - 1, 0);
    lv->first = (uint32_t)w->nslots;
    w->nslots += n;
    w->nwords += (n + 63) / 64;
    return 0;
}

/* Give each level its share of one array of bitmap words. */
static int alloc_bitmaps(struct tw_wheel *w)
{
    uint64_t *word;

    w->words = tw__zalloc(w->nwords * sizeof(*w->words));
    if (!w->words)
        return -ENOMEM;
    word = w->words;
    for (unsigned k = 0; k < w->nlevels; k++) {
        w->levels[k].bits.words = word;
        word += (w->levels[k].nslots + 63) / 64;
    }
    return 0;
}

int tw__hier_layout(struct tw_wheel *w, const struct tw_config *cfg)
{
    uint64_t width = 1;

    for (unsigned k = 0; k < cfg->levels; k++) {
        int rc = add_level(w, cfg->slots[k], width, cfg->tick_ns);

        if (rc)
            return rc;
        width = w->levels[k].span;
    }
    /* Coarser levels until the top one covers every due tick. */
    while (w->levels[w->nlevels - 1].last < w->max_tick) {
        int rc = add_level(w, TW__EXTRA_LEVEL_SLOTS, width, 1);

        if (rc)
            return rc;
        width = w->levels[w->nlevels - 1].span;
    }
    return alloc_bitmaps(w);
}

/* Move cur to e, in slot s of level k (which starts at tick start), with
 * nothing pending below level k: each lower level starts the revolution
 * that holds e, found from the top down with one division per level. */
static void settle(struct tw_wheel *w, unsigned k, uint32_t s, uint64_t start,
                   uint64_t e)
{
    uint64_t b = start;

    w->cur = e;
    w->levels[k].pos = s;
    for (unsigned j = k; j-- > 0;) {
        struct tw__level *lv = &w->levels[j];

        set_base(w, j, b);
        lv->pos = (uint32_t)(j == 0 ? e - b : (e - b) / lv->width);
        b += lv->pos * lv->width;
    }
}

/* Move cur to target with no work in between: the levels whose revolution
 * still contains target only change their digit, the first of them
 * included; those below it start the revolutions that hold target (they
 * are empty, or there would be work before target), found from the top
 * down with one division each (settle); the levels above do not change. */
static void jump(struct tw_wheel *w, uint64_t target)
{
    unsigned k = 0;
    struct tw__level *lv = w->levels;
    uint32_t s;

    if (target == w->cur)
        return;
    while (target > lv->last)
        lv++, k++;
    if (k == 0) {
        w->cur = target;
        lv->pos = (uint32_t)(target - lv->base);
        return;
    }
    s = (uint32_t)((target - lv->base) / lv->width);
    settle(w, k, s, lv->base + s * lv->width, target);
}

/* Move cur to the start of slot s of level k: every lower digit becomes 0,
 * so each lower level starts a new revolution at cur. Inlined into both
 * collects (as flush_ticks() below), as it was into the one there was. */
static inline __attribute__((always_inline)) void
move_to(struct tw_wheel *w, unsigned k, uint32_t s, uint64_t tick)
{
    w->cur = tick;
    w->levels[k].pos = s;
    for (unsigned j = 0; j < k; j++) {
        set_base(w, j, tick);
        w->levels[j].pos = 0;
    }
}

void tw__hier_occupy(struct tw_wheel *w, unsigned k, uint32_t s)
{
    const struct tw__level *lv = &w->levels[k];

    tw__bitmap_set(&w->levels[k].bits, s);
    w->occupied |= UINT64_C(1) << k;
    /* Work at this slot's start: the idle advance must stop before it.
     * While advancing (demotions) the bound is closed: nothing to do. */
    if (w->head.idle_ns) {
        uint64_t at = tw__tick_time(w, lv->base + s * lv->width);

        if (at < w->head.idle_ns)
            w->head.idle_ns = at;
    }
}

uint64_t tw__hier_slot_slow(const struct tw_wheel *w, unsigned k, uint64_t d)
{
    const struct tw__level *lv = &w->levels[k];

    return (tw__due_tick(w, d) - lv->base) / lv->width;
}

void tw__hier_emptied(struct tw_wheel *w, struct tw_link *head)
{
    size_t idx =
        (size_t)((uintptr_t)head - (uintptr_t)w->slots) / sizeof(*w->slots);
    unsigned k = 0;

    /* The expired and deferred lists live outside the slot array. */
    if ((uintptr_t)head < (uintptr_t)w->slots || idx >= w->nslots)
        return;
    while (idx >= w->levels[k].first + w->levels[k].nslots)
        k++;
    tw__bitmap_clear(&w->levels[k].bits, (uint32_t)(idx - w->levels[k].first));
    if (!w->levels[k].bits.summary)
        w->occupied &= ~(UINT64_C(1) << k);
}

/* The lowest non-empty level and its next occupied slot; false if empty. */
static bool next_slot(const struct tw_wheel *w, unsigned *level, uint32_t *slot)
{
    const struct tw__level *lv;

    if (!w->occupied)
        return false;
    *level = (unsigned)__builtin_ctzll(w->occupied);
    lv = &w->levels[*level];
    *slot = tw__bitmap_next(&lv->bits, lv->pos + 1);
    return true;
}

uint64_t tw__hier_next_tick(const struct tw_wheel *w)
{
    unsigned k;
    uint32_t s;

    if (!next_slot(w, &k, &s))
        return UINT64_MAX;
    return w->levels[k].base + s * w->levels[k].width;
}

/* Level 0 holds exactly one tick per slot, so every occupied slot up to
 * min(target, end of its revolution) can go to the expired list in one
 * pass, in tick order, starting with slot s. A bounded advance takes one
 * tick at a time instead (target == the slot's tick), so that it stops on
 * the tick of the last timer it collected. Returns the last slot taken. */
static inline __attribute__((always_inline)) uint32_t
flush_ticks(struct tw_wheel *w, uint32_t s, uint64_t target)
{
    struct tw__level *lv = w->levels;
    uint64_t limit = (target < lv->last ? target : lv->last) - lv->base;
    uint32_t last;

    do {
        last = s;
        tw__list_splice_back(&w->expired, &w->slots[lv->first + s]);
        tw__bitmap_clear(&lv->bits, s);
        s = tw__bitmap_next(&lv->bits, s + 1);
    } while (s != TW__BITMAP_NONE && s <= limit);
    if (!lv->bits.summary)
        w->occupied &= ~UINT64_C(1);
    return last;
}

/* Put t, taken from a slot being demoted, where it now belongs: on the
 * expired list when it is due by due_ns, else one level down or more. */
static void place_demoted(struct tw_wheel *w, struct tw_link *n,
                          uint64_t due_ns)
{
    struct tw_timer *t = tw__list_timer(n);

    if (t->deadline <= due_ns)
        tw__list_push_back(&w->expired, &t->link);
    else
        tw__hier_insert(w, t);
}

/* Demote the timers of slot s of level k > 0, whose start cur has just
 * reached: each goes one level down or more, or is due now. The batch is
 * walked without unlinking, since every node is relinked elsewhere, from
 * both ends at once (tw__list_walk_both(): two cache misses in flight on a
 * cold slot). The order of timers due in the same tick is unspecified
 * (core.h), so the order in which they reach their new slots does not
 * matter. */
static void demote_slot(struct tw_wheel *w, unsigned k, uint32_t s)
{
    struct tw__level *lv = &w->levels[k];
    struct tw_link *head = &w->slots[lv->first + s];
    struct tw_link *first = head->next, *last = head->prev;
    uint64_t due_ns = tw__tick_time(w, w->cur);

    tw__list_init(head);
    tw__bitmap_clear(&lv->bits, s);
    if (!lv->bits.summary)
        w->occupied &= ~(UINT64_C(1) << k);
    if (first != head)
        tw__list_walk_both(first, last, place_demoted, w, due_ns);
}

/* Re-insert up to budget timers of w->demoting (see the top of the file),
 * from both ends of the list as demote_slot() does, and leave the rest
 * linked to the head, in their order, for the next call. Returns how many
 * it moved. */
static uint64_t demote_some(struct tw_wheel *w, uint64_t budget)
{
    struct tw_link *head = &w->demoting, *first = head->next;
    struct tw_link *last = head->prev;
    uint64_t due_ns = tw__tick_time(w, w->cur), n = 0;

    while (first != head && n < budget) {
        struct tw_link *next = first->next, *prev = last->prev;

        place_demoted(w, first, due_ns);
        if (++n, first == last) {
            first = last = head;
            break;
        }
        if (n == budget) {
            first = next;
            break;
        }
        place_demoted(w, last, due_ns);
        if (++n, next == last) {
            first = last = head;
            break;
        }
        first = next;
        last = prev;
    }
    head->next = first;
    first->prev = head;
    head->prev = last;
    last->next = head;
    return n;
}

void tw__hier_demote_rest(struct tw_wheel *w)
{
    demote_some(w, UINT64_MAX);
}

/* Start a sliced demotion of slot s of level k > 0, whose start cur has
 * just reached: its list moves whole to w->demoting (the top of the
 * file). */
static void begin_demotion(struct tw_wheel *w, unsigned k, uint32_t s)
{
    struct tw__level *lv = &w->levels[k];
    struct tw_link *head = &w->slots[lv->first + s];

    tw__list_splice_back(&w->demoting, head);
    tw__bitmap_clear(&lv->bits, s);
    if (!lv->bits.summary)
        w->occupied &= ~(UINT64_C(1) << k);
    w->demote_last = tw__add_sat(w->cur, lv->width - 1);
}

/* Take the slots of word wi of level k's bitmap to the expired list, in
 * slot order, while each holds a single timer due by the advance's target
 * (defer_ns is that tick's boundary while advancing). The word's lowest
 * bits are the level's next slots, since occupied slots lie after pos, so
 * the bits are walked in a copy of the word, lowest first, and written
 * back once. Returns true when the whole word was taken (its summary bit
 * is then cleared); *last is the last slot taken, *n counts them. */
static bool take_word(struct tw_wheel *w, struct tw__level *lv,
                      struct tw_link *slot0, uint32_t wi, uint32_t *last,
                      unsigned *n)
{
    uint64_t left = lv->bits.words[wi];

    while (left) {
        uint32_t s = (wi << 6) | (uint32_t)__builtin_ctzll(left);
        struct tw_link *head = slot0 + s;
        struct tw_timer *t = tw__list_timer(head->next);

        if (head->next != head->prev || t->deadline > w->defer_ns)
            break;
        tw__list_init(head);
        tw__list_push_back(&w->expired, &t->link);
        left &= left - 1;
        *last = s;
        ++*n;
    }
    lv->bits.words[wi] = left;
    if (left)
        return false;
    lv->bits.summary &= ~(UINT64_C(1) << wi);
    return true;
}

/* take_word() over level k, word after word; true when the level was
 * emptied (its occupied bit is then cleared). */
static bool take_level(struct tw_wheel *w, unsigned k, uint32_t *last,
                       unsigned *n)
{
    struct tw__level *lv = &w->levels[k];
    struct tw_link *slot0 = w->place[k].slot0;

    while (lv->bits.summary)
        if (!take_word(w, lv, slot0,
                       (uint32_t)__builtin_ctzll(lv->bits.summary), last, n))
            return false;
    w->occupied &= ~(UINT64_C(1) << k);
    return true;
}

/*
 * In an unbounded advance, a slot of level k > 0 that holds one timer due
 * by the target needs no demotion: nothing is pending below level k nor
 * earlier in it, so that timer is the next to run. Such slots are taken
 * one after the other, in tick order, straight to the expired list, while
 * the next piece of work is one: the rest of level k in slot order, then,
 * if that empties it, the next non-empty level (the levels below stay
 * empty meanwhile, so no digit needs to move). Then cur moves once to the
 * due tick of the last timer taken, as its demotions would have, so that
 * every expired timer is due by cur when the callbacks run; or, when that
 * emptied the wheel, straight to the target, where the advance's next
 * collect would jump (one settling of the levels instead of two). This
 * saves one collect per level each timer would have passed, and the
 * levels' rebasing in between: a 30-day jump over 10 timers is one
 * collect, and each timer a few instructions of it (a bit of a word). The
 * callbacks run after, in order; an unbounded advance may collect ahead
 * of them, as flush_ticks() does (a timer they schedule by the target is
 * deferred; one they cancel does not run). A bounded advance demotes as
 * usual, to stop on each timer's own tick. Returns false, changing
 * nothing, when the level's next slot is not such a slot.
 */
static bool expire_singles(struct tw_wheel *w, unsigned k, uint64_t target)
{
    unsigned n = 0, last_k = k;
    uint32_t last_s = 0;
    const struct tw__level *lv;

    for (;;) {
        unsigned before = n;
        bool emptied = take_level(w, k, &last_s, &n);

        if (n != before)
            last_k = k;
        if (!emptied || !w->occupied)
            break;
        k = (unsigned)__builtin_ctzll(w->occupied);
        if (k == 0)
            break;
    }
    if (n == 0)
        return false;
    if (!w->occupied) {
        jump(w, target);
        return true;
    }
    lv = &w->levels[last_k];
    settle(w, last_k, last_s, lv->base + last_s * lv->width,
           tw__due_tick(w, tw__list_timer(w->expired.prev)->deadline));
    return true;
}

/* The next slot with work at or before target: its level, slot and first
 * tick; false, with cur moved to target, when there is none. Both collects
 * start so. */
static inline __attribute__((always_inline)) bool
next_work(struct tw_wheel *w, uint64_t target, unsigned *k, uint32_t *s,
          uint64_t *tick)
{
    if (next_slot(w, k, s)) {
        *tick = w->levels[*k].base + *s * w->levels[*k].width;
        if (*tick <= target)
            return true;
    }
    jump(w, target);
    return false;
}

void tw__hier_collect_level0(struct tw_wheel *w, uint64_t target)
{
    struct tw__level *lv = w->levels;

    if (w->occupied & 1) {
        uint32_t s = tw__bitmap_next(&lv->bits, lv->pos + 1);

        if (s <= target - lv->base)
            flush_ticks(w, s, target);
    }
    w->cur = target;
    lv->pos = (uint32_t)(target - lv->base);
}

/* The collect of a slot of level k > 0 (tw__hier_collect()): out of line,
 * so that the level-0 collect, one per tick with work, saves no more
 * registers than it uses. */
__attribute__((noinline)) static void
collect_coarse(struct tw_wheel *w, unsigned k, uint32_t s, uint64_t tick,
               uint64_t target, bool batch)
{
    if (!batch || !expire_singles(w, k, target)) {
        move_to(w, k, s, tick);
        demote_slot(w, k, s);
    }
}

bool tw__hier_collect(struct tw_wheel *w, uint64_t target, bool batch)
{
    unsigned k;
    uint32_t s;
    uint64_t tick;

    if (!next_work(w, target, &k, &s, &tick))
        return false;
    if (k != 0) {
        collect_coarse(w, k, s, tick, target, batch);
        return true;
    }
    s = flush_ticks(w, s, batch ? target : tick);
    /* A batch that reached every level-0 tick up to a target inside level
     * 0's revolution took all the work at or before it (the levels above
     * start after that revolution): cur goes straight to the target, and
     * the advance's driver, seeing it there, asks for no further collect
     * (advance.c, drive()). */
    if (batch && target <= w->levels[0].last)
        s = (uint32_t)(target - w->levels[0].base);
    move_to(w, 0, s, w->levels[0].base + s);
    return true;
}

bool tw__hier_collect_sliced(struct tw_wheel *w, uint64_t target,
                             uint64_t *work)
{
    unsigned k;
    uint32_t s;
    uint64_t tick;

    if (*work == 0)
        return false;
    if (!tw__list_empty(&w->demoting)) {
        *work -= demote_some(w, *work);
        return true;
    }
    --*work;
    if (!next_work(w, target, &k, &s, &tick))
        return false;
    if (k == 0) {
        s = flush_ticks(w, s, tick);
        move_to(w, 0, s, w->levels[0].base + s);
        return true;
    }
    move_to(w, k, s, tick);
    begin_demotion(w, k, s);
    *work -= demote_some(w, *work);
    return true;
}

/* The timers waiting on w->demoting: each belongs below the slot being
 * demoted, whose ticks [cur, demote_last] are the revolution of the level
 * under it (move_to()). */
static int check_demoting(const struct tw_wheel *w, char *why, size_t len)
{
    const struct tw_link *head = &w->demoting;
    bool spans = false;

    if (tw__list_empty(head))
        return 0;
    for (unsigned k = 0; k < w->nlevels; k++)
        spans |=
            w->levels[k].base == w->cur && w->levels[k].last == w->demote_last;
    if (!spans)
        return tw__fail(why, len, "demoting: no level spans [%llu, %llu]",
                        (unsigned long long)w->cur,
                        (unsigned long long)w->demote_last);
    for (const struct tw_link *n = head->next; n != head; n = n->next) {
        const struct tw_timer *t = tw__list_timer((struct tw_link *)n);
        uint64_t e = tw__due_tick(w, t->deadline);

        if (e < w->cur || e > w->demote_last)
            return tw__fail(why, len,
                            "demoting: due tick %llu outside [%llu, %llu]",
                            (unsigned long long)e, (unsigned long long)w->cur,
                            (unsigned long long)w->demote_last);
    }
    return 0;
}

/* Check one slot's timers and its occupancy bit. */
static int check_slot(const struct tw_wheel *w, unsigned k, uint32_t s,
                      char *why, size_t len)
{
    const struct tw__level *lv = &w->levels[k];
    const struct tw_link *head = &w->slots[lv->first + s];
    bool bit = tw__bitmap_test(&lv->bits, s);

    if (bit == tw__list_empty(head))
        return tw__fail(why, len, "level %u slot %u: bit %d, list %s", k, s,
                        bit, bit ? "empty" : "not empty");
    for (const struct tw_link *n = head->next; n != head; n = n->next) {
        const struct tw_timer *t = tw__list_timer((struct tw_link *)n);
        uint64_t e = tw__due_tick(w, t->deadline);

        if (e <= w->cur)
            return tw__fail(why, len,
                            "level %u slot %u: due tick %llu, "
                            "cur %llu",
                            k, s, (unsigned long long)e,
                            (unsigned long long)w->cur);
        if (e < lv->base || e > lv->last || (k && e <= w->levels[k - 1].last))
            return tw__fail(why, len,
                            "level %u: due tick %llu outside "
                            "its range",
                            k, (unsigned long long)e);
        if ((e - lv->base) / lv->width != s || s <= lv->pos)
            return tw__fail(why, len, "level %u: due tick %llu in slot %u", k,
                            (unsigned long long)e, s);
    }
    return 0;
}

/* Check a level's revolution against cur, and its bitmap summary. */
static int check_level(const struct tw_wheel *w, unsigned k, char *why,
                       size_t len)
{
    const struct tw__level *lv = &w->levels[k];
    unsigned nwords = (lv->nslots + 63) / 64;
    bool any = false;

    if (w->cur < lv->base || w->cur > lv->last ||
        (w->cur - lv->base) / lv->width != lv->pos ||
        (lv->span != UINT64_MAX && lv->base % lv->span != 0))
        return tw__fail(why, len, "level %u: revolution does not hold cur", k);
    if (w->place[k].last_ns != tw__tick_time(w, lv->last) ||
        w->place[k].org_ns != w->start_ns + 1 + (lv->base - 1) * w->tick_ns ||
        w->place[k].org2_ns != 2 * w->place[k].org_ns ||
        w->place[k].slot0 != &w->slots[lv->first] ||
        (w->place[k].mult != 0) != (k < w->nexact) ||
        (w->place[k].width_ns != 0) != (k < w->nexact))
        return tw__fail(why, len, "level %u: ns bounds do not match", k);
    if (nwords < 64 && lv->bits.summary >> nwords)
        return tw__fail(why, len, "level %u: summary bit past its words", k);
    for (unsigned i = 0; i < nwords; i++) {
        if (((lv->bits.summary >> i) & 1) != (lv->bits.words[i] != 0))
            return tw__fail(why, len, "level %u: summary bit %u wrong", k, i);
        any |= lv->bits.words[i] != 0;
    }
    if (any != (((w->occupied >> k) & 1) != 0))
        return tw__fail(why, len, "level %u: occupied bit wrong", k);
    for (uint32_t s = 0; s < lv->nslots; s++) {
        int rc = check_slot(w, k, s, why, len);

        if (rc)
            return rc;
    }
    return 0;
}

int tw__hier_check(const struct tw_wheel *w, char *why, size_t len)
{
    int rc = check_demoting(w, why, len);

    if (rc)
        return rc;
    if (w->levels[w->nlevels - 1].last < w->max_tick)
        return tw__fail(why, len, "top level does not cover max tick");
    for (unsigned k = 0; k < w->nlevels && !rc; k++)
        rc = check_level(w, k, why, len);
    return rc;
}
