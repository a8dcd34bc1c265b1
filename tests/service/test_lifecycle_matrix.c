/*
 * The composition matrix of a service handle's lifecycle: every pair of
 * {fire, re-arm from the callback, re-arm from another thread, cancel,
 * cancel-release, cancel-wait, stop, destroy}, made to overlap by
 * construction (lifecycle.h): the callback is held inside its run until
 * the other call has been made, has returned, or is seen asleep in it; a
 * stop is held open by a callback that has not returned. Each case checks
 * exact outcomes: every answer, the number of runs (none after a cancel
 * that won), the release hook once, stop's hand-backs and the counters.
 * Every case runs with callbacks on the worker and on a pool of two.
 *
 * Names: <first>_x_<second>[_<variant>]; the order in the name is the
 * order the two calls take effect in, where it matters.
 *
 * Cancel-release gives up the caller's reference, the only one a caller
 * has (there is no retain): once it has been called no other call on the
 * handle may follow or still be under way on another thread (the handle
 * may be freed), except from the handle's own callback, which the
 * service's reference covers. So it comes last among the calls on its
 * handle here: cancel-release then a re-arm or a cancel from another
 * thread is a use after free, not a pair of the matrix.
 */
#define _GNU_SOURCE
#include "lifecycle.h"

#define QUIET_NS (60 * MS) /* long enough for a run due in 2 ms to show */
#define SOON (2 * MS)      /* a re-arm meant to run again */

static struct cbx c, b; /* the timer under test; a blocker holding stop */
static struct lc_back back;

#define PAIR(name)                                                             \
    static void name(unsigned threads);                                        \
    Test(service_lifecycle_matrix, name##_worker, .timeout = 60)               \
    {                                                                          \
        name(0);                                                               \
    }                                                                          \
    Test(service_lifecycle_matrix, name##_executor, .timeout = 60)             \
    {                                                                          \
        name(2);                                                               \
    }                                                                          \
    static void name(unsigned threads)

/* No run beyond `want`, a while after the last one. */
static void quiet(struct cbx *x, int want)
{
    sleep_ns(QUIET_NS);
    cr_assert_eq(atomic_load(&x->runs), want, "runs: %d, expected %d",
                 atomic_load(&x->runs), want);
}

/* The counters once stop has returned. */
static void expect(struct tw_service *s, uint64_t scheduled, uint64_t nruns,
                   uint64_t completed, uint64_t cancelled, uint64_t returned)
{
    struct tw_service_stats st = lc_stats(s);

    cr_assert_eq(st.scheduled, scheduled, "scheduled %lu",
                 (unsigned long)st.scheduled);
    cr_assert_eq(st.runs, nruns, "runs %lu", (unsigned long)st.runs);
    cr_assert_eq(st.completed, completed, "completed %lu",
                 (unsigned long)st.completed);
    cr_assert_eq(st.cancelled, cancelled, "cancelled %lu",
                 (unsigned long)st.cancelled);
    cr_assert_eq(st.returned, returned, "returned %lu",
                 (unsigned long)st.returned);
    cr_assert_eq(st.pending, 0);
}

/* Arm c at once, held in its first run; wait until it is in there. */
static struct tw_handle *running(struct tw_service *s, uint64_t period)
{
    struct tw_handle *h;

    atomic_store(&c.hold, 1);
    h = cbx_arm(s, &c, 0, period);
    wait_for(&c.runs, 1, "first run");
    return h;
}

/* Destroy s and check the end of c: released once, h released. */
static void finish(struct tw_service *s, struct tw_handle *h)
{
    cr_assert_eq(tw_service_destroy(s), 0);
    if (h)
        tw_handle_release(h);
    cr_assert_eq(atomic_load(&c.released), 1, "release hook: %d",
                 atomic_load(&c.released));
}

/* ---- fire x the others ------------------------------------------------ */

/* Its own re-arm: it runs again, once, and completes. */
PAIR(fire_x_rearm_cb)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;

    c.act = ACT_REARM;
    c.act_delay = SOON;
    h = cbx_arm(s, &c, 0, 0);
    wait_for(&c.returned, 2, "second run");
    quiet(&c, 2);
    cr_assert_eq(c.act_rc, 1);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_DONE);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 2, 1, 0, 0);
    finish(s, h);
}

/* Re-armed from outside while it runs: runs again once it returns. */
PAIR(fire_x_rearm_other)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, 0);

    cr_assert_eq(tw_handle_rearm(h, SOON), 1);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_RUNNING);
    cbx_go(&c, 1);
    wait_for(&c.returned, 2, "the re-armed run");
    quiet(&c, 2);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_DONE);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 2, 1, 0, 0);
    finish(s, h);
}

/* A one-shot cancelled while it runs: 0 (it has fired), it completes; its
 * own query reads RUNNING through the run. */
PAIR(fire_x_cancel)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, 0);

    cr_assert_eq(tw_handle_cancel(h), 0);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_RUNNING);
    cbx_go(&c, 1);
    quiet(&c, 1);
    cr_assert_eq(c.query_in, TW_HANDLE_RUNNING);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_DONE);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 1, 0, 0);
    cr_assert_eq(atomic_load(&back.n), 0);
    finish(s, h);
}

/* A periodic one: 1, no further run; the query reads RUNNING until the run
 * returns, then CANCELLED (item 7 of issue 22: it read CANCELLED in the
 * callback). */
PAIR(fire_x_cancel_periodic)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, SOON);

    cr_assert_eq(tw_handle_cancel(h), 1);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_RUNNING);
    cbx_go(&c, 1);
    quiet(&c, 1);
    cr_assert_eq(c.query_in, TW_HANDLE_RUNNING, "its own query: %d",
                 c.query_in);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_CANCELLED);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 0, 1, 0);
    finish(s, h);
}

PAIR(fire_x_cancel_release)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, 0);

    cr_assert_eq(tw_handle_cancel_release(h), 0);
    cbx_go(&c, 1);
    quiet(&c, 1);
    wait_for(&c.released, 1, "release hook");
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 1, 0, 0);
    finish(s, NULL);
}

PAIR(fire_x_cancel_release_periodic)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, SOON);

    cr_assert_eq(tw_handle_cancel_release(h), 1);
    cbx_go(&c, 1);
    quiet(&c, 1);
    wait_for(&c.released, 1, "release hook");
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 0, 1, 0);
    finish(s, NULL);
}

/* Cancel-and-wait asleep on the running callback: returns once it has
 * returned (0 for a one-shot, 1 for a periodic one), nothing runs after. */
static void fire_x_cancel_wait_of(unsigned threads, uint64_t period)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, period);
    struct call cw = {.op = OP_CANCEL_WAIT, .h = h, .watch = &c};

    lc_call_start(&cw);
    lc_wait_asleep(&cw, h, 48);
    atomic_store(&c.go, 1);
    cr_assert_eq(lc_call_join(&cw), period ? 1 : 0);
    cr_assert_eq(cw.returned_seen, 1, "returned while the callback ran");
    quiet(&c, 1);
    cr_assert_eq(tw_handle_query(h),
                 period ? TW_HANDLE_CANCELLED : TW_HANDLE_DONE);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, !period, !!period, 0);
    finish(s, h);
}

PAIR(fire_x_cancel_wait)
{
    fire_x_cancel_wait_of(threads, 0);
}
PAIR(fire_x_cancel_wait_periodic)
{
    fire_x_cancel_wait_of(threads, SOON);
}

/* Stop begun while the callback runs: it waits for the run; a one-shot
 * completes, a periodic one is handed back. */
static void fire_x_stop_of(unsigned threads, uint64_t period)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, period);
    struct call st = {.op = OP_STOP, .s = s, .back = &back};
    int probes;

    lc_call_start(&st);
    probes = lc_wait_gate_closed(s);
    cr_assert(!atomic_load(&st.done), "stop did not wait for the run");
    cbx_go(&c, 1);
    cr_assert_eq(lc_call_join(&st), 0);
    cr_assert_eq(atomic_load(&back.n), period ? 1 : 0);
    if (period)
        cr_assert_eq(back.period, period);
    cr_assert_eq(atomic_load(&c.released), 1, "released by stop");
    cr_assert_eq(tw_handle_query(h),
                 period ? TW_HANDLE_RETURNED : TW_HANDLE_DONE);
    expect(s, 1 + probes, 1, !period, probes, !!period);
    finish(s, h);
}

PAIR(fire_x_stop)
{
    fire_x_stop_of(threads, 0);
}
PAIR(fire_x_stop_periodic)
{
    fire_x_stop_of(threads, SOON);
}

/* Destroy begun while the callback runs: the same, then the service is
 * gone and the handle still answers. */
PAIR(fire_x_destroy)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, SOON);
    struct call d = {.op = OP_DESTROY, .s = s};

    lc_call_start(&d);
    lc_wait_gate_closed(s);
    cbx_go(&c, 1);
    cr_assert_eq(lc_call_join(&d), 0);
    cr_assert_eq(atomic_load(&c.runs), 1);
    cr_assert_eq(atomic_load(&c.released), 1);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_RETURNED);
    cr_assert_eq(tw_handle_cancel(h), 0);
    cr_assert_eq(tw_handle_rearm(h, 0), 0);
    tw_handle_release(h);
}

/* ---- re-arm from the callback x the others ------------------------------ */

/* Both re-arm while it runs: the later deadline asked last wins. The
 * other thread first (an hour), the callback then (soon): it runs again
 * soon. */
PAIR(rearm_other_x_rearm_cb)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;

    c.act = ACT_REARM;
    c.act_delay = SOON;
    h = running(s, 0);
    cr_assert_eq(tw_handle_rearm(h, LC_HOUR), 1);
    cbx_go(&c, 1);
    cr_assert_eq(c.act_rc, 1);
    wait_for(&c.returned, 2, "the callback's re-arm");
    quiet(&c, 2);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 2, 1, 0, 0);
    finish(s, h);
}

/* The callback first (soon), the other thread then (an hour): it waits for
 * the hour and is handed back with that deadline. */
PAIR(rearm_cb_x_rearm_other)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;
    uint64_t t0;

    c.act = ACT_REARM;
    c.act_first = true;
    c.act_delay = SOON;
    h = running(s, 0);
    t0 = tw_service_now(s);
    cr_assert_eq(tw_handle_rearm(h, LC_HOUR), 1);
    cbx_go(&c, 1);
    cr_assert_eq(c.act_rc, 1);
    quiet(&c, 1);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    cr_assert_eq(atomic_load(&back.n), 1);
    cr_assert_geq(back.deadline, t0 + LC_HOUR);
    expect(s, 1, 1, 0, 0, 1);
    finish(s, h);
}

/* Issue 22, defect 2: a cancel while the one-shot runs, then its own
 * re-arm. The cancel answers 0 (it has fired) and wins: the re-arm answers
 * 0 and nothing runs again. On 103bd1b the re-arm answered 1 and the timer
 * ran on. */
PAIR(cancel_x_rearm_cb)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;

    c.act = ACT_REARM;
    c.act_delay = SOON;
    h = running(s, 0);
    cr_assert_eq(tw_handle_cancel(h), 0);
    cbx_go(&c, 1);
    cr_assert_eq(c.act_rc, 0, "the re-arm after the cancel answered %d",
                 c.act_rc);
    quiet(&c, 1);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_DONE);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 1, 0, 0);
    cr_assert_eq(atomic_load(&back.n), 0);
    finish(s, h);
}

/* The re-arm first: the cancel then answers 1 and nothing runs again. */
PAIR(rearm_cb_x_cancel)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;

    c.act = ACT_REARM;
    c.act_first = true;
    c.act_delay = SOON;
    h = running(s, 0);
    cr_assert_eq(tw_handle_cancel(h), 1);
    cbx_go(&c, 1);
    cr_assert_eq(c.act_rc, 1);
    quiet(&c, 1);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_CANCELLED);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 0, 1, 0);
    finish(s, h);
}

/* A heartbeat (re-arms itself every run) cancelled and released while it
 * runs, as Netty's Timeout.cancel(): it stops, and its release hook runs.
 * On 103bd1b it went on until destroy. */
PAIR(cancel_release_x_rearm_cb)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;

    c.act_delay = SOON;
    atomic_store(&c.every, 1);
    h = running(s, 0);
    cr_assert_eq(tw_handle_cancel_release(h), 0);
    cbx_go(&c, 1);
    quiet(&c, 1);
    wait_for(&c.released, 1, "release hook");
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 1, 0, 0);
    finish(s, NULL);
}

PAIR(rearm_cb_x_cancel_release)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;

    c.act = ACT_REARM;
    c.act_first = true;
    c.act_delay = SOON;
    h = running(s, 0);
    cr_assert_eq(tw_handle_cancel_release(h), 1);
    cbx_go(&c, 1);
    quiet(&c, 1);
    wait_for(&c.released, 1, "release hook");
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 0, 1, 0);
    finish(s, NULL);
}

/* Cancel-and-wait asleep on the run, then the callback re-arms: 0, and the
 * wait answers 0 (on 103bd1b: the re-arm 1, and the wait cancelled again,
 * answering 1). */
PAIR(cancel_wait_x_rearm_cb)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;
    struct call cw = {.op = OP_CANCEL_WAIT, .watch = &c};

    c.act = ACT_REARM;
    c.act_delay = SOON;
    h = running(s, 0);
    cw.h = h;
    lc_call_start(&cw);
    lc_wait_asleep(&cw, h, 48);
    atomic_store(&c.go, 1);
    cr_assert_eq(lc_call_join(&cw), 0);
    cr_assert_eq(c.act_rc, 0, "the re-arm answered %d", c.act_rc);
    cr_assert_eq(cw.returned_seen, 1);
    quiet(&c, 1);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 1, 0, 0);
    finish(s, h);
}

PAIR(rearm_cb_x_cancel_wait)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;
    struct call cw = {.op = OP_CANCEL_WAIT, .watch = &c};

    c.act = ACT_REARM;
    c.act_first = true;
    c.act_delay = SOON;
    h = running(s, 0);
    cw.h = h;
    lc_call_start(&cw);
    lc_wait_asleep(&cw, h, 48);
    atomic_store(&c.go, 1);
    cr_assert_eq(lc_call_join(&cw), 1);
    cr_assert_eq(cw.returned_seen, 1);
    quiet(&c, 1);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 0, 1, 0);
    finish(s, h);
}

/* Stop begun, then the callback re-arms: 1, and stop hands it back with
 * its new deadline; it does not run again. */
static void stop_x_rearm_cb_of(unsigned threads, bool destroy)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;
    struct call st = {.op = destroy ? OP_DESTROY : OP_STOP, .back = &back};
    int probes;

    c.act = ACT_REARM;
    c.act_delay = SOON;
    h = running(s, 0);
    st.s = s;
    lc_call_start(&st);
    probes = lc_wait_gate_closed(s);
    atomic_store(&c.go, 1);
    cr_assert_eq(lc_call_join(&st), 0);
    cr_assert_eq(c.act_rc, 1);
    cr_assert_eq(atomic_load(&c.runs), 1);
    cr_assert_eq(atomic_load(&c.released), 1);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_RETURNED);
    if (destroy) {
        tw_handle_release(h);
        return;
    }
    cr_assert_eq(atomic_load(&back.n), 1);
    cr_assert_eq(back.deadline, tw_handle_deadline(h));
    expect(s, 1 + probes, 1, 0, probes, 1);
    finish(s, h);
}

PAIR(stop_x_rearm_cb)
{
    stop_x_rearm_cb_of(threads, false);
}
PAIR(destroy_x_rearm_cb)
{
    stop_x_rearm_cb_of(threads, true);
}

/* ---- re-arm from another thread x the others ---------------------------- */

/* Waiting an hour; a re-arm and a cancel from two threads, in each order. */
static void rearm_cancel_pending(unsigned threads, bool rearm_first,
                                 enum lc_op cancel_op)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = cbx_arm(s, &c, LC_HOUR, 0);
    /* Re-armed first, to half an hour: the cancel must land before it
     * runs. Cancelled first, to soon: it would run if the re-arm won. */
    struct call r = {
        .op = OP_REARM, .h = h, .delay = rearm_first ? LC_HOUR / 2 : SOON};
    struct call k = {.op = cancel_op, .h = h};
    struct call *first = rearm_first ? &r : &k, *second = rearm_first ? &k : &r;

    lc_call_start(first);
    lc_call_join(first);
    lc_call_start(second);
    lc_call_join(second);
    cr_assert_eq(r.rc, rearm_first ? 1 : 0);
    cr_assert_eq(k.rc, 1);
    quiet(&c, 0);
    wait_for(&c.released, 1, "reaped");
    if (cancel_op != OP_CANCEL_RELEASE)
        cr_assert_eq(tw_handle_query(h), TW_HANDLE_CANCELLED);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 0, 0, 1, 0);
    finish(s, cancel_op == OP_CANCEL_RELEASE ? NULL : h);
}

PAIR(rearm_other_x_cancel)
{
    rearm_cancel_pending(threads, true, OP_CANCEL);
}
PAIR(cancel_x_rearm_other)
{
    rearm_cancel_pending(threads, false, OP_CANCEL);
}
PAIR(rearm_other_x_cancel_release)
{
    rearm_cancel_pending(threads, true, OP_CANCEL_RELEASE);
}
PAIR(rearm_other_x_cancel_wait)
{
    rearm_cancel_pending(threads, true, OP_CANCEL_WAIT);
}
PAIR(cancel_wait_x_rearm_other)
{
    rearm_cancel_pending(threads, false, OP_CANCEL_WAIT);
}

/* The same while a one-shot runs. Re-arm first: 1, then the cancel 1, and
 * no run after. Cancel first: 0 (it has fired), then the re-arm 0 (on
 * 103bd1b: 1, and it ran again). */
static void rearm_cancel_running(unsigned threads, bool rearm_first,
                                 enum lc_op cancel_op)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, 0);
    struct call r = {.op = OP_REARM, .h = h, .delay = SOON};
    struct call k = {.op = cancel_op, .h = h, .watch = &c};

    if (rearm_first) {
        lc_call_start(&r);
        lc_call_join(&r);
    }
    lc_call_start(&k);
    if (cancel_op == OP_CANCEL_WAIT)
        lc_wait_asleep(&k, h, 48);
    else
        lc_call_join(&k);
    if (!rearm_first) {
        lc_call_start(&r);
        lc_call_join(&r);
    }
    cbx_go(&c, 1);
    lc_call_join(&k);
    cr_assert_eq(r.rc, rearm_first ? 1 : 0, "re-arm answered %d", r.rc);
    cr_assert_eq(k.rc, rearm_first ? 1 : 0, "cancel answered %d", k.rc);
    quiet(&c, 1);
    wait_for(&c.released, 1, "let go of");
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, !rearm_first, rearm_first, 0);
    finish(s, cancel_op == OP_CANCEL_RELEASE ? NULL : h);
}

PAIR(running_rearm_other_x_cancel)
{
    rearm_cancel_running(threads, true, OP_CANCEL);
}
PAIR(running_cancel_x_rearm_other)
{
    rearm_cancel_running(threads, false, OP_CANCEL);
}
PAIR(running_rearm_other_x_cancel_release)
{
    rearm_cancel_running(threads, true, OP_CANCEL_RELEASE);
}
PAIR(running_rearm_other_x_cancel_wait)
{
    rearm_cancel_running(threads, true, OP_CANCEL_WAIT);
}
PAIR(running_cancel_wait_x_rearm_other)
{
    rearm_cancel_running(threads, false, OP_CANCEL_WAIT);
}

/* Two re-arms from two threads: the last wins. */
PAIR(rearm_other_x_rearm_other)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = cbx_arm(s, &c, LC_HOUR, 0);
    struct call r = {.op = OP_REARM, .h = h, .delay = LC_HOUR / 2};

    lc_call_start(&r);
    lc_call_join(&r);
    cr_assert_eq(r.rc, 1);
    cr_assert_eq(tw_handle_rearm(h, SOON), 1);
    wait_for(&c.returned, 1, "run at the last deadline");
    quiet(&c, 1);
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 1, 0, 0);
    finish(s, h);
}

/* Stop held open by a blocker's run; meanwhile another thread acts on a
 * waiting timer: a re-arm answers 1 and stop hands it back with the new
 * deadline; a cancel answers 1 and it is not handed back. */
static void stop_open_then(unsigned threads, enum lc_op op, bool destroy)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = cbx_arm(s, &c, LC_HOUR, 0);
    struct call st = {
        .op = destroy ? OP_DESTROY : OP_STOP, .s = s, .back = &back};
    struct call k = {.op = op, .h = h, .delay = SOON};
    struct tw_handle *bh;
    int probes;

    atomic_store(&b.hold, 1);
    bh = cbx_arm(s, &b, 0, 0);
    wait_for(&b.runs, 1, "the blocker");
    lc_call_start(&st);
    probes = lc_wait_gate_closed(s);
    lc_call_start(&k); /* nothing runs: cancel-and-wait does not wait */
    lc_call_join(&k);
    cr_assert_eq(k.rc, 1);
    cbx_go(&b, 1);
    cr_assert_eq(lc_call_join(&st), 0);
    cr_assert_eq(atomic_load(&c.runs), 0);
    cr_assert_eq(atomic_load(&c.released), 1);
    cr_assert_eq(atomic_load(&b.released), 1);
    if (!destroy) {
        cr_assert_eq(atomic_load(&back.n), op == OP_REARM);
        if (op == OP_REARM)
            cr_assert_eq(back.deadline, tw_handle_deadline(h));
        expect(s, 2 + probes, 1, 1, probes + (op != OP_REARM), op == OP_REARM);
        cr_assert_eq(tw_service_destroy(s), 0);
    }
    if (op != OP_CANCEL_RELEASE)
        cr_assert_eq(tw_handle_query(h),
                     op == OP_REARM ? TW_HANDLE_RETURNED : TW_HANDLE_CANCELLED);
    if (op != OP_CANCEL_RELEASE)
        tw_handle_release(h);
    tw_handle_release(bh);
}

PAIR(stop_x_rearm_other)
{
    stop_open_then(threads, OP_REARM, false);
}
PAIR(destroy_x_rearm_other)
{
    stop_open_then(threads, OP_REARM, true);
}
PAIR(stop_x_cancel)
{
    stop_open_then(threads, OP_CANCEL, false);
}
PAIR(destroy_x_cancel)
{
    stop_open_then(threads, OP_CANCEL, true);
}
PAIR(stop_x_cancel_release)
{
    stop_open_then(threads, OP_CANCEL_RELEASE, false);
}
PAIR(destroy_x_cancel_release)
{
    stop_open_then(threads, OP_CANCEL_RELEASE, true);
}
PAIR(stop_x_cancel_wait)
{
    stop_open_then(threads, OP_CANCEL_WAIT, false);
}
PAIR(destroy_x_cancel_wait)
{
    stop_open_then(threads, OP_CANCEL_WAIT, true);
}

/* After stop has handed a timer back, re-arm and cancel answer 0. */
PAIR(stop_then_rearm_other_and_cancel)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = cbx_arm(s, &c, LC_HOUR, 0);

    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    cr_assert_eq(tw_handle_rearm(h, SOON), 0);
    cr_assert_eq(tw_handle_cancel(h), 0);
    cr_assert_eq(tw_handle_cancel_wait(h), 0);
    cr_assert_eq(atomic_load(&back.n), 1);
    expect(s, 1, 0, 0, 0, 1);
    finish(s, h);
}

/* ---- cancels x cancels ----------------------------------------------------
 */

/* Two cancels of a waiting timer from two threads: the first 1, the other
 * 0; it never runs, its hook runs once. */
static void two_cancels_pending(unsigned threads, enum lc_op a, enum lc_op z)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = cbx_arm(s, &c, LC_HOUR, 0);
    struct call ka = {.op = a, .h = h}, kz = {.op = z, .h = h};

    lc_call_start(&ka);
    lc_call_join(&ka);
    lc_call_start(&kz);
    lc_call_join(&kz);
    cr_assert_eq(ka.rc, 1);
    cr_assert_eq(kz.rc, 0);
    quiet(&c, 0);
    wait_for(&c.released, 1, "reaped");
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 0, 0, 1, 0);
    finish(s, a == OP_CANCEL_RELEASE || z == OP_CANCEL_RELEASE ? NULL : h);
}

PAIR(cancel_x_cancel)
{
    two_cancels_pending(threads, OP_CANCEL, OP_CANCEL);
}
PAIR(cancel_x_cancel_release)
{
    two_cancels_pending(threads, OP_CANCEL, OP_CANCEL_RELEASE);
}
PAIR(cancel_x_cancel_wait)
{
    two_cancels_pending(threads, OP_CANCEL, OP_CANCEL_WAIT);
}
PAIR(cancel_wait_x_cancel)
{
    two_cancels_pending(threads, OP_CANCEL_WAIT, OP_CANCEL);
}
PAIR(cancel_wait_x_cancel_release)
{
    two_cancels_pending(threads, OP_CANCEL_WAIT, OP_CANCEL_RELEASE);
}

/* While a periodic timer runs: cancel-and-wait asleep on it (its cancel
 * won: 1), then another cancel answers 0; the wait returns 1 once the run
 * is over. */
static void cancel_wait_running_then(unsigned threads, enum lc_op op)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, SOON);
    struct call cw = {.op = OP_CANCEL_WAIT, .h = h, .watch = &c};
    struct call k = {.op = op, .h = h};

    lc_call_start(&cw);
    lc_wait_asleep(&cw, h, 48);
    lc_call_start(&k);
    if (op == OP_CANCEL_WAIT)
        lc_wait_asleep(&k, h, 48);
    else
        lc_call_join(&k);
    atomic_store(&c.go, 1);
    cr_assert_eq(lc_call_join(&cw), 1);
    cr_assert_eq(lc_call_join(&k), 0);
    cr_assert_eq(cw.returned_seen, 1);
    quiet(&c, 1);
    wait_for(&c.released, 1, "let go of");
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    expect(s, 1, 1, 0, 1, 0);
    finish(s, op == OP_CANCEL_RELEASE ? NULL : h);
}

PAIR(cancel_wait_x_cancel_running)
{
    cancel_wait_running_then(threads, OP_CANCEL);
}
PAIR(cancel_wait_x_cancel_wait_running)
{
    cancel_wait_running_then(threads, OP_CANCEL_WAIT);
}

/* ---- cancel-and-wait, stop and destroy together ------------------------- */

/* The timer's own run holds stop open; cancel-and-wait sleeps on it too.
 * Periodic: the wait's cancel wins (1), nothing is handed back. One-shot:
 * 0, it completes. Both return once the run is over. */
static void stop_cancel_wait_running(unsigned threads, uint64_t period,
                                     bool destroy)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = running(s, period);
    struct call st = {
        .op = destroy ? OP_DESTROY : OP_STOP, .s = s, .back = &back};
    struct call cw = {.op = OP_CANCEL_WAIT, .h = h, .watch = &c};
    int probes;

    lc_call_start(&st);
    probes = lc_wait_gate_closed(s);
    lc_call_start(&cw);
    lc_wait_asleep(&cw, h, 48);
    atomic_store(&c.go, 1);
    cr_assert_eq(lc_call_join(&cw), period ? 1 : 0);
    cr_assert_eq(cw.returned_seen, 1);
    cr_assert_eq(lc_call_join(&st), 0);
    cr_assert_eq(atomic_load(&c.runs), 1);
    cr_assert_eq(atomic_load(&c.released), 1);
    cr_assert_eq(tw_handle_query(h),
                 period ? TW_HANDLE_CANCELLED : TW_HANDLE_DONE);
    if (!destroy) {
        cr_assert_eq(atomic_load(&back.n), 0);
        expect(s, 1 + probes, 1, !period, probes + !!period, 0);
        cr_assert_eq(tw_service_destroy(s), 0);
    }
    tw_handle_release(h);
}

PAIR(stop_x_cancel_wait_running)
{
    stop_cancel_wait_running(threads, SOON, false);
}
PAIR(stop_x_cancel_wait_running_one_shot)
{
    stop_cancel_wait_running(threads, 0, false);
}
PAIR(destroy_x_cancel_wait_running)
{
    stop_cancel_wait_running(threads, SOON, true);
}

/* Stop on one thread, held open by the timer's run (which re-arms itself,
 * so stop hands it back); destroy on another, asleep until that stop is
 * over; then stop again. Each hand-back once, the hook once, and destroy
 * never frees the service under the first stop. */
PAIR(stop_x_destroy)
{
    struct tw_service *s;
    struct tw_handle *h;
    struct call st = {.op = OP_STOP, .back = &back};
    struct call d = {.op = OP_DESTROY};

    c.act = ACT_REARM;
    c.act_delay = SOON;
    s = service_pool(TW_HIER, threads);
    h = running(s, 0);
    st.s = d.s = s;
    lc_call_start(&st);
    lc_wait_gate_closed(s);
    lc_call_start(&d);
    lc_wait_asleep(&d, NULL, 0);
    atomic_store(&c.go, 1);
    cr_assert_eq(lc_call_join(&st), 0);
    cr_assert_eq(lc_call_join(&d), 0);
    cr_assert_eq(atomic_load(&back.n), 1);
    cr_assert_eq(atomic_load(&c.released), 1);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_RETURNED);
    tw_handle_release(h);
}

/* Two stops: the second returns only once the first has handed back. */
PAIR(stop_x_stop)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h;
    struct call s1 = {.op = OP_STOP, .s = s, .back = &back};
    struct call s2 = {.op = OP_STOP, .s = s, .back = &back};
    int probes;

    c.act = ACT_REARM;
    c.act_delay = SOON;
    h = running(s, 0);
    lc_call_start(&s1);
    probes = lc_wait_gate_closed(s);
    lc_call_start(&s2);
    lc_wait_asleep(&s2, NULL, 0);
    atomic_store(&c.go, 1);
    cr_assert_eq(lc_call_join(&s2), 0);
    cr_assert_eq(atomic_load(&back.n), 1, "the second stop did not wait");
    cr_assert_eq(lc_call_join(&s1), 0);
    expect(s, 1 + probes, 1, 0, probes, 1);
    finish(s, h);
}

/* ---- a cancel-release while a re-arm holds the handle ------------------- */

/* An allocator that holds the thread that asks it to, inside the
 * allocation, until told: a re-arm to an earlier deadline allocates its
 * thread's rings at the thread's first message, while it holds the handle
 * (LOCKED), so the test can act while the re-arm is half done. */
static _Thread_local bool hold_my_alloc;
static atomic_int alloc_held, alloc_go;

static void *holding_alloc(void *ctx, size_t size)
{
    (void)ctx;
    if (hold_my_alloc) {
        hold_my_alloc = false;
        atomic_store(&alloc_held, 1);
        while (!atomic_load(&alloc_go))
            sleep_ns(MS / 4);
    }
    return malloc(size);
}

static void holding_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    (void)size;
    free(p);
}

static void holding_allocator(void)
{
    struct tw_allocator a = {holding_alloc, holding_free, NULL};

    cr_assert_eq(tw_set_allocator(&a), 0);
}

static void *rearm_held(void *arg)
{
    struct call *r = arg;

    /* Earlier than the hour, so it sends a message; far enough that the
     * cancel lands before it is due however the threads are scheduled. */
    hold_my_alloc = true;
    r->rc = tw_handle_rearm(r->h, LC_HOUR / 2);
    atomic_store(&r->done, 1);
    return NULL;
}

/* The re-arm holds the handle when cancel-release comes: the cancel waits
 * for it, then wins (1): the timer is cancelled, not handed back at stop.
 * On 103bd1b the fast path's failed swap handed cancel() the re-arm's
 * word, which it took for a lost race: 0, and the re-armed timer stayed
 * armed (handed back here; it would have run at its new deadline). */
static void *let_alloc_go_later(void *arg)
{
    (void)arg;
    sleep_ns(100 * MS);
    atomic_store(&alloc_go, 1);
    return NULL;
}

/* The cancel is made on this thread, which has a stripe and rings in the
 * service (it scheduled the timer): the fast path's case. */
static void rearm_in_progress_x_cancel_release(unsigned threads)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    struct tw_handle *h = cbx_arm(s, &c, LC_HOUR, 0);
    struct call r = {.h = h};
    pthread_t later;
    int rc;

    cr_assert_eq(pthread_create(&r.t, NULL, rearm_held, &r), 0);
    wait_for(&alloc_held, 1, "the re-arm's allocation");
    cr_assert_eq(pthread_create(&later, NULL, let_alloc_go_later, NULL), 0);
    rc = tw_handle_cancel_release(h);
    pthread_join(later, NULL);
    pthread_join(r.t, NULL);
    cr_assert_eq(r.rc, 1);
    cr_assert_eq(rc, 1, "cancel-release answered %d", rc);
    quiet(&c, 0);
    wait_for(&c.released, 1, "reaped");
    cr_assert_eq(tw_service_stop(s, lc_back_fn, &back), 0);
    cr_assert_eq(atomic_load(&back.n), 0);
    expect(s, 1, 0, 0, 1, 0);
    finish(s, NULL);
}

Test(service_lifecycle_matrix, rearm_in_progress_x_cancel_release_worker,
     .init = holding_allocator, .timeout = 60)
{
    rearm_in_progress_x_cancel_release(0);
}
Test(service_lifecycle_matrix, rearm_in_progress_x_cancel_release_executor,
     .init = holding_allocator, .timeout = 60)
{
    rearm_in_progress_x_cancel_release(2);
}
