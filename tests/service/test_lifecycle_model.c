/*
 * A model of a service handle's state machine, checked against the
 * service under random interleavings (issue 22).
 *
 * The model (m_* below) is the contract of service.h, one state per slot:
 *
 *   NONE --sched--> PENDING (far, or near: due at once)
 *   PENDING(near) --fires--> HELD/PLAIN            (a run starts: runs + 1)
 *   PENDING --rearm--> PENDING, 1        PENDING --cancel--> CANCELLED, 1
 *   HELD/PLAIN|AGAIN --rearm--> HELD/AGAIN, 1
 *   HELD/CANCEL|SEALED --rearm--> 0
 *   HELD/PLAIN, periodic, or HELD/AGAIN --cancel--> HELD/CANCEL, 1
 *   HELD/PLAIN, one-shot --cancel--> HELD/SEALED, 0 (it has fired)
 *   HELD --return--> PLAIN: DONE (one-shot) or PENDING (periodic, far);
 *                    AGAIN: PENDING; CANCEL: CANCELLED; SEALED: DONE
 *   DONE, CANCELLED, RETURNED: rearm 0, cancel 0
 *   stop: every PENDING --> RETURNED once no callback runs
 *   query: PENDING, RUNNING (HELD, whatever its sub-state), DONE, ...
 *
 * The driver takes each step from a seeded generator (the seed is printed;
 * TW_LIFECYCLE_SEED=n repeats a run) and makes it on one of three threads:
 * the test's own, a helper thread, and the thread running the held
 * callback, which waits inside its run for commands. A cancel-and-wait on
 * a running callback, or a stop while one runs, leaves the helper asleep
 * in the call (seen in futex() or by the closed gate, lifecycle.h) while
 * the other two threads go on. Steps are made one at a time, so the model
 * knows the order and predicts every answer exactly; what is random is
 * which operation, on which handle, from which thread, and in which state
 * of the handle. At most one timer is running or due at a time, so that
 * the firing order is known too. After every step the runs of every timer
 * must equal the model's (so no run after a cancel that won), and at the
 * end the counters, the hand-backs and each release hook (exactly once).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"

#define SLOTS 3
#define MAX_TIMERS 4096
#define STEPS 40 /* per sequence */

enum { M_NONE, M_PENDING, M_HELD, M_DONE, M_CANCELLED, M_RETURNED };
enum { R_PLAIN, R_AGAIN, R_CANCEL, R_SEALED };
enum {
    X_SCHED, /* main only */
    X_REARM_NEAR,
    X_REARM_FAR,
    X_CANCEL,
    X_CANCEL_RELEASE, /* main or helper */
    X_CANCEL_WAIT,
    X_QUERY,
    X_STOP,   /* helper; from the callback: -EDEADLK */
    X_RETURN, /* the callback only */
    X_OPS
};
enum { T_MAIN, T_HELPER, T_CB };

static const char *const op_name[X_OPS] = {
    "sched",       "rearm-near", "rearm-far", "cancel", "cancel-release",
    "cancel-wait", "query",      "stop",      "return"};
static const char *const th_name[] = {"main", "helper", "callback"};

/* A timer as the service sees it: its runs and its release hook. */
struct tmr {
    atomic_int runs, returned, released;
};

struct mslot {
    struct tw_handle *h;
    struct tmr *t;
    int st, rs;
    bool near, again_near, periodic;
    bool ref; /* the caller's reference is held */
    int runs;
};

static struct tmr timers[MAX_TIMERS];
static int ntimers;

static struct {
    struct tw_service *s;
    struct mslot m[SLOTS];
    int held;     /* the slot whose callback is held, or -1 */
    bool stopped; /* stop has begun */
    bool helper_busy;
    int helper_op, helper_slot, helper_rc_want;
    uint64_t scheduled, runs, completed, cancelled, returned, back_want;
    uint64_t rng;
    char trace[12][64];
    int ntrace;
} g;

static struct lc_back back;

/* ---- the threads' mailboxes -----------------------------------------------
 */

struct box {
    atomic_int seq, done; /* a command is posted / answered */
    int op;
    struct tw_handle *h;
    int rc;
};

static struct box helper_box, cb_box;
static atomic_int helper_tid, helper_quit;
static atomic_int entered;
/* The timer the model lets run next; any other run returns at once, and
 * the driver finds it in the timer's count of runs. */
static _Atomic(struct tmr *) due;
static int entries; /* runs the driver has seen start, over all sequences */
static _Atomic(struct tw_handle *) cb_self;

static int run_op(int op, struct tw_handle *h)
{
    switch (op) {
    case X_REARM_NEAR:
        return tw_handle_rearm(h, 0);
    case X_REARM_FAR:
        return tw_handle_rearm(h, LC_HOUR);
    case X_CANCEL:
        return tw_handle_cancel(h);
    case X_CANCEL_RELEASE:
        return tw_handle_cancel_release(h);
    case X_CANCEL_WAIT:
        return tw_handle_cancel_wait(h);
    case X_QUERY:
        return (int)tw_handle_query(h);
    case X_STOP:
        return tw_service_stop(g.s, lc_back_fn, &back);
    }
    return -EINVAL;
}

/* Serve the box's commands until one is X_RETURN (or quit). */
static void serve(struct box *b, atomic_int *quit)
{
    int seen = atomic_load(&b->done);

    for (;;) {
        while (atomic_load(&b->seq) == seen) {
            if (quit && atomic_load(quit))
                return;
            sleep_ns(MS / 20);
        }
        seen++;
        if (b->op == X_RETURN) {
            atomic_store(&b->done, seen);
            return;
        }
        b->rc = run_op(b->op, b->h);
        atomic_store(&b->done, seen);
    }
}

static void *helper_main(void *arg)
{
    (void)arg;
    atomic_store(&helper_tid, (int)syscall(SYS_gettid));
    serve(&helper_box, &helper_quit);
    return NULL;
}

static void model_cb(struct tw_handle *h, void *arg)
{
    struct tmr *t = arg;

    atomic_fetch_add(&t->runs, 1);
    if (atomic_load(&due) != t) { /* a run the model does not allow */
        atomic_fetch_add(&t->returned, 1);
        return;
    }
    atomic_store(&cb_self, h);
    atomic_fetch_add(&entered, 1);
    serve(&cb_box, NULL);
    atomic_fetch_add(&t->returned, 1);
}

static void model_release(void *arg)
{
    atomic_fetch_add(&((struct tmr *)arg)->released, 1);
}

static void post(struct box *b, int op, struct tw_handle *h)
{
    b->op = op;
    b->h = h;
    atomic_fetch_add(&b->seq, 1);
}

static bool answered(struct box *b)
{
    return atomic_load(&b->done) == atomic_load(&b->seq);
}

/* ---- failure reports --------------------------------------------------------
 */

static unsigned long long seed_used;
/* What the steps did, over a test: calls per operation and thread; calls
 * made while the handle's callback was held; helpers left asleep. */
static int done_ops[X_OPS][3], during_run, slept_cw, slept_stop;
static int seq_no, step_no;

/* The next line of the trace of the last 12 steps, printed on failure. */
static char *note(void)
{
    return g.trace[g.ntrace++ % 12];
}

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            for (int i_ = g.ntrace > 12 ? g.ntrace - 12 : 0; i_ < g.ntrace;    \
                 i_++)                                                         \
                cr_log_error("  %s", g.trace[i_ % 12]);                        \
            cr_log_error("seed %llu, sequence %d, step %d:", seed_used,        \
                         seq_no, step_no);                                     \
            cr_assert_fail(__VA_ARGS__);                                       \
        }                                                                      \
    } while (0)

static uint64_t rnd(uint64_t n)
{
    g.rng ^= g.rng << 13;
    g.rng ^= g.rng >> 7;
    g.rng ^= g.rng << 17;
    return g.rng % n;
}

/* ---- the model
 * ---------------------------------------------------------------- */

static int m_cancel(struct mslot *m)
{
    if (m->st == M_PENDING) {
        m->st = M_CANCELLED;
        g.cancelled++;
        return 1;
    }
    if (m->st != M_HELD || m->rs == R_CANCEL || m->rs == R_SEALED)
        return 0;
    if (m->rs == R_PLAIN && !m->periodic) {
        m->rs = R_SEALED; /* it has fired; no re-arm from now */
        return 0;
    }
    m->rs = R_CANCEL;
    g.cancelled++;
    return 1;
}

static int m_rearm(struct mslot *m, bool near)
{
    if (m->st == M_PENDING) {
        m->near = near;
        return 1;
    }
    if (m->st == M_HELD && (m->rs == R_PLAIN || m->rs == R_AGAIN)) {
        m->rs = R_AGAIN;
        m->again_near = near;
        return 1;
    }
    return 0;
}

static int m_query(const struct mslot *m)
{
    static const int q[] = {[M_PENDING] = TW_HANDLE_PENDING,
                            [M_HELD] = TW_HANDLE_RUNNING,
                            [M_DONE] = TW_HANDLE_DONE,
                            [M_CANCELLED] = TW_HANDLE_CANCELLED,
                            [M_RETURNED] = TW_HANDLE_RETURNED};

    return q[m->st];
}

static void m_return(struct mslot *m)
{
    switch (m->rs) {
    case R_PLAIN:
        if (m->periodic) {
            m->st = M_PENDING;
            m->near = false; /* the next period, an hour on */
        } else {
            m->st = M_DONE;
            g.completed++;
        }
        break;
    case R_AGAIN:
        m->st = M_PENDING;
        m->near = m->again_near;
        break;
    case R_CANCEL:
        m->st = M_CANCELLED;
        break;
    case R_SEALED:
        m->st = M_DONE;
        g.completed++;
        break;
    }
}

/* Stop has returned: whatever was pending was handed back. */
static void m_stopped(void)
{
    for (int i = 0; i < SLOTS; i++)
        if (g.m[i].st == M_PENDING) {
            g.m[i].st = M_RETURNED;
            g.returned++;
            g.back_want++;
        }
}

/* Tell the callback which timer may run: the one the model has due. */
static void mark_due(void)
{
    for (int i = 0; i < SLOTS; i++)
        if (g.m[i].st == M_PENDING && g.m[i].near && !g.stopped)
            atomic_store(&due, g.m[i].t);
}

/* A timer due at once, or one running: the firing order must stay known. */
static bool active(void)
{
    if (g.held >= 0)
        return true;
    for (int i = 0; i < SLOTS; i++)
        if (g.m[i].st == M_PENDING && g.m[i].near)
            return true;
    return false;
}

/* ---- the driver -------------------------------------------------------------
 */

/* After each step: a timer due at once runs (unless stop has begun) and is
 * held; every timer has run exactly as often as the model says. */
static void settle(void)
{
    for (int i = 0; i < SLOTS; i++) {
        struct mslot *m = &g.m[i];

        if (g.stopped || g.held >= 0 || m->st != M_PENDING || !m->near)
            continue;
        {
            uint64_t give_up = now_ns() + 20 * SEC;

            entries++;
            while (atomic_load(&entered) < entries) {
                CHECK(now_ns() < give_up, "slot %d never ran", i);
                sleep_ns(MS / 20);
            }
        }
        CHECK(atomic_load(&cb_self) == m->h, "slot %d: another timer ran", i);
        atomic_store(&due, NULL);
        m->st = M_HELD;
        m->rs = R_PLAIN;
        m->runs++;
        g.runs++;
        g.held = i;
    }
    for (int i = 0; i < SLOTS; i++)
        if (g.m[i].t)
            CHECK(atomic_load(&g.m[i].t->runs) == g.m[i].runs,
                  "slot %d ran %d times, the model says %d", i,
                  atomic_load(&g.m[i].t->runs), g.m[i].runs);
}

/* Wait until the helper's call has answered, or is asleep in it (a
 * cancel-and-wait on h, or a stop behind a running callback). */
static void helper_wait(struct tw_handle *h, bool may_sleep)
{
    uint64_t give_up = now_ns() + 20 * SEC;
    int asleep = 0;

    while (!answered(&helper_box)) {
        CHECK(now_ns() < give_up, "the helper's %s never answered",
              op_name[g.helper_op]);
        if (may_sleep && g.helper_op == X_CANCEL_WAIT &&
            lc_in_futex(atomic_load(&helper_tid), h, 48) != 0 &&
            ++asleep >= 3) {
            g.helper_busy = true;
            return;
        }
        if (may_sleep && g.helper_op == X_STOP) {
            g.helper_busy = true; /* lc_wait_gate_closed() tells */
            return;
        }
        sleep_ns(MS / 4);
    }
}

/* The helper's call has answered: check it and apply what follows. */
static void helper_answered(void)
{
    CHECK(helper_box.rc == g.helper_rc_want, "helper's %s answered %d, not %d",
          op_name[g.helper_op], helper_box.rc, g.helper_rc_want);
    if (g.helper_op == X_CANCEL_WAIT) {
        struct mslot *m = &g.m[g.helper_slot];

        CHECK(atomic_load(&m->t->returned) == atomic_load(&m->t->runs),
              "cancel-wait returned while its callback ran");
    }
    if (g.helper_op == X_STOP)
        m_stopped();
    g.helper_busy = false;
}

/* One operation on slot i from thread th; the model's answer is `want`. */
static void perform(int th, int op, int i, int want)
{
    struct mslot *m = &g.m[i];
    struct tw_handle *h = m->h;
    int rc;

    snprintf(note(), sizeof(g.trace[0]), "%s: %s on slot %d, want %d",
             th_name[th], op_name[op], i, want);
    done_ops[op][th]++;
    during_run += i == g.held;
    if (th == T_CB) {
        post(&cb_box, op, h);
        while (!answered(&cb_box))
            sleep_ns(MS / 20);
        rc = cb_box.rc;
    } else if (th == T_HELPER) {
        g.helper_op = op;
        g.helper_slot = i;
        g.helper_rc_want = want;
        post(&helper_box, op, h);
        helper_wait(h, (op == X_CANCEL_WAIT || op == X_STOP) && g.held >= 0);
        slept_cw += g.helper_busy && op == X_CANCEL_WAIT;
        slept_stop += g.helper_busy && op == X_STOP;
        if (g.helper_busy && op == X_STOP) {
            int probes = lc_wait_gate_closed(g.s);

            g.scheduled += (uint64_t)probes;
            g.cancelled += (uint64_t)probes;
        }
        if (!g.helper_busy)
            helper_answered();
        return;
    } else {
        rc = run_op(op, h);
    }
    CHECK(rc == want, "%s's %s on slot %d answered %d, the model says %d",
          th_name[th], op_name[op], i, rc, want);
}

static void sched(int i)
{
    struct mslot *m = &g.m[i];
    bool near = !active() && rnd(2);
    struct tw_timer_spec spec = {.cb = model_cb, .release = model_release};
    struct tw_handle *h;
    int rc;

    if (m->ref)
        tw_handle_release(m->h);
    cr_assert_lt(ntimers, MAX_TIMERS);
    m->t = &timers[ntimers++];
    m->periodic = rnd(4) == 0;
    spec.arg = m->t;
    spec.period = m->periodic ? LC_HOUR : 0;
    spec.deadline = tw_service_now(g.s) + (near ? 0 : LC_HOUR);
    snprintf(note(), sizeof(g.trace[0]), "main: sched slot %d, %s, %s", i,
             near ? "near" : "far", m->periodic ? "periodic" : "one-shot");
    if (near && !g.stopped)
        atomic_store(&due, m->t);
    rc = tw_service_submit(g.s, &spec, &h);
    if (g.stopped) {
        CHECK(rc == -ESHUTDOWN, "schedule after stop answered %d", rc);
        ntimers--;
        m->t = NULL;
        m->st = M_NONE;
        m->ref = false;
        return;
    }
    CHECK(rc == 0, "schedule answered %d", rc);
    g.scheduled++;
    *m = (struct mslot){.h = h,
                        .t = m->t,
                        .st = M_PENDING,
                        .near = near,
                        .periodic = m->periodic,
                        .ref = true};
}

/* One random step. */
static void step(void)
{
    int i = (int)rnd(SLOTS), th = (int)rnd(3), op = (int)rnd(X_OPS);
    struct mslot *m = &g.m[i];
    int want;

    if (th == T_HELPER && g.helper_busy)
        th = T_MAIN;
    if (th == T_CB && g.held < 0)
        th = T_MAIN;
    if (op == X_RETURN) {
        if (g.held < 0)
            return;
        i = g.held;
        m = &g.m[i];
        snprintf(note(), sizeof(g.trace[0]), "callback: return, slot %d", i);
        done_ops[X_RETURN][T_CB]++;
        g.held = -1;
        m_return(m);
        mark_due();
        post(&cb_box, X_RETURN, NULL);
        wait_for(&m->t->returned, m->runs, "the held run");
        if (g.helper_busy && (g.helper_op == X_STOP || g.helper_slot == i)) {
            helper_wait(NULL, false);
            helper_answered();
        }
        return;
    }
    /* A slot whose timer is over is mostly given a new one, so that most
     * steps meet live handles. */
    if (op == X_SCHED || ((m->st == M_NONE || m->st >= M_DONE) && rnd(2))) {
        if (m->st == M_NONE || m->st >= M_DONE) {
            done_ops[X_SCHED][T_MAIN]++;
            sched(i);
        }
        return;
    }
    /* Stop only in the last quarter of a sequence, which it ends. */
    if (op == X_STOP && th != T_CB && (step_no < STEPS * 3 / 4 || rnd(2)))
        return;
    if (op == X_STOP) {
        if (th == T_CB) {
            perform(T_CB, X_STOP, i, -EDEADLK);
        } else if (!g.stopped && !g.helper_busy) {
            g.stopped = true;
            perform(T_HELPER, X_STOP, i, 0);
        }
        return;
    }
    if (m->st == M_NONE)
        return;
    /* A caller's call needs the caller's reference; the callback's call on
     * its own handle has the service's. Cancel-release is the caller's
     * only, and not while the helper sleeps in a call on that handle. */
    if (!m->ref && !(th == T_CB && i == g.held))
        return;
    if (op == X_CANCEL_RELEASE &&
        (th == T_CB || (g.helper_busy && g.helper_slot == i)))
        th = T_MAIN;
    if (op == X_CANCEL_RELEASE &&
        (!m->ref || (g.helper_busy && g.helper_slot == i)))
        return;
    if (op == X_REARM_NEAR && active() && i != g.held)
        op = X_REARM_FAR; /* one timer due or running at a time */
    if (op == X_CANCEL_WAIT && th == T_CB && i == g.held) {
        perform(T_CB, op, i, -EDEADLK);
        return;
    }
    if (op == X_CANCEL_WAIT && th == T_MAIN && m->st == M_HELD)
        th = g.helper_busy ? T_CB : T_HELPER; /* main must not sleep */
    if (op == X_CANCEL_WAIT && th == T_CB && m->st == M_HELD)
        return;
    switch (op) {
    case X_REARM_NEAR:
    case X_REARM_FAR:
        want = m_rearm(m, op == X_REARM_NEAR);
        mark_due();
        break;
    case X_QUERY:
        want = m_query(m);
        break;
    default: /* the cancels */
        want = m_cancel(m);
        if (op == X_CANCEL_RELEASE)
            m->ref = false;
        break;
    }
    perform(th, op, i, want);
}

/* Let every held run return, wait for the helper, stop, and check. */
static void finish_sequence(void)
{
    struct tw_service_stats st;

    while (g.held >= 0 || active()) {
        if (g.held >= 0) {
            struct mslot *m = &g.m[g.held];

            g.held = -1;
            m_return(m);
            mark_due();
            post(&cb_box, X_RETURN, NULL);
            wait_for(&m->t->returned, m->runs, "the held run");
            if (g.helper_busy) {
                helper_wait(NULL, false);
                helper_answered();
            }
        }
        settle();
        if (g.stopped)
            break;
    }
    if (g.helper_busy) {
        helper_wait(NULL, false);
        helper_answered();
    }
    if (!g.stopped) {
        cr_assert_eq(tw_service_stop(g.s, lc_back_fn, &back), 0);
        g.stopped = true;
        m_stopped();
    }
    settle();
    cr_assert_eq(tw_service_stats(g.s, &st), 0);
    CHECK(st.scheduled == g.scheduled && st.runs == g.runs &&
              st.completed == g.completed && st.cancelled == g.cancelled &&
              st.returned == g.returned && st.pending == 0,
          "stats %d/%d/%d/%d/%d, the model %d/%d/%d/%d/%d (scheduled, runs, "
          "completed, cancelled, returned)",
          (int)st.scheduled, (int)st.runs, (int)st.completed, (int)st.cancelled,
          (int)st.returned, (int)g.scheduled, (int)g.runs, (int)g.completed,
          (int)g.cancelled, (int)g.returned);
    CHECK(atomic_load(&back.n) == (int)g.back_want, "handed back %d, not %d",
          atomic_load(&back.n), (int)g.back_want);
    for (int i = 0; i < SLOTS; i++)
        CHECK(g.m[i].st == M_NONE || g.m[i].st >= M_DONE,
              "slot %d still live after stop", i);
    cr_assert_eq(tw_service_destroy(g.s), 0);
    for (int i = 0; i < SLOTS; i++)
        if (g.m[i].ref)
            tw_handle_release(g.m[i].h);
}

static void model_run(enum tw_mode mode, unsigned threads, int sequences,
                      int steps)
{
    const char *env = getenv("TW_LIFECYCLE_SEED");
    pthread_t helper;
    int first_timer = 0;

    seed_used = env ? strtoull(env, NULL, 0) : (unsigned long long)now_ns();
    cr_log_info("service_lifecycle_model: seed %llu (TW_LIFECYCLE_SEED=%llu "
                "repeats it)",
                seed_used, seed_used);
    cr_assert_eq(pthread_create(&helper, NULL, helper_main, NULL), 0);
    while (!atomic_load(&helper_tid))
        sleep_ns(MS / 10);
    for (seq_no = 0; seq_no < sequences; seq_no++) {
        memset(&g, 0, sizeof(g));
        memset(&back, 0, sizeof(back));
        g.rng = seed_used * 2654435761u + (uint64_t)seq_no * 40503u + 1;
        g.held = -1;
        g.s = service_pool(mode, threads);
        for (step_no = 0; step_no < steps; step_no++) {
            step();
            settle();
        }
        finish_sequence();
        for (int k = first_timer; k < ntimers; k++)
            CHECK(atomic_load(&timers[k].released) == 1,
                  "timer %d: release hook called %d times", k,
                  atomic_load(&timers[k].released));
        first_timer = ntimers;
        if (ntimers > MAX_TIMERS - steps - 1) {
            memset(timers, 0, sizeof(timers));
            ntimers = first_timer = 0;
        }
    }
    atomic_store(&helper_quit, 1);
    pthread_join(helper, NULL);
    cr_log_info("%d runs held; %d calls during a run, %d cancel-waits and "
                "%d stops left asleep on a run",
                entries, during_run, slept_cw, slept_stop);
    for (int op = 0; op < X_OPS; op++)
        cr_log_info("  %-14s main %4d  helper %4d  callback %4d", op_name[op],
                    done_ops[op][T_MAIN], done_ops[op][T_HELPER],
                    done_ops[op][T_CB]);
}

/* Sequences per test: about a second each, also under ThreadSanitizer on
 * two cores. */
#define SEQUENCES 100

Test(service_lifecycle_model, worker_hier, .timeout = 120)
{
    model_run(TW_HIER, 0, SEQUENCES, STEPS);
}
Test(service_lifecycle_model, executor_hier, .timeout = 120)
{
    model_run(TW_HIER, 2, SEQUENCES, STEPS);
}
Test(service_lifecycle_model, executor_hashed, .timeout = 120)
{
    model_run(TW_HASHED, 1, SEQUENCES, STEPS);
}
