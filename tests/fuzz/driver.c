/*
 * The fuzz driver (see driver.h): a decoder from bytes to operations, and
 * the model's view of every timer, which knows nothing of slots or levels.
 *
 * Input format. A read past the end yields zeros and ends the run after the
 * operation being decoded, so every string of bytes is a valid input.
 *
 *   byte 0     layout (low 3 bits): 0 to 5 the fixed layouts of the
 *              differential tests (model_layouts: hier clock layout, 1 ms
 *              tick; hier 64x4, 1 ms; hier 4x4, 1 us; hier 3,7,2,5,11,
 *              1 ns; hashed 512, 1 ms; hashed 8, 7 ns); 6 hier and 7 hashed
 *              with a shape and tick read from the input (possibly refused:
 *              then only the answer of tw_create() is checked): 1 to 6
 *              levels of small counts, multiples of 64, powers of two or any
 *              count, or one hashed level; a tick of a few ns, 1 ms, any,
 *              or at the edge where the levels cover all of 64-bit time
 *              (custom_layout()).
 *              Bit 7: end by destroying the wheel with its timers pending
 *              instead of running them all.
 *   byte 1     start time: 0, 123456789, 2^40, just before UINT64_MAX, or
 *              a number from the input.
 *   then       operations: an opcode byte and its operands (see op()).
 *
 * A number is a length byte (modulo 9) and that many little-endian bytes, so
 * small numbers cost little input. A deadline is a kind byte and a number:
 * the kind picks a region (the past, now, the next ticks, a tick boundary
 * and one ns either side, each level's range, the far future, the end of
 * time), the number a place in it.
 *
 * The model keeps, for each of NTIMERS timers, whether it is pending, its
 * deadline and due tick (from the reference model of tests/model.c) and
 * the advance that scheduled it. It also knows the wheel's
 * tick between advances (`floor`): the target after a complete advance, and
 * the due tick of the last timer run after a bounded or sliced one that
 * stopped (a sliced one, tw_advance_sliced(), stops when its work budget is
 * spent, possibly in the middle of a coarse slot's demotion). From
 * that it checks, at every callback: pending, not early, not in the advance
 * that scheduled it, in order of max(due tick, floor); and after every
 * operation: tw_check(), the pending counts, every timer's state and
 * deadline, tw_now(), and tw_next_deadline() against the earliest due tick;
 * after every complete advance, that nothing due was left behind.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "model.h"
#include "timewheel.h"
#include "wheel.h" /* the tick a sliced advance stopped at (advance()) */

/* Few timers, so that operations keep meeting the same ones. */
#define NTIMERS 24
/* The hashed wheel walks every tick: bound one advance and a whole input,
 * so that no input runs for more than a fraction of a second. */
#define HASHED_STEP_TICKS UINT64_C(2048)
#define HASHED_TOTAL_TICKS (UINT64_C(1) << 18)
/* Levels of a custom hierarchical layout, at most. */
#define CUSTOM_LEVELS 6
/* What the visitor returns to stop a walk early. */
#define VISIT_STOP 7

struct fuzz;

struct ftimer {
    struct tw_timer t;
    struct fuzz *f;
    unsigned id;
    struct model_state m; /* the model's view */
    /* What its callback does (the "program" operation sets it). */
    uint8_t action;
    uint8_t other;
    uint8_t kind;
    uint64_t num;
};

struct fuzz {
    const uint8_t *p, *end;
    bool trace;
    bool destroy_at_end;
    struct tw_config cfg;
    uint32_t slots[CUSTOM_LEVELS];
    struct tw_wheel *w;
    struct ftimer timers[NTIMERS];
    size_t pending;
    uint64_t now;      /* the model's tw_now() */
    uint64_t max_tick; /* due tick of UINT64_MAX */
    long call;         /* the advance running or last run */
    bool advancing;
    bool quiet;        /* callbacks do nothing (final drain) */
    uint64_t target;   /* tick the running advance reaches */
    uint64_t floor;    /* the wheel's tick before the running advance */
    uint64_t last_key; /* order key of the last timer run in this call */
    uint64_t last_due; /* its due tick */
    uint64_t hashed_ticks;
    struct fuzz_stats st;
    bool failed;
    char *why;
    size_t len;
};

/* ---- reporting ---------------------------------------------------------- */

static void fail(struct fuzz *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail(struct fuzz *f, const char *fmt, ...)
{
    va_list ap;

    if (f->failed)
        return;
    f->failed = true;
    if (f->why && f->len) {
        va_start(ap, fmt);
        vsnprintf(f->why, f->len, fmt, ap);
        va_end(ap);
    }
}

#define CHECK(f, cond, ...)                                                    \
    do {                                                                       \
        if (!(cond))                                                           \
            fail((f), __VA_ARGS__);                                            \
    } while (0)

static void trace(const struct fuzz *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void trace(const struct fuzz *f, const char *fmt, ...)
{
    va_list ap;

    if (!f->trace)
        return;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---- input -------------------------------------------------------------- */

static uint8_t byte(struct fuzz *f)
{
    return f->p < f->end ? *f->p++ : 0;
}

static uint64_t num(struct fuzz *f)
{
    unsigned n = byte(f) % 9;
    uint64_t v = 0;

    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)byte(f) << (8 * i);
    return v;
}

static struct ftimer *timer_of(struct fuzz *f, uint8_t b)
{
    return &f->timers[b % NTIMERS];
}

/* ---- where deadlines and advances go --------------------------------------
 */

/* n folded into [0, bound]. */
static uint64_t upto(uint64_t n, uint64_t bound)
{
    return bound == UINT64_MAX ? n : n % (bound + 1);
}

/* A deadline in the region kind picks, placed by n. */
static uint64_t deadline_of(const struct fuzz *f, uint8_t kind, uint64_t n)
{
    uint64_t now = f->now, tick = f->cfg.tick_ns, b;

    switch (kind % 12) {
    case 0: /* the past */
        return now - upto(n, now < sat_mul(tick, 5) ? now : sat_mul(tick, 5));
    case 1:
        return now;
    case 2: /* the next few ticks */
        return sat_add(now, upto(n, sat_mul(tick, 3)));
    case 3: /* a tick boundary, or one ns either side */
        b = model_boundary(&f->cfg, sat_add(model_target(&f->cfg, now), n % 5));
        return (n >> 8) % 3 == 0 ? b - (b > 0) : sat_add(b, (n >> 8) % 3 - 1);
    case 4:
        return sat_add(now, sat_mul(tick, n % 4096));
    case 5:
        return sat_add(now, sat_mul(tick, n % 8000000));
    case 6:
        return sat_add(now, sat_mul(tick, n % (UINT64_C(1) << 36)));
    case 7:
        return n;
    case 8: /* the last ticks before the end of time */
        return UINT64_MAX - upto(n, sat_mul(tick, 2));
    case 9:
        return UINT64_MAX;
    case 10:
        return 0;
    default:
        return sat_add(now, n);
    }
}

/* ---- timers ------------------------------------------------------------- */

enum how { SCHEDULE, SCHEDULE_AFTER, REARM, REARM_AFTER };

static const char *const how_name[] = {"schedule", "schedule_after", "rearm",
                                       "rearm_after"};

/* Schedule or re-arm ft at a deadline of region kind, and check the answer:
 * schedule refuses a pending timer, re-arm says whether it was pending. The
 * _after forms take a delay: the distance to that deadline, or n itself
 * when the deadline is in the past (n may then overflow and saturate). */
static void sched(struct fuzz *f, struct ftimer *ft, enum how how, uint8_t kind,
                  uint64_t n)
{
    uint64_t d = deadline_of(f, kind, n), delay = d >= f->now ? d - f->now : n;
    bool rearm = how == REARM || how == REARM_AFTER;
    int rc, want;

    switch (how) {
    case SCHEDULE:
        rc = tw_schedule(f->w, &ft->t, d);
        break;
    case SCHEDULE_AFTER:
        rc = tw_schedule_after(f->w, &ft->t, delay);
        break;
    case REARM:
        rc = tw_rearm(f->w, &ft->t, d);
        break;
    default:
        rc = tw_rearm_after(f->w, &ft->t, delay);
        break;
    }
    if (how == SCHEDULE_AFTER || how == REARM_AFTER)
        d = sat_add(f->now, delay);
    want = model_expect(&ft->m, rearm);
    trace(f, "  %s %u at %llu: %d", how_name[how], ft->id,
          (unsigned long long)d, rc);
    CHECK(f, rc == want, "%s of timer %u (%s): %d, expected %d", how_name[how],
          ft->id, ft->m.pending ? "pending" : "idle", rc, want);
    if (rc >= 0)
        f->pending +=
            model_scheduled(&ft->m, &f->cfg, d, f->advancing ? f->call : -1);
}

static void cancel(struct fuzz *f, struct ftimer *ft)
{
    int rc = tw_cancel(f->w, &ft->t);
    bool was = ft->m.pending;
    int want = model_cancelled(&ft->m);

    trace(f, "  cancel %u: %d", ft->id, rc);
    CHECK(f, rc == want, "cancel of %s timer %u: %d", was ? "pending" : "idle",
          ft->id, rc);
    f->pending -= (size_t)want;
}

/* ---- visits ------------------------------------------------------------- */

struct visit {
    struct fuzz *f;
    size_t n;
    size_t stop_after; /* 0: the whole walk */
};

static struct ftimer *idle_timer(struct fuzz *f)
{
    for (unsigned i = 0; i < NTIMERS; i++)
        if (!f->timers[i].m.pending)
            return &f->timers[i];
    return NULL;
}

/* Every call that changes the wheel is refused from inside a visit. */
static void refused_in_visit(struct fuzz *f, struct tw_timer *t)
{
    struct ftimer *idle = idle_timer(f);
    struct tw_wheel *w = f->w;

    CHECK(f, tw_cancel(w, t) == -EBUSY, "cancel inside a visit");
    CHECK(f, tw_rearm(w, t, f->now) == -EBUSY, "rearm inside a visit");
    CHECK(f, tw_rearm_after(w, t, 1) == -EBUSY, "rearm_after in a visit");
    CHECK(f, tw_advance(w, f->now) == -EBUSY, "advance inside a visit");
    CHECK(f, tw_advance_bounded(w, f->now, 1) == -EBUSY,
          "bounded advance inside a visit");
    CHECK(f, tw_advance_sliced(w, f->now, 1, 1) == -EBUSY,
          "sliced advance inside a visit");
    CHECK(f, tw_destroy(w) == -EDEADLK, "destroy inside a visit");
    if (idle) {
        CHECK(f, tw_schedule(w, &idle->t, f->now) == -EBUSY,
              "schedule inside a visit");
        CHECK(f, tw_schedule_after(w, &idle->t, 0) == -EBUSY,
              "schedule_after inside a visit");
        CHECK(f, !tw_timer_pending(&idle->t), "scheduled inside a visit");
    }
}

static int visitor(struct tw_timer *t, void *ctx)
{
    struct visit *v = ctx;
    struct fuzz *f = v->f;
    bool ours = false;

    for (unsigned i = 0; i < NTIMERS; i++)
        ours |= t == &f->timers[i].t;
    CHECK(f, ours, "visit reported a timer that is not ours");
    if (!ours)
        return 1;
    CHECK(f, ((struct ftimer *)t->arg)->m.pending,
          "visit reported timer %u, which is not pending",
          ((struct ftimer *)t->arg)->id);
    if (v->n == 0)
        refused_in_visit(f, t);
    return ++v->n == v->stop_after ? VISIT_STOP : 0;
}

static void visit(struct fuzz *f, size_t stop_after)
{
    struct visit v = {f, 0, stop_after};
    int rc = tw_visit(f->w, visitor, &v);
    bool stops = stop_after && stop_after <= f->pending;

    trace(f, "  visit (stop after %zu): %d, %zu seen", stop_after, rc, v.n);
    CHECK(f, rc == (stops ? VISIT_STOP : 0), "visit returned %d", rc);
    CHECK(f, v.n == (stops ? stop_after : f->pending),
          "visit saw %zu timers, %zu pending", v.n, f->pending);
}

/* ---- callbacks ---------------------------------------------------------- */

/* What a firing timer does to the wheel, as the input programmed it. */
static void act(struct fuzz *f, struct ftimer *ft)
{
    struct ftimer *other = timer_of(f, ft->other);

    switch (ft->action % 10) {
    case 1: /* re-arm itself: a periodic timer */
        sched(f, ft, REARM, ft->kind, ft->num);
        break;
    case 2:
        sched(f, ft, SCHEDULE_AFTER, ft->kind, ft->num);
        break;
    case 3:
        cancel(f, other);
        break;
    case 4:
        sched(f, other, REARM, ft->kind, ft->num);
        break;
    case 5:
        sched(f, other, SCHEDULE, ft->kind, ft->num);
        break;
    case 6: /* due at once: must wait for the next advance */
        sched(f, ft, SCHEDULE, 1, 0);
        break;
    case 7: /* the wheel refuses re-entry, but may be walked */
        CHECK(f, tw_advance(f->w, f->now) == -EBUSY, "advance in callback");
        CHECK(f, tw_advance_bounded(f->w, f->now, 1) == -EBUSY,
              "bounded advance in callback");
        CHECK(f, tw_advance_sliced(f->w, f->now, 1, 1) == -EBUSY,
              "sliced advance in callback");
        CHECK(f, tw_destroy(f->w) == -EDEADLK, "destroy in callback");
        visit(f, 0);
        break;
    case 8: /* not pending in its own callback */
        cancel(f, ft);
        sched(f, ft, REARM_AFTER, 1, 0);
        break;
    case 9:
        cancel(f, other);
        sched(f, other, REARM, ft->kind, ft->num);
        break;
    default:
        break;
    }
}

static void on_fire(struct tw_timer *t, void *arg)
{
    struct ftimer *ft = arg;
    struct fuzz *f = ft->f;
    uint64_t key = ft->m.due > f->floor ? ft->m.due : f->floor;
    char why[200] = "";

    trace(f, "  fire %u (due tick %llu)", ft->id,
          (unsigned long long)ft->m.due);
    if (f->failed)
        return;
    CHECK(f, t == &ft->t && f->advancing, "callback outside an advance");
    CHECK(f, ft->m.pending, "timer %u ran but was not pending", ft->id);
    CHECK(f, !tw_timer_pending(t), "timer %u pending in its callback", ft->id);
    CHECK(f, ft->m.sched_call != f->call,
          "timer %u ran in the advance that scheduled it", ft->id);
    CHECK(f, ft->m.due <= f->target,
          "timer %u early: due tick %llu, reached %llu", ft->id,
          (unsigned long long)ft->m.due, (unsigned long long)f->target);
    CHECK(f, key >= f->last_key, "timer %u out of order: key %llu after %llu",
          ft->id, (unsigned long long)key, (unsigned long long)f->last_key);
    CHECK(f, tw_now(f->w) == f->now, "tw_now() in a callback");
    f->last_key = key;
    f->last_due = ft->m.due;
    ft->m.pending = false;
    f->pending--;
    f->st.fired++;
    CHECK(f, tw_pending(f->w) == f->pending,
          "pending %zu in a callback, model %zu", tw_pending(f->w), f->pending);
    CHECK(f, tw_check(f->w, why, sizeof(why)) == 0,
          "invariant in a callback: %s", why);
    if (!f->quiet && !f->failed)
        act(f, ft);
}

/* ---- advancing ---------------------------------------------------------- */

/* After a complete advance only timers it scheduled may be due. */
static void none_left(struct fuzz *f)
{
    for (unsigned i = 0; i < NTIMERS; i++) {
        const struct ftimer *ft = &f->timers[i];

        CHECK(f,
              !ft->m.pending || ft->m.due > f->target ||
                  ft->m.sched_call == f->call,
              "timer %u late: due tick %llu, reached %llu", ft->id,
              (unsigned long long)ft->m.due, (unsigned long long)f->target);
    }
}

/* Advance to now; budget 0 is unbounded; work 0 is tw_advance_bounded()
 * (or tw_advance()), else tw_advance_sliced() with work units, whose call
 * is complete once tw_next_deadline() says nothing is left at now. */
static void advance(struct fuzz *f, uint64_t now, uint64_t budget,
                    uint64_t work)
{
    uint64_t before = f->st.fired;
    int64_t ran;
    bool complete;

    f->call++;
    f->target = model_target(&f->cfg, now);
    f->last_key = 0;
    f->last_due = 0;
    f->advancing = true;
    f->now = now;
    trace(f, "advance to %llu (tick %llu), budget %llu, work %llu",
          (unsigned long long)now, (unsigned long long)f->target,
          (unsigned long long)budget, (unsigned long long)work);
    if (work)
        ran = tw_advance_sliced(f->w, now, budget, work);
    else if (budget)
        ran = tw_advance_bounded(f->w, now, budget);
    else
        ran = tw_advance(f->w, now);
    f->advancing = false;
    CHECK(f, ran >= 0 && (uint64_t)ran == f->st.fired - before,
          "advance returned %lld, %llu callbacks ran", (long long)ran,
          (unsigned long long)(f->st.fired - before));
    /* A sliced call is done when no work is left at now; one that is not
     * leaves the wheel's tick anywhere from the last timer it ran to the
     * target, and the floor follows it (wheel.h): every timer due by it is
     * due now, the others must come in order of due tick. (A done call on
     * a hierarchical wheel may leave its tick behind the target, as the
     * inline advance does: the floor, the target, is then above it.) */
    complete =
        work ? tw_next_deadline(f->w) > now : !budget || (uint64_t)ran < budget;
    if (work && !complete) {
        CHECK(f, f->w->cur >= f->last_due && f->w->cur <= f->target,
              "sliced advance left tick %llu outside [%llu, %llu]",
              (unsigned long long)f->w->cur, (unsigned long long)f->last_due,
              (unsigned long long)f->target);
        f->last_due = f->w->cur;
    }
    if (f->cfg.mode == TW_HASHED)
        f->hashed_ticks += f->target - f->floor;
    trace(f, "  ran %lld, %s, next deadline %llu, tick %llu", (long long)ran,
          complete ? "complete" : "not complete",
          (unsigned long long)tw_next_deadline(f->w),
          (unsigned long long)f->w->cur);
    if (complete) {
        f->floor = f->target;
        none_left(f);
    } else if (f->last_due > f->floor) {
        f->floor = f->last_due;
    }
}

/* The hashed wheel walks every tick: keep its advances short. */
static uint64_t clamp_hashed(struct fuzz *f, uint64_t to)
{
    uint64_t room = HASHED_TOTAL_TICKS - f->hashed_ticks, cap;

    if (f->cfg.mode != TW_HASHED)
        return to;
    if (room > HASHED_STEP_TICKS)
        room = HASHED_STEP_TICKS;
    if (model_target(&f->cfg, to) - f->floor <= room)
        return to;
    cap = model_boundary(&f->cfg, f->floor + room);
    return cap > f->now ? cap : f->now;
}

static uint64_t first_due(const struct fuzz *f)
{
    uint64_t first = UINT64_MAX;

    for (unsigned i = 0; i < NTIMERS; i++)
        if (f->timers[i].m.pending && f->timers[i].m.due < first)
            first = f->timers[i].m.due;
    return first;
}

/* Where an advance goes: kind picks a step, n its size. */
static uint64_t step_to(struct fuzz *f, uint8_t kind, uint64_t n)
{
    uint64_t now = f->now, tick = f->cfg.tick_ns, nd, b;

    switch (kind % 8) {
    case 0:
        return now;
    case 1: /* within a tick */
        return sat_add(now, n % tick);
    case 2: /* a few ticks */
        return sat_add(now, sat_add(sat_mul(tick, n % 4), (n >> 8) % tick));
    case 3:
        return sat_add(now, sat_mul(tick, n % 4096));
    case 4: /* anything, days or centuries */
        return sat_add(now, n);
    case 5: /* exactly the next deadline, or one ns before it */
    case 6:
        if (f->pending == 0) /* not the end of time: a tick */
            return sat_add(now, tick);
        nd = tw_next_deadline(f->w);
        return kind % 8 == 6 && nd > now ? nd - 1 : nd;
    default: /* the earliest due tick's boundary, or one ns either side */
        if (f->pending == 0)
            return sat_add(now, tick);
        b = model_boundary(&f->cfg, first_due(f));
        b = n % 3 == 0 ? b - (b > 0) : sat_add(b, n % 3 - 1);
        return b > now ? b : now;
    }
}

static void backwards(struct fuzz *f, uint64_t n)
{
    uint64_t to;

    if (f->now == 0)
        return;
    to = f->now - 1 - upto(n, f->now - 1);
    trace(f, "advance backwards to %llu", (unsigned long long)to);
    CHECK(f, tw_advance(f->w, to) == -ERANGE, "advance backwards");
    CHECK(f, tw_advance_bounded(f->w, to, 3) == -ERANGE,
          "bounded advance backwards");
    CHECK(f, tw_advance_bounded(f->w, f->now, 0) == -EINVAL,
          "bounded advance with no budget");
    CHECK(f, tw_advance_sliced(f->w, to, 3, 3) == -ERANGE,
          "sliced advance backwards");
    CHECK(f, tw_advance_sliced(f->w, f->now, 3, 0) == -EINVAL,
          "sliced advance with no work");
    CHECK(f, tw_now(f->w) == f->now, "time moved backwards");
}

/* ---- checks after every operation --------------------------------------- */

static void check_next_deadline(struct fuzz *f)
{
    uint64_t nd = tw_next_deadline(f->w), first = first_due(f), bound;

    if (f->pending == 0) {
        CHECK(f, nd == UINT64_MAX, "next deadline %llu with none pending",
              (unsigned long long)nd);
        return;
    }
    bound = model_boundary(&f->cfg, first);
    bound = bound < f->now ? f->now : bound;
    CHECK(f, nd >= f->now && nd <= bound,
          "next deadline %llu outside [%llu, %llu]", (unsigned long long)nd,
          (unsigned long long)f->now, (unsigned long long)bound);
    if (first <= f->floor) {
        CHECK(f, nd == f->now, "a timer is due, next deadline %llu",
              (unsigned long long)nd);
    } else if (f->cfg.mode == TW_HASHED) {
        /* While anything is pending, the hashed wheel wants the next tick
         * (or now, when a bounded advance left that tick behind). */
        bound = model_boundary(&f->cfg, f->floor + 1);
        bound = bound < f->now ? f->now : bound;
        CHECK(f, nd == bound,
              "hashed next deadline %llu, not the next "
              "tick %llu",
              (unsigned long long)nd, (unsigned long long)bound);
    }
}

static void check_all(struct fuzz *f)
{
    char why[200] = "";
    int rc;

    CHECK(f, tw_pending(f->w) == f->pending, "pending %zu, model %zu",
          tw_pending(f->w), f->pending);
    CHECK(f, tw_now(f->w) == f->now, "tw_now() %llu, model %llu",
          (unsigned long long)tw_now(f->w), (unsigned long long)f->now);
    for (unsigned i = 0; i < NTIMERS; i++) {
        const struct ftimer *ft = &f->timers[i];

        CHECK(f, tw_timer_pending(&ft->t) == ft->m.pending,
              "timer %u pending %d, model %d", i, tw_timer_pending(&ft->t),
              ft->m.pending);
        if (ft->m.pending)
            CHECK(f, tw_timer_deadline(&ft->t) == ft->m.deadline,
                  "timer %u deadline %llu, model %llu", i,
                  (unsigned long long)tw_timer_deadline(&ft->t),
                  (unsigned long long)ft->m.deadline);
    }
    rc = tw_check(f->w, why, sizeof(why));
    CHECK(f, rc == 0, "invariant: %s", why);
    check_next_deadline(f);
}

/* ---- operations --------------------------------------------------------- */

static void program(struct fuzz *f)
{
    struct ftimer *ft = timer_of(f, byte(f));

    ft->action = byte(f);
    ft->other = byte(f);
    ft->kind = byte(f);
    ft->num = num(f);
    trace(f, "program %u: action %u, other %u, kind %u", ft->id,
          ft->action % 10, ft->other % NTIMERS, ft->kind % 12);
}

/* The schedule and re-arm opcodes (0-5 and 15) and the form each takes;
 * the others are decoded in op(). */
static int sched_form(uint8_t code)
{
    static const signed char form[16] = {SCHEDULE, SCHEDULE, SCHEDULE_AFTER,
                                         REARM,    REARM,    REARM_AFTER,
                                         -1,       -1,       -1,
                                         -1,       -1,       -1,
                                         -1,       -1,       -1,
                                         SCHEDULE};

    return form[code % 16];
}

/* Decode and run one operation: an opcode byte and its operands. */
static void op(struct fuzz *f)
{
    uint8_t code = byte(f), a, kind;
    int form = sched_form(code);

    f->st.ops++;
    if (form >= 0) {
        a = byte(f);
        kind = byte(f);
        sched(f, timer_of(f, a), (enum how)form, kind, num(f));
        return;
    }
    switch (code % 16) {
    case 6:
        cancel(f, timer_of(f, byte(f)));
        break;
    case 7:
    case 8:
    case 14:
        kind = byte(f);
        advance(f, clamp_hashed(f, step_to(f, kind, num(f))), 0, 0);
        break;
    case 9: /* bounded; with bit 7 of a, sliced too */
        a = byte(f);
        kind = byte(f);
        advance(f, clamp_hashed(f, step_to(f, kind, num(f))), 1 + a % 8,
                a & 0x80 ? 1 + (a >> 3) % 16 : 0);
        break;
    case 10:
        backwards(f, num(f));
        break;
    case 11:
        program(f);
        break;
    case 12:
        visit(f, byte(f) % 4);
        break;
    default:
        advance(f, clamp_hashed(f, UINT64_MAX), 0, 0);
        break;
    }
}

/* ---- set-up and the end of a run ----------------------------------------- */

/* A hierarchical level's slot count from one byte: small counts, multiples
 * of 64 (whose bitmaps end exactly on a word), powers of two, or any count
 * up to the limit. Big levels are a quarter of the inputs: they make every
 * tw_check(), and so the fuzzer, slower. */
static uint32_t slot_count(uint8_t b)
{
    switch (b >> 6) {
    case 0:
        return 2u + b % 30u;
    case 1:
        return 64u * (1u + b % 64u);
    case 2:
        return 2u << (b % 12u);
    default:
        return 2u + (b * 331u) % (TW_MAX_LEVEL_SLOTS - 1u);
    }
}

/* A tick for a custom layout. kind picks: a few ns, 1 ms, any number, or
 * edge and the two ticks above it, edge being the tick at which the layout
 * meets a limit of 64-bit time (see custom_layout()). */
static uint64_t tick_of(struct fuzz *f, uint64_t edge)
{
    uint8_t kind = byte(f);
    uint64_t n = num(f);

    switch (kind % 4) {
    case 0:
        return 1 + n % 1000;
    case 1:
        return TW_DEFAULT_TICK_NS;
    case 2:
        return edge + n % 3;
    default:
        return n;
    }
}

/* The input's own shape: 1 to CUSTOM_LEVELS hierarchical levels, or one
 * hashed level of up to 4096 slots, and a tick (tick_of()). The edge of a
 * hierarchical layout of span ticks in all is UINT64_MAX / (span - 1):
 * from there on its own levels cover all of time and no coarser level is
 * added above them (for one level, that level is the top one); the edge of
 * a hashed wheel is where a revolution of Netty's rounded-up wheel reaches
 * INT64_MAX ns, the most it accepts. */
static void custom_layout(struct fuzz *f, enum tw_mode mode)
{
    uint64_t span = 1, edge;

    if (mode == TW_HASHED) {
        f->slots[0] = 1 + (uint32_t)(num(f) % TW_MAX_LEVEL_SLOTS);
        f->cfg.levels = 1;
        while (span < f->slots[0])
            span <<= 1;
        edge = INT64_MAX / span;
    } else {
        f->cfg.levels = 1 + byte(f) % CUSTOM_LEVELS;
        for (unsigned k = 0; k < f->cfg.levels; k++) {
            f->slots[k] = slot_count(byte(f));
            span = sat_mul(span, f->slots[k]);
        }
        edge = UINT64_MAX / (span - 1);
    }
    f->cfg.slots = f->slots;
    f->cfg.tick_ns = tick_of(f, edge);
}

/* Layouts 0-5 are the model's fixed ones; 6 is a custom hierarchical
 * layout, 7 a custom hashed one. */
static enum tw_mode layout_mode(unsigned layout)
{
    if (layout < MODEL_LAYOUTS)
        return model_layouts[layout].mode;
    return layout == 7 ? TW_HASHED : TW_HIER;
}

int fuzz_mode_of(const uint8_t *data, size_t size)
{
    return layout_mode(size ? data[0] % FUZZ_LAYOUTS : 0);
}

static void choose_layout(struct fuzz *f, unsigned layout)
{
    if (layout < MODEL_LAYOUTS) {
        const struct model_layout *l = &model_layouts[layout];

        f->cfg = model_config(l->mode, l->slots, l->levels, l->tick_ns);
        return;
    }
    tw_config_init(&f->cfg, layout_mode(layout));
    custom_layout(f, f->cfg.mode);
}

static void choose_start(struct fuzz *f)
{
    uint8_t b = byte(f);
    uint64_t n = num(f);

    switch (b % 5) {
    case 1:
        f->cfg.start_ns = 123456789;
        break;
    case 2:
        f->cfg.start_ns = UINT64_C(1) << 40;
        break;
    case 3: /* close to the end of time: the hashed wheel can reach it */
        f->cfg.start_ns = UINT64_MAX - upto(n, sat_mul(f->cfg.tick_ns, 1500));
        break;
    case 4:
        f->cfg.start_ns = n;
        break;
    default:
        f->cfg.start_ns = 0;
        break;
    }
}

/* Build the wheel; false when the input's layout was (rightly) refused. */
static bool setup(struct fuzz *f)
{
    uint8_t b = byte(f);
    int err = 1, verdict;

    f->st.layout = b % FUZZ_LAYOUTS;
    f->destroy_at_end = b & 0x80;
    choose_layout(f, f->st.layout);
    choose_start(f);
    verdict = model_config_valid(&f->cfg);
    f->w = tw_create(&f->cfg, &err);
    trace(f, "layout %u, mode %d, tick %llu, %u levels, start %llu: %s",
          f->st.layout, f->cfg.mode, (unsigned long long)f->cfg.tick_ns,
          f->cfg.levels, (unsigned long long)f->cfg.start_ns,
          f->w ? "created" : "refused");
    CHECK(f, (f->w != NULL) == (err == 0), "create: wheel %p, err %d",
          (void *)f->w, err);
    CHECK(f, f->w || err == -EINVAL, "create refused with %d", err);
    CHECK(f, verdict < 0 || (f->w != NULL) == (verdict == 1),
          "create %s a layout it should %s", f->w ? "accepted" : "refused",
          f->w ? "refuse" : "accept");
    if (!f->w)
        return false;
    f->st.created = true;
    f->now = f->cfg.start_ns;
    f->max_tick = model_due(&f->cfg, UINT64_MAX);
    f->call = -1;
    for (unsigned i = 0; i < NTIMERS; i++) {
        f->timers[i].f = f;
        f->timers[i].id = i;
        f->timers[i].m.sched_call = -1;
        tw_timer_init(&f->timers[i].t, on_fire, &f->timers[i]);
    }
    return true;
}

/* Run every pending timer (quietly) if the end of time is in reach, or
 * cancel them all; or destroy the wheel under them. Either way nothing may
 * be left pending. */
static void finish(struct fuzz *f)
{
    bool reach =
        f->cfg.mode == TW_HIER || f->max_tick - f->floor <= HASHED_STEP_TICKS;
    int rc;

    if (!f->failed && !f->destroy_at_end) {
        f->quiet = true;
        if (reach) {
            advance(f, UINT64_MAX, 0, 0);
            CHECK(f, f->pending == 0, "%zu timers left after the end of time",
                  f->pending);
        }
        for (unsigned i = 0; i < NTIMERS; i++)
            cancel(f, &f->timers[i]);
        check_all(f);
    }
    rc = tw_destroy(f->w);
    trace(f, "destroy: %d", rc);
    CHECK(f, rc == 0, "destroy: %d", rc);
    for (unsigned i = 0; i < NTIMERS; i++)
        CHECK(f, !tw_timer_pending(&f->timers[i].t),
              "timer %u pending after destroy", i);
}

int fuzz_run(const uint8_t *data, size_t size, char *why, size_t len,
             struct fuzz_stats *stats)
{
    struct fuzz *f = calloc(1, sizeof(*f));
    int rc;

    if (!f)
        abort();
    f->p = data;
    f->end = size ? data + size : data; /* data may be NULL when empty */
    f->trace = getenv("TW_FUZZ_TRACE") != NULL;
    f->why = why;
    f->len = len;
    if (why && len)
        why[0] = '\0';
    if (setup(f)) {
        check_all(f);
        while (f->p < f->end && !f->failed) {
            op(f);
            if (!f->failed)
                check_all(f);
        }
        finish(f);
    }
    rc = f->failed ? -1 : 0;
    if (stats)
        *stats = f->st;
    free(f);
    return rc;
}
