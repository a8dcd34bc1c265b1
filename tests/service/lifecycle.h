/*
 * What the handle-lifecycle matrix (test_lifecycle_matrix.c) and the model
 * check (test_lifecycle_model.c) share: a callback that can be held inside
 * its run until the test lets it go, calls made on a thread of their own,
 * and ways to know that such a call has really begun before the test moves
 * on, so that two operations overlap by construction rather than by luck:
 *
 *  - a call that sleeps (cancel-and-wait on a running callback, a destroy
 *    waiting for another thread's stop) is seen asleep in the futex system
 *    call, through /proc/self/task/<tid>/syscall, and for cancel-and-wait
 *    on a futex word inside the handle itself;
 *  - a stop that has begun is seen by its closed gate: probe timers are
 *    scheduled (and cancelled at once, counted by the caller) until a
 *    schedule answers -ESHUTDOWN.
 *
 * Static inline functions in a header, as both files use some of them.
 */
#ifndef TW_TEST_LIFECYCLE_H
#define TW_TEST_LIFECYCLE_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "timewheel.h"
#include "util.h"

#define LC_HOUR (UINT64_C(3600) * SEC)

/* A timer under test: its callback, what it did, and its release hook. */
struct cbx {
    atomic_int runs;     /* runs started (past act_first's act) */
    atomic_int returned; /* runs returned */
    atomic_int released; /* calls of the release hook */
    atomic_int go;       /* lets a held run continue */
    atomic_int hold;    /* hold runs until go (first run only if 1; 2: every) */
    int act;            /* what the first run does to its own handle */
    bool act_first;     /* before the hold (else after it) */
    uint64_t act_delay; /* the delay of its re-arm */
    int act_rc;         /* the answer it got */
    int query_in;       /* its own tw_handle_query(), after the hold */
    atomic_int every;   /* re-arm itself by act_delay on every run */
};

enum { ACT_NONE, ACT_REARM, ACT_CANCEL };

static inline void cbx_act(struct tw_handle *h, struct cbx *c)
{
    if (c->act == ACT_REARM)
        c->act_rc = tw_handle_rearm(h, c->act_delay);
    else if (c->act == ACT_CANCEL)
        c->act_rc = tw_handle_cancel(h);
}

static inline void cbx_run(struct tw_handle *h, void *arg)
{
    struct cbx *c = arg;
    /* Runs of one timer never overlap, so a load is enough here; runs
     * counts a run once its act_first step is done, so that a test that
     * waits for the first run (running()) acts after that step: counted
     * before it, a cancel could come first (a flaky
     * rearm_cb_x_cancel_release in CI). */
    int k = atomic_load(&c->runs) + 1;
    uint64_t give_up = now_ns() + 20 * SEC;

    if (k == 1 && c->act_first)
        cbx_act(h, c);
    atomic_fetch_add(&c->runs, 1);
    if (atomic_load(&c->hold) == 2 || (k == 1 && atomic_load(&c->hold)))
        while (!atomic_load(&c->go) && now_ns() < give_up)
            sleep_ns(MS / 4);
    if (k == 1 && !c->act_first)
        cbx_act(h, c);
    if (k == 1)
        c->query_in = (int)tw_handle_query(h);
    if (atomic_load(&c->every))
        tw_handle_rearm(h, c->act_delay);
    atomic_fetch_add(&c->returned, 1);
}

static inline void cbx_release(void *arg)
{
    atomic_fetch_add(&((struct cbx *)arg)->released, 1);
}

/* Schedule c's timer delay ns from now (period 0: one-shot). */
static inline struct tw_handle *cbx_arm(struct tw_service *s, struct cbx *c,
                                        uint64_t delay, uint64_t period)
{
    struct tw_timer_spec spec = {
        .deadline = tw_service_now(s) + delay,
        .period = period,
        .kind = TW_FIXED_RATE,
        .cb = cbx_run,
        .arg = c,
        .release = cbx_release,
    };
    struct tw_handle *h;

    cr_assert_eq(tw_service_submit(s, &spec, &h), 0);
    return h;
}

/* Let c's held run go and wait until `n` runs have returned. */
static inline void cbx_go(struct cbx *c, int n)
{
    atomic_store(&c->go, 1);
    wait_for(&c->returned, n, "runs returned");
}

/* ---- calls on a thread of their own ---------------------------------------
 */

enum lc_op {
    OP_CANCEL,
    OP_CANCEL_RELEASE,
    OP_CANCEL_WAIT,
    OP_REARM,
    OP_STOP,
    OP_DESTROY,
};

struct lc_back {
    atomic_int n;
    uint64_t deadline; /* of the last timer handed back */
    uint64_t period;
};

static inline void lc_back_fn(const struct tw_handback *t, void *ctx)
{
    struct lc_back *b = ctx;

    b->deadline = t->deadline;
    b->period = t->period;
    atomic_fetch_add(&b->n, 1);
}

struct call {
    enum lc_op op;
    struct tw_service *s;
    struct tw_handle *h;
    uint64_t delay;       /* OP_REARM */
    struct lc_back *back; /* OP_STOP */
    struct cbx *watch;    /* what to look at when the call returns */
    pthread_t t;
    atomic_int tid;
    atomic_int done;
    int rc;
    int runs_seen, returned_seen; /* watch's counts as the call returned */
};

static inline int lc_do(enum lc_op op, struct tw_service *s,
                        struct tw_handle *h, uint64_t delay,
                        struct lc_back *back)
{
    switch (op) {
    case OP_CANCEL:
        return tw_handle_cancel(h);
    case OP_CANCEL_RELEASE:
        return tw_handle_cancel_release(h);
    case OP_CANCEL_WAIT:
        return tw_handle_cancel_wait(h);
    case OP_REARM:
        return tw_handle_rearm(h, delay);
    case OP_STOP:
        return tw_service_stop(s, back ? lc_back_fn : NULL, back);
    case OP_DESTROY:
        return tw_service_destroy(s);
    }
    return -EINVAL;
}

static inline void *lc_call_main(void *arg)
{
    struct call *c = arg;

    atomic_store(&c->tid, (int)syscall(SYS_gettid));
    c->rc = lc_do(c->op, c->s, c->h, c->delay, c->back);
    if (c->watch) {
        c->returned_seen = atomic_load(&c->watch->returned);
        c->runs_seen = atomic_load(&c->watch->runs);
    }
    atomic_store(&c->done, 1);
    return NULL;
}

static inline void lc_call_start(struct call *c)
{
    cr_assert_eq(pthread_create(&c->t, NULL, lc_call_main, c), 0);
    while (!atomic_load(&c->tid))
        sleep_ns(MS / 10);
}

static inline int lc_call_join(struct call *c)
{
    pthread_join(c->t, NULL);
    return c->rc;
}

/* Whether thread tid sleeps in futex(), on a word in [lo, lo + n) (any word
 * when n is 0); -1 if the kernel does not say. */
static inline int lc_in_futex(int tid, const void *lo, size_t n)
{
    char path[64], buf[256];
    unsigned long a0 = 0;
    long nr = -1;
    FILE *f;
    int ok;

    snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    ok = fgets(buf, sizeof(buf), f) && sscanf(buf, "%ld %lx", &nr, &a0) == 2;
    fclose(f);
    if (!ok)
        return buf[0] == 'r' ? 0 : -1; /* "running" */
    return nr == SYS_futex &&
           (n == 0 || (a0 >= (uintptr_t)lo && a0 < (uintptr_t)lo + n));
}

/* Wait until call c sleeps in futex() on a word in [lo, lo + n), three
 * looks in a row 1 ms apart (a lock taken in passing does not count); it
 * must not have returned. Where the kernel does not say, wait 200 ms. */
static inline void lc_wait_asleep(struct call *c, const void *lo, size_t n)
{
    uint64_t give_up = now_ns() + 20 * SEC;
    int seen = 0;

    while (seen < 3) {
        int r = lc_in_futex(atomic_load(&c->tid), lo, n);

        if (r < 0) {
            cr_log_warn("no /proc/self/task/*/syscall: waiting 200 ms");
            sleep_ns(200 * MS);
            break;
        }
        cr_assert(!atomic_load(&c->done), "the call returned without waiting");
        cr_assert_lt(now_ns(), give_up, "the call never went to sleep");
        seen = r ? seen + 1 : 0;
        sleep_ns(MS);
    }
    cr_assert(!atomic_load(&c->done), "the call returned without waiting");
}

static inline void lc_probe_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
    cr_assert_fail("a probe timer ran");
}

/* Wait until s's gate is closed (stop has begun); returns how many probe
 * timers went through before, each cancelled at once (answer 1): the
 * caller adds them to `scheduled` and `cancelled`. Only while something
 * keeps that stop from finishing (a held callback). */
static inline int lc_wait_gate_closed(struct tw_service *s)
{
    uint64_t give_up = now_ns() + 20 * SEC;
    int probes = 0;

    for (;;) {
        struct tw_handle *p;
        int rc = tw_service_schedule(s, LC_HOUR, lc_probe_cb, NULL, &p);

        if (rc == -ESHUTDOWN)
            return probes;
        cr_assert_eq(rc, 0);
        cr_assert_eq(tw_handle_cancel_release(p), 1);
        probes++;
        cr_assert_lt(now_ns(), give_up, "stop never closed the gate");
        sleep_ns(MS / 2);
    }
}

static inline struct tw_service_stats lc_stats(struct tw_service *s)
{
    struct tw_service_stats st;

    cr_assert_eq(tw_service_stats(s, &st), 0);
    return st;
}

#endif /* TW_TEST_LIFECYCLE_H */
