/*
 * Messages without a ring: the cancel queue (lib/service/handle.c,
 * send_message()). A handle has no node for the queue; a message that
 * cannot go into the thread's message ring (no rings for this thread and
 * service, or a full block and no new one) goes onto the queue in a node
 * of its own, which the worker frees. When even that node cannot be
 * allocated:
 *  - a cancel still wins (1) and loses nothing: the timer never runs, the
 *    cancel is counted at once, and the service lets go of the handle
 *    exactly once, at its deadline or at stop, release hook included;
 *  - a re-arm to an earlier deadline answers -ENOMEM and changes nothing:
 *    the timer keeps its deadline and fires there, never before.
 *
 * The test allocator (tests/util.c) fails the allocation asked for, and
 * guards every block, so a touch of a freed node or handle faults; every
 * block must come back. A thread is made ringless by failing its rings'
 * allocation at its first schedule, as service_ring does.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>

#include "timewheel.h"
#include "util.h"

#define HOUR (UINT64_C(3600) * SEC)
/* Handles in a ring block (lib/service/ring.h). */
#define BLOCK 511
/* A deadline the test must act before (a cancel, a re-arm): far above any
 * scheduling delay on a loaded machine, as the test then waits for it. */
#define DUE (1 * SEC)

static void guarded(void)
{
    alloc_install(true);
}

static void identity(struct tw_service *s)
{
    struct tw_service_stats st = service_stats(s);

    cr_assert_eq(
        st.scheduled, st.completed + st.cancelled + st.returned + st.pending,
        "scheduled %llu, completed %llu, cancelled %llu, returned "
        "%llu, pending %llu",
        (unsigned long long)st.scheduled, (unsigned long long)st.completed,
        (unsigned long long)st.cancelled, (unsigned long long)st.returned,
        (unsigned long long)st.pending);
}

/* Destroy s: every block back, none freed with the wrong size. */
static void gone(struct tw_service *s)
{
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held after destroy",
                 alloc_live());
    cr_assert_eq(atomic_load(&alloc_log.bad_frees), 0);
}

/* Allocations asked for (failed ones included) since `since`. */
static unsigned long calls_since(unsigned long since)
{
    return atomic_load(&alloc_log.calls) - since;
}

/* A timer at deadline with the counting callback and release hook. */
static struct tw_handle *at(struct tw_service *s, uint64_t deadline,
                            tw_service_callback *cb)
{
    struct tw_timer_spec spec = {
        .deadline = deadline, .cb = cb, .release = count_release};
    struct tw_handle *h = NULL;

    cr_assert_eq(tw_service_submit(s, &spec, &h), 0);
    return h;
}

/*
 * This thread's first schedule into s makes the handle, then the rings,
 * whose allocation fails: from then on its messages go through the queue.
 * That schedule's timer is cancelled at once, through the queue: one
 * allocation, the message's node. Its release hook counts one.
 */
static void go_ringless(struct tw_service *s)
{
    unsigned long c = atomic_load(&alloc_log.calls);
    struct tw_handle *h;

    alloc_fail_after(2);
    h = at(s, tw_service_now(s) + HOUR, count_run);
    alloc_fail_after(0);
    cr_assert_eq(calls_since(c), 2, "the handle, then the rings");
    c = atomic_load(&alloc_log.calls);
    cr_assert_eq(tw_handle_cancel_release(h), 1);
    cr_assert_eq(calls_since(c), 1, "a message's node");
    wait_for(&releases, 1, "the first cancelled timer let go of");
}

/*
 * Without rings every cancel takes a node, and the worker still reaps each
 * within its reap interval (a message it never took would hold its handle
 * for an hour): every release hook runs, every node and handle is freed.
 */
Test(service_cancelq, cancels_without_rings_reap_through_the_queue,
     .init = guarded, .timeout = 60)
{
    enum { N = 300 };
    struct tw_service *s = default_service(TW_HIER);

    go_ringless(s);
    for (int i = 0; i < N; i++) {
        struct tw_handle *h = at(s, tw_service_now(s) + HOUR, count_run);
        unsigned long c = atomic_load(&alloc_log.calls);

        cr_assert_eq(i % 2 ? tw_handle_cancel_release(h) : tw_handle_cancel(h),
                     1);
        cr_assert_eq(calls_since(c), 1, "cancel %d: one node", i);
        if (i % 2 == 0)
            tw_handle_release(h);
    }
    wait_for(&releases, N + 1, "cancelled timers let go of");
    cr_assert_eq(service_stats(s).cancelled, (uint64_t)N + 1);
    cr_assert_eq(service_stats(s).pending, 0);
    identity(s);
    cr_assert_eq(atomic_load(&runs), 0);
    gone(s);
}

/*
 * A cancel whose node cannot be allocated: 1, counted at once, and the
 * timer never runs; the service lets go of it at its deadline (the wheel
 * meets it there, cancelled), once.
 */
static void cancel_without_node(struct tw_service *s)
{
    struct tw_handle *h;
    unsigned long c, held;

    go_ringless(s);
    h = at(s, tw_service_now(s) + DUE, count_run);
    held = alloc_live();
    c = atomic_load(&alloc_log.calls);
    alloc_fail_after(1);
    cr_assert_eq(tw_handle_cancel(h), 1);
    alloc_fail_after(0);
    cr_assert_eq(calls_since(c), 1, "the node was asked for");
    cr_assert_eq(alloc_live(), held, "and not had");
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_CANCELLED);
    cr_assert_eq(tw_handle_cancel(h), 0);
    cr_assert_eq(service_stats(s).cancelled, 2);
    cr_assert_eq(service_stats(s).pending, 0);
    identity(s);
    wait_for(&releases, 2, "the cancelled timer let go of at its deadline");
    cr_assert_eq(atomic_load(&runs), 0, "a cancelled timer ran");
    tw_handle_release(h);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(atomic_load(&releases), 2, "released once");
    cr_assert_eq(service_stats(s).cancelled, 2);
    cr_assert_eq(service_stats(s).returned, 0);
    identity(s);
    gone(s);
}

Test(service_cancelq, cancel_without_a_node_lets_go_at_the_deadline_hier,
     .init = guarded)
{
    cancel_without_node(default_service(TW_HIER));
}

Test(service_cancelq, cancel_without_a_node_lets_go_at_the_deadline_hashed,
     .init = guarded)
{
    cancel_without_node(service_pool(TW_HASHED, 2));
}

static atomic_int handed;

static void count_handback(const struct tw_handback *t, void *ctx)
{
    (void)t;
    (void)ctx;
    atomic_fetch_add(&handed, 1);
}

/* The same with a deadline an hour out: stop lets go of it, as cancelled
 * (not handed back), once; cancel_release's reference goes too. */
Test(service_cancelq, cancel_without_a_node_lets_go_at_stop, .init = guarded)
{
    struct tw_service *s = default_service(TW_HIER);
    struct tw_handle *h;

    go_ringless(s);
    h = at(s, tw_service_now(s) + HOUR, count_run);
    alloc_fail_after(1);
    cr_assert_eq(tw_handle_cancel_release(h), 1);
    alloc_fail_after(0);
    cr_assert_eq(service_stats(s).pending, 0);
    identity(s);
    cr_assert_eq(tw_service_stop(s, count_handback, NULL), 0);
    cr_assert_eq(atomic_load(&handed), 0, "a cancelled timer handed back");
    cr_assert_eq(atomic_load(&releases), 2);
    cr_assert_eq(atomic_load(&runs), 0);
    cr_assert_eq(service_stats(s).cancelled, 2);
    cr_assert_eq(service_stats(s).returned, 0);
    identity(s);
    gone(s);
}

/* ---- re-arm to an earlier deadline --------------------------------------- */

static _Atomic uint64_t ran_at;

static void note_run(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
    atomic_store(&ran_at, now_ns());
    count_run(h, arg);
}

/*
 * A re-arm to an earlier deadline whose node cannot be allocated: -ENOMEM,
 * and the timer keeps its deadline and fires there, not before. A re-arm
 * to a later deadline sends nothing, so it needs no node; one to an earlier
 * deadline with the node to be had goes through the queue and fires early.
 */
Test(service_cancelq, rearm_earlier_without_a_node_changes_nothing,
     .init = guarded, .timeout = 60)
{
    struct tw_service *s = default_service(TW_HIER);
    struct tw_handle *h, *far;
    unsigned long c;
    uint64_t d;

    go_ringless(s);
    d = tw_service_now(s) + DUE;
    h = at(s, d, note_run);
    c = atomic_load(&alloc_log.calls);
    alloc_fail_after(1);
    cr_assert_eq(tw_handle_rearm_at(h, tw_service_now(s) + MS), -ENOMEM);
    alloc_fail_after(1);
    cr_assert_eq(tw_handle_rearm(h, MS), -ENOMEM);
    alloc_fail_after(0);
    cr_assert_eq(calls_since(c), 2, "a node asked for each time");
    cr_assert_eq(tw_handle_deadline(h), d);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_PENDING);
    c = atomic_load(&alloc_log.calls);
    alloc_fail_after(1);
    cr_assert_eq(tw_handle_rearm_at(h, d), 1, "not earlier: no message");
    alloc_fail_after(0);
    cr_assert_eq(calls_since(c), 0);
    wait_for(&runs, 1, "the timer run at its deadline");
    cr_assert_geq(atomic_load(&ran_at), d, "ran %lld ns before its deadline",
                  (long long)(d - atomic_load(&ran_at)));
    wait_for(&releases, 2, "the timer let go of");
    cr_assert_eq(service_stats(s).completed, 1);

    /* With the node: through the queue, and it fires long before the hour. */
    far = at(s, tw_service_now(s) + HOUR, count_run);
    c = atomic_load(&alloc_log.calls);
    cr_assert_eq(tw_handle_rearm(far, MS), 1);
    cr_assert_eq(calls_since(c), 1, "a message's node");
    wait_for(&runs, 2, "the timer re-armed to 1 ms");
    tw_handle_release(far);
    tw_handle_release(h);
    wait_for(&releases, 3, "the re-armed timer let go of");
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(service_stats(s).completed, 2);
    identity(s);
    gone(s);
}

/* ---- a full ring block and no new one ------------------------------------ */

/*
 * With the worker held in a callback, the thread's cancels fill its message
 * ring's first block; the next needs a block, whose allocation fails: its
 * message goes onto the queue in a node (the next allocation), and the
 * cancel after it grows the ring. Once the worker is let go, every
 * cancelled timer is let go of once and every block comes back.
 */
Test(service_cancelq, full_block_without_a_new_one_uses_the_queue,
     .init = guarded, .timeout = 60)
{
    enum { N = BLOCK + 3 };
    static struct hold hd;
    static struct tw_handle *h[N];
    struct tw_service *s = default_service(TW_HIER);
    unsigned long c;

    cr_assert_eq(tw_service_schedule(s, 0, hold_cb, &hd, NULL), 0);
    wait_for(&hd.in, 1, "the holding callback");
    for (int i = 0; i < N; i++)
        h[i] = at(s, tw_service_now(s) + HOUR, count_run);
    c = atomic_load(&alloc_log.calls);
    cr_assert_eq(tw_handle_cancel_release(h[0]), 1);
    cr_assert_eq(calls_since(c), 1, "the message ring's first block");
    c = atomic_load(&alloc_log.calls);
    for (int i = 1; i < BLOCK; i++)
        cr_assert_eq(tw_handle_cancel_release(h[i]), 1);
    cr_assert_eq(calls_since(c), 0, "the block holds %d", BLOCK);
    alloc_fail_after(1);
    cr_assert_eq(tw_handle_cancel_release(h[BLOCK]), 1);
    alloc_fail_after(0);
    cr_assert_eq(calls_since(c), 2, "a block (failed), then a node");
    c = atomic_load(&alloc_log.calls);
    cr_assert_eq(tw_handle_cancel_release(h[BLOCK + 1]), 1);
    cr_assert_eq(calls_since(c), 1, "the ring grows");
    cr_assert_eq(tw_handle_cancel_release(h[BLOCK + 2]), 1);
    cr_assert_eq(service_stats(s).cancelled, (uint64_t)N);
    atomic_store(&hd.go, 1);
    wait_for(&releases, N, "cancelled timers let go of");
    cr_assert_eq(atomic_load(&runs), 0);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(atomic_load(&releases), N, "each let go of once");
    identity(s);
    gone(s);
}
