/*
 * What a producer passes through on its way into the service, and what
 * every thread counts: stop's gate, back-pressure, and the counters behind
 * tw_service_stats().
 *
 * Stripes. A service has TW__STRIPES cache lines of counters that each
 * belong to one thread, and one more, the shared stripe, for everyone else.
 * A thread claims a free stripe index for itself at the first count it
 * makes on any service (a schedule or cancel; for the worker, executor
 * threads and stop, the first run or let-go) (one compare-and-swap on a
 * process-wide bitmap) and gives it back when it exits (a pthread key's
 * destructor); it then owns stripe i of every service. Only the owner writes an
 * owned stripe, so it counts with a plain load and store (a relaxed load, a
 * release store: no locked instruction), and two threads never write the same
 * line. When all TW__STRIPES indexes are taken, or the key cannot be made, a
 * thread uses the shared stripe, with atomic read-modify-writes. The claim's
 * acquire and the exit's release order the old owner's writes before the
 * new owner's: its counters, and its producer side of the stripe's rings
 * in every service (ring.c), which the new owner takes over as they are,
 * handles still in them included (the worker drains them as before).
 *
 * A stripe holds: schedule calls inside the gate; timers accepted and
 * refused by its thread; its thread's winning cancels; timers its thread
 * let go of as completed or returned (the worker's, an executor thread's
 * or stop's stripe); callbacks its thread started; its unused credit of
 * pending slots.
 *
 * The gate. A schedule sets its stripe's `inside` and then looks at
 * `closed`; stop sets `closed` and then waits until every stripe's `inside`
 * is 0. Store then load on both sides, so either the schedule sees `closed`
 * and refuses with -ESHUTDOWN, or stop waits for it to leave, with its
 * timer queued before stop drains the queue. The store-load order needs a
 * full barrier on both sides; where the kernel has it, stop pays for both
 * with membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a barrier
 * on every thread of the process, and the producer only keeps the compiler
 * from reordering its store and load (as liburcu's membarrier flavour
 * does). Without it, and on the shared stripe, the producer's store is a
 * locked read-modify-write. The worker uses the same barrier for its sleep
 * hand-shake with the producers' rings (tw__gate_membarrier(), worker.c),
 * and rings are made only where it exists (tw__gate_asym()). Should the
 * call fail after the registration succeeded (a seccomp filter installed
 * since), producers fall back to the locked add from then on, and stop,
 * which cannot know whether a producer's plain store is still in its
 * store buffer, waits 10 ms (store buffers drain in nanoseconds) before
 * it looks: the one case where the gate rests on timing.
 *
 * Bounded. Stop waits only for calls that entered before they could see
 * `closed`: a call looks at `closed` before it marks itself inside, and a
 * refused call marks nothing. Before that rule the calls stop refused kept
 * the shared stripe's count above 0 (threads beyond the 64 stripes share
 * it), and stop waited for an instant when it read 0: with 100 threads
 * calling without pause it did not return until they stopped (issue 22).
 * Owned stripes had the milder form: a refused call holds its stripe at 1
 * for a few instructions, and under ThreadSanitizer, where those take
 * long, stop caught one stripe after another at 1 with its owner
 * preempted (4.6 s with 72 threads). A thread's later loads of `closed`
 * cannot read an older value than the one that refused it, so each thread
 * delays stop by at most the call it was in when the gate closed: the time
 * for every caller to have one more turn on a processor (service_gate
 * tests). The look costs the schedule one load of a line it reads anyway:
 * 41.0 -> 42.0 instructions per call in tw_service_submit() itself under
 * callgrind (svcbench --n 100000 --warmup 0 --impl hier schedule, 200,005
 * calls; 255.0 -> 256.7 with what it calls).
 *
 * Back-pressure, two bounds, both answered with -EAGAIN:
 *  - max_pending (default TW_SERVICE_DEFAULT_MAX_PENDING): slots are taken
 *    from a shared pool `avail` TW__CREDIT_CHUNK at a time into the
 *    stripe's credit, and given back one by one: a winning cancel into the
 *    canceller's credit (a stripe holding 2 * TW__CREDIT_CHUNK unused
 *    slots returns a chunk to the pool), a timer that ran or was handed
 *    back straight to the pool. The service never holds more than
 *    max_pending timers; a schedule may be refused while fewer than
 *    (TW__STRIPES + 1) * 2 * TW__CREDIT_CHUNK slots sit unused in stripes.
 *  - max_lag (default TW_SERVICE_DEFAULT_MAX_LAG_NS): the worker sets
 *    `behind` when it has not emptied the new-timer queue for longer than
 *    that, and clears it once it has; producers are refused meanwhile, so
 *    a flood cannot make the queue, and the lateness of what waits in it,
 *    grow without bound.
 *
 * Stats. Each outcome is counted (a release store or add) only after the
 * `accepted` count of its timer (which happened before the push that handed
 * the timer, or its handle, to anyone): completed and returned when the
 * service lets go of the timer, cancelled when a cancel wins. Each counter
 * is a sum over stripes, read one stripe after another, so a sum is a value
 * its counter held at some instant of the read, but two sums are not of
 * one instant. pending is what needs an instant: it was read as accepted
 * minus the outcomes, outcomes first, and every timer accepted and let go
 * of between the two reads was counted as pending: with max_pending 1000
 * and two flooding producers, samples read 1,937 (issue 22: 26,154;
 * service_stats/pending_is_a_number_that_was_pending). So stats
 * reads `accepted` (A1), then the outcomes (O), then `accepted` again (A2),
 * and reports pending = max(A1 - O, 0). With P(t) the real pending at t
 * (accepted minus let go of, as counted), and O read from t1 to t2:
 * A1 <= A(t1) and O >= O(t1), so the answer is at most P(t1), a value that
 * really was pending (never above max_pending); and A2 - O >= P(t2), and P
 * moves by steps of one, so some instant between t1 and t2 had a P between
 * the answer and A2 - O: the answer is short of a real value by at most
 * A2 - A1, the timers accepted while it read the outcomes, and exact when
 * none was. It reads up to STATS_TRIES times while some were, and keeps the
 * read with the fewest. scheduled is reported as the outcomes plus pending
 * (max(A1, O), a value `accepted` held during the call), so that
 * scheduled == completed + cancelled + returned + pending in every
 * snapshot.
 */
#define _DEFAULT_SOURCE 1

#include <errno.h>
#include <linux/membarrier.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "service.h"

/* Bit i: stripe index i is owned by a live thread. */
static atomic_uint_fast64_t claimed;
_Thread_local unsigned tw__my_stripe;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static atomic_bool key_made;

_Static_assert(TW__STRIPES <= 64, "the claim bitmap is one 64-bit word");

/* Thread exit: give the index back. Anything this thread does afterwards
 * (in another key's destructor) goes through the shared stripe. */
static void unclaim(void *v)
{
    unsigned i = (unsigned)(uintptr_t)v - 1;

    tw__my_stripe = TW__STRIPES + 1;
    atomic_fetch_and_explicit(&claimed, ~(UINT64_C(1) << i),
                              memory_order_release);
}

static void make_key(void)
{
    atomic_store_explicit(&key_made, pthread_key_create(&key, unclaim) == 0,
                          memory_order_relaxed);
}

/* When the library is unloaded (dlclose, or the end of the process), no
 * thread that exits later may call unclaim(), which is gone with it. */
__attribute__((destructor)) static void drop_key(void)
{
    if (atomic_load_explicit(&key_made, memory_order_relaxed))
        pthread_key_delete(key);
}

/* A free index for this thread, or TW__STRIPES (the shared stripe). */
static unsigned claim(void)
{
    uint_fast64_t c;

    pthread_once(&key_once, make_key);
    if (!atomic_load_explicit(&key_made, memory_order_relaxed))
        return TW__STRIPES;
    c = atomic_load_explicit(&claimed, memory_order_relaxed);
    while (~c) {
        unsigned i = (unsigned)__builtin_ctzll(~(unsigned long long)c);

        if (i >= TW__STRIPES)
            break;
        if (atomic_compare_exchange_weak_explicit(
                &claimed, &c, c | UINT64_C(1) << i, memory_order_acquire,
                memory_order_relaxed)) {
            if (!pthread_setspecific(key, (void *)(uintptr_t)(i + 1)))
                return i;
            atomic_fetch_and_explicit(&claimed, ~(UINT64_C(1) << i),
                                      memory_order_release);
            break;
        }
    }
    return TW__STRIPES;
}

struct tw__stripe *tw__stripe_claim(struct tw_service *s)
{
    tw__my_stripe = claim() + 1;
    return &s->stripes[tw__my_stripe - 1];
}

/* Whether the kernel runs a barrier on every thread for stop (see the
 * top); decided once, before the first service exists. */
atomic_bool tw__asym;
static pthread_once_t asym_once = PTHREAD_ONCE_INIT;

static void register_membarrier(void)
{
    atomic_store_explicit(&tw__asym,
                          syscall(SYS_membarrier,
                                  MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0,
                                  0) == 0,
                          memory_order_relaxed);
}

void tw__gate_init(void)
{
    pthread_once(&asym_once, register_membarrier);
}

/* Whether the expedited membarrier is registered: the producers' rings
 * (ring.c) rely on it for the worker's sleep hand-shake. */
bool tw__gate_asym(void)
{
    return atomic_load_explicit(&tw__asym, memory_order_relaxed);
}

/* A full barrier on every thread of the process that is running now (the
 * others pass one when they are next scheduled). The expedited barrier
 * needs the registration, which a child of fork() may not have inherited:
 * then the global one, slower (it waits for a grace period) but registered
 * by no one. Only when tw__gate_asym(). */
bool tw__gate_membarrier(void)
{
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return true;
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
        return true;
    /* Neither ran (a seccomp filter installed since, a nohz_full kernel
     * for the global one): from now on producers pay the barrier
     * themselves (locked adds at the gate, no new rings). */
    atomic_store_explicit(&tw__asym, false, memory_order_seq_cst);
    return false;
}

/* How long stop sleeps between looks at a stripe with a call inside. A
 * sleep, not sched_yield(): among a hundred busy threads a yield gave the
 * processor away for 100-200 ms at a time, while a thread woken from a
 * short sleep is soon run again (test service_gate/
 * stop_returns_while_128_threads_schedule at a load average of 30: the
 * gate's wait went from 0.5-1.5 s to 0.1-0.9 s, each look that found a
 * call inside costing 100-200 ms with the yield). */
#define GATE_POLL_NS 50000

/* Close the gate and wait for the schedule calls inside to leave. Only
 * calls that entered before they could see `closed` count (a refused one
 * never bumps a shared count), so the wait ends once each of them has had
 * a turn on a processor, however many threads keep calling. */
void tw__gate_close(struct tw_service *s)
{
    atomic_store_explicit(&s->closed, true, memory_order_seq_cst);
    /* Without the barrier a producer's plain "inside" store may still sit
     * in its store buffer: give every buffer far longer than it takes to
     * drain (nanoseconds) before looking. Only if membarrier failed after
     * it had registered. */
    if (tw__gate_asym() && !tw__gate_membarrier())
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    for (unsigned i = 0; i <= TW__STRIPES; i++)
        while (
            atomic_load_explicit(&s->stripes[i].inside, memory_order_acquire))
            nanosleep(&(struct timespec){.tv_nsec = GATE_POLL_NS}, NULL);
}

static int refuse(struct tw_service *s, struct tw__stripe *st)
{
    tw__count(s, st, &st->rejected);
    return -EAGAIN;
}

/* The rest of tw__gate_reserve() (service.h): a refusal, the shared
 * stripe, or a stripe out of credit, which takes a chunk from the pool. */
int tw__gate_reserve_slow(struct tw_service *s, struct tw__stripe *st)
{
    int_fast64_t a, got;

    if (atomic_load_explicit(&s->behind, memory_order_relaxed))
        return refuse(s, st);
    if (!s->max_pending)
        return 0;
    if (tw__shared(s, st)) {
        if (atomic_fetch_sub_explicit(&st->credit, 1, memory_order_relaxed) > 0)
            return 0;
        atomic_fetch_add_explicit(&st->credit, 1, memory_order_relaxed);
    } else if (atomic_load_explicit(&st->credit, memory_order_relaxed) > 0) {
        tw__credit_add(s, st, -1);
        return 0;
    }
    a = atomic_load_explicit(&s->avail, memory_order_relaxed);
    do {
        if (a <= 0)
            return refuse(s, st);
        got = a < TW__CREDIT_CHUNK ? a : TW__CREDIT_CHUNK;
    } while (!atomic_compare_exchange_weak_explicit(
        &s->avail, &a, a - got, memory_order_relaxed, memory_order_relaxed));
    tw__credit_add(s, st, got - 1);
    return 0;
}

/* Give back a slot that tw__gate_reserve() took (the schedule failed). */
void tw__gate_unreserve(struct tw_service *s, struct tw__stripe *st)
{
    if (s->max_pending)
        tw__credit_add(s, st, 1);
}

/* The service let go of a timer that completed or was returned: count it
 * on this thread's stripe, and give its slot back to the pool (not to this
 * thread's credit: the worker, which lets go of most timers, schedules
 * none, and slots kept there would refuse schedules under a small
 * max_pending). */
void tw__gate_let_go(struct tw_service *s, bool completed)
{
    struct tw__stripe *st = tw__stripe_mine(s);

    tw__count(s, st, completed ? &st->completed : &st->returned);
    if (s->max_pending)
        atomic_fetch_add_explicit(&s->avail, 1, memory_order_relaxed);
}

/* The timers accepted on every stripe. */
static uint64_t accepted(struct tw_service *s)
{
    uint64_t n = 0;

    for (unsigned i = 0; i <= TW__STRIPES; i++)
        n +=
            atomic_load_explicit(&s->stripes[i].accepted, memory_order_acquire);
    return n;
}

/* Every stripe's outcome counters (and runs, rejected) into out, in one
 * pass: acquire, so every acceptance behind an outcome is visible to a
 * later read of `accepted`. */
static void outcomes(struct tw_service *s, struct tw_service_stats *out)
{
    const memory_order acq = memory_order_acquire;

    memset(out, 0, sizeof(*out));
    for (unsigned i = 0; i <= TW__STRIPES; i++) {
        struct tw__stripe *st = &s->stripes[i];

        out->cancelled += atomic_load_explicit(&st->cancelled, acq);
        out->completed += atomic_load_explicit(&st->completed, acq);
        out->returned += atomic_load_explicit(&st->returned, acq);
        out->runs += atomic_load_explicit(&st->runs, memory_order_relaxed);
        out->rejected +=
            atomic_load_explicit(&st->rejected, memory_order_relaxed);
    }
}

/* Reads of the counters a snapshot may take to find one during which no
 * timer was accepted (then pending is exact; see the top, "Stats"). */
#define STATS_TRIES 4

TW_PUBLIC int tw_service_stats(struct tw_service *s,
                               struct tw_service_stats *out)
{
    uint64_t spread = UINT64_MAX;

    if (!s || !out)
        return -EINVAL;
    if (s->forked)
        return -ECHILD; /* fork.c */
    for (int k = 0; k < STATS_TRIES && spread; k++) {
        struct tw_service_stats r = {0}; /* the reserved tail: zero */
        uint64_t before = accepted(s), done, after;

        outcomes(s, &r);
        after = accepted(s);
        if (after - before >= spread)
            continue;
        spread = after - before;
        done = r.completed + r.cancelled + r.returned;
        r.pending = before > done ? before - done : 0;
        r.scheduled = done + r.pending;
        *out = r;
    }
    out->wakeups = atomic_load_explicit(&s->wakeups, memory_order_relaxed);
    return 0;
}
