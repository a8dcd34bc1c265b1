/*
 * Every allocation of the service failing in turn, through the test
 * allocator (tests/util.c): tw_service_create() (the service, its wheel,
 * its executor threads' array) and each schedule (a handle). Each failure
 * is a clean NULL with -ENOMEM or a clean -ENOMEM: nothing held, no thread
 * left running, counters and the pending limit untouched, no release hook
 * called; the service works afterwards.
 *
 * And the size of a handle, the whole memory of a pending timer: a plain
 * one-shot timer's allocation must stay within HANDLE_BYTES, one with a
 * period or a release hook within TAIL_BYTES (jemalloc size classes), and
 * each is freed with the size it was allocated with.
 *
 * The test allocator must be installed before the library's first
 * allocation in the process, so each test does it from .init (Criterion
 * runs every test in a process of its own).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>

#include "timewheel.h"
#include "util.h"

/* Longest wait for a callback: far above any scheduling delay, so that only
 * a callback that never runs fails the test. */
#define PATIENCE (10 * SEC)

static void counted(void)
{
    alloc_install(false);
}

/* Wait until at least n callbacks ran, or fail after PATIENCE. */
static void wait_runs(int n)
{
    uint64_t give_up = now_ns() + PATIENCE;

    while (atomic_load(&runs) < n) {
        cr_assert_lt(now_ns(), give_up, "%d of %d callbacks ran",
                     atomic_load(&runs), n);
        sleep_ns(MS);
    }
}

/* A working service: one timer runs, then stop and destroy give every
 * block back. */
static void works_and_goes(struct tw_service *s)
{
    int before = atomic_load(&runs);

    cr_assert_eq(tw_service_schedule(s, MS, count_run, NULL, NULL), 0);
    wait_runs(before + 1);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held after destroy",
                 alloc_live());
    cr_assert_eq(atomic_load(&alloc_log.bad_frees), 0);
}

struct create {
    const struct tw_service_config *cfg;
    struct tw_service *s;
};

static int try_create(void *ctx)
{
    struct create *c = ctx;
    int err = 1;

    c->s = tw_service_create(c->cfg, &err);
    cr_assert_eq(c->s != NULL, err == 0, "service %p, err %d", (void *)c->s,
                 err);
    return err;
}

/* Create fails at allocation 1, 2, ... until it succeeds (each failure
 * joins the threads it started and gives every block back); returns how
 * many allocations it makes. */
static unsigned long create_fails_cleanly(const struct tw_service_config *cfg)
{
    struct create c = {cfg, NULL};
    unsigned long n = alloc_fail_each(try_create, &c);

    works_and_goes(c.s);
    return n;
}

/* The service, then its wheel's three blocks (hierarchical) or two
 * (hashed), then the executor threads' array when there is a pool. */
Test(service_alloc, create_fails_cleanly_at_every_allocation, .init = counted)
{
    struct tw_service_config cfg;

    tw_service_config_init(&cfg, TW_HIER);
    cr_assert_eq(create_fails_cleanly(&cfg), 4);
    cfg.executor_threads = 2;
    cr_assert_eq(create_fails_cleanly(&cfg), 5);
    tw_service_config_init(&cfg, TW_HASHED);
    cfg.executor_threads = 3;
    cr_assert_eq(create_fails_cleanly(&cfg), 4);
}

static void ignore(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
}

/* A thread's first schedule into a service also makes the thread's rings
 * and the first block of its new-handle ring, its first cancel the first
 * block of its message ring (lib/service/ring.c): make them, and wait
 * until the worker has freed the handle that made them, so that the
 * service holds no timer and allocates nothing of its own. */
static void warm_rings(struct tw_service *s)
{
    struct tw_handle *h;

    alloc_watch_next();
    cr_assert_eq(tw_service_schedule(s, 3600 * SEC, ignore, NULL, &h), 0);
    cr_assert_eq(tw_handle_cancel(h), 1);
    tw_handle_release(h);
    alloc_wait_watched_freed("the warming handle");
}

enum how { ONE_SHOT, PERIODIC, AT, SUBMIT };

static int schedule(struct tw_service *s, enum how how, struct tw_handle **h)
{
    struct tw_timer_spec spec = {.deadline = tw_service_now(s) + MS,
                                 .period = MS,
                                 .kind = TW_FIXED_DELAY,
                                 .cb = count_run,
                                 .release = count_release};

    switch (how) {
    case ONE_SHOT:
        return tw_service_schedule(s, MS, count_run, NULL, h);
    case PERIODIC:
        return tw_service_schedule_periodic(s, MS, MS, TW_FIXED_RATE, count_run,
                                            NULL, h);
    case AT:
        return tw_service_schedule_at(s, spec.deadline, count_run, NULL, h);
    default:
        return tw_service_submit(s, &spec, h);
    }
}

struct sched {
    struct tw_service *s;
    enum how how;
    struct tw_handle *h;
    struct tw_service_stats before;
};

/* One schedule; a failure must leave *out NULL, nothing counted, no timer
 * held and no release called. */
static int try_schedule(void *ctx)
{
    struct sched *c = ctx;
    int rc;

    c->h = (struct tw_handle *)c->s;
    alloc_watch_next();
    rc = schedule(c->s, c->how, &c->h);
    if (rc) {
        cr_assert_null(c->h);
        cr_assert_eq(service_stats(c->s).scheduled, c->before.scheduled);
        cr_assert_eq(service_stats(c->s).pending, 0);
        cr_assert_eq(atomic_load(&releases), 0);
    }
    return rc;
}

/* A schedule of each kind fails at allocation 1, 2, ... until it succeeds:
 * -ENOMEM and nothing changed. The service holds at most one timer, so a
 * pending slot that a failure kept would refuse the next schedule with
 * -EAGAIN. Each timer then runs (twice for the periodic ones) and is
 * cancelled, and the test waits until its handle is freed (the block the
 * successful try was handed): the worker frees a cancelled handle up to
 * TW__REAP_NS after the cancel, and an executor requeues a periodic one
 * after its run, which makes that thread's rings at its first push
 * (lib/service/ring.c). Until the handle is gone, the count of blocks held
 * can change under the next kind's tries for reasons of its own; once it
 * is, no timer is left to make another thread allocate or free. */
static void schedule_fails_cleanly(struct tw_service *s, enum how how)
{
    struct sched c = {s, how, NULL, service_stats(s)};
    int before = atomic_load(&runs);

    cr_assert_eq(alloc_fail_each(try_schedule, &c), 1,
                 "schedule %d: one allocation, the handle", how);
    wait_runs(before + (how == PERIODIC || how == SUBMIT ? 2 : 1));
    cr_assert_geq(tw_handle_cancel(c.h), 0);
    tw_handle_release(c.h);
    alloc_wait_watched_freed("the handle");
    cr_assert_eq(service_stats(s).pending, 0, "a timer stayed pending");
}

static void schedules_fail_cleanly(enum tw_mode mode, unsigned threads)
{
    struct tw_service_config cfg;
    struct tw_service *s;

    tw_service_config_init(&cfg, mode);
    cfg.executor_threads = threads;
    cfg.max_pending = 1;
    s = tw_service_create(&cfg, NULL);
    cr_assert_not_null(s);
    /* Else the first kind's successful try makes this thread's rings, and
     * the allocation after the handle's, due to fail, is theirs. */
    warm_rings(s);
    for (enum how how = ONE_SHOT; how <= SUBMIT; how++)
        schedule_fails_cleanly(s, how);
    works_and_goes(s);
    cr_assert_eq(atomic_load(&releases), 1, "the submitted timer's release");
}

Test(service_alloc, schedule_fails_cleanly_hier_on_worker, .init = counted)
{
    schedules_fail_cleanly(TW_HIER, 0);
}

Test(service_alloc, schedule_fails_cleanly_hashed_on_pool, .init = counted)
{
    schedules_fail_cleanly(TW_HASHED, 2);
}

/* The bounds of docs/service.md ("Handle lifetime and cancel"). */
#define HANDLE_BYTES 48
#define TAIL_BYTES 80

/* Schedule spec an hour out and return the size of the one block that
 * took; the handle is cancelled and released. */
static unsigned long handle_bytes(struct tw_service *s,
                                  struct tw_timer_spec spec)
{
    unsigned long calls = atomic_load(&alloc_log.calls), size;
    struct tw_handle *h;

    spec.deadline = tw_service_now(s) + 3600 * SEC;
    spec.cb = ignore;
    cr_assert_eq(tw_service_submit(s, &spec, &h), 0);
    cr_assert_eq(atomic_load(&alloc_log.calls), calls + 1,
                 "a schedule makes one allocation");
    size = atomic_load(&alloc_log.last_size);
    cr_assert_eq(tw_handle_cancel(h), 1);
    tw_handle_release(h);
    return size;
}

/* Guarded blocks: a handle that wrote past the size it asked for faults. */
static void guarded(void)
{
    alloc_install(true);
}

Test(service_alloc, handles_fit_their_size_classes, .init = guarded)
{
    struct tw_service_config cfg;
    struct tw_service *s;
    unsigned long plain, periodic, hooked;

    tw_service_config_init(&cfg, TW_HIER);
    s = tw_service_create(&cfg, NULL);
    cr_assert_not_null(s);
    warm_rings(s);
    plain = handle_bytes(s, (struct tw_timer_spec){0});
    periodic = handle_bytes(
        s, (struct tw_timer_spec){.period = SEC, .kind = TW_FIXED_DELAY});
    hooked = handle_bytes(s, (struct tw_timer_spec){.release = count_release});
    cr_assert_leq(plain, HANDLE_BYTES, "one-shot handle: %lu B", plain);
    cr_assert_leq(periodic, TAIL_BYTES, "periodic handle: %lu B", periodic);
    cr_assert_leq(hooked, TAIL_BYTES, "handle with a hook: %lu B", hooked);
    cr_assert_lt(plain, periodic, "a one-shot carries no period");
    works_and_goes(s);
    cr_assert_eq(atomic_load(&releases), 1);
}

/*
 * The service lets go of a handle while a message about it still waits in
 * the cancel queue: A's callback re-arms B, due in the same tick behind it,
 * to an earlier deadline, which queues a message; B then runs in the same
 * advance and is let go of before the worker takes the message. The
 * message holds no reference, so the worker must drop the service's
 * reference when it takes it (TW__ORPHAN): B's release hook runs once and
 * every block comes back, nothing freed twice.
 */
static struct tw_handle *later;
static atomic_int rearmed;

static void rearm_later(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
    atomic_store(&rearmed,
                 tw_handle_rearm_at(later, tw_handle_deadline(later) - 1));
}

Test(service_alloc, let_go_with_a_message_queued, .init = counted)
{
    struct tw_service_config cfg;
    struct tw_service *s;
    uint64_t at;

    tw_service_config_init(&cfg, TW_HIER);
    s = tw_service_create(&cfg, NULL);
    cr_assert_not_null(s);
    at = tw_service_now(s) + 50 * MS;
    {
        struct tw_timer_spec a = {.deadline = at, .cb = rearm_later};
        struct tw_timer_spec b = {
            .deadline = at, .cb = count_run, .release = count_release};

        cr_assert_eq(tw_service_submit(s, &a, NULL), 0);
        cr_assert_eq(tw_service_submit(s, &b, &later), 0);
    }
    wait_runs(1);
    cr_assert_eq(atomic_load(&rearmed), 1, "B was re-armed before it ran");
    for (uint64_t give_up = now_ns() + PATIENCE;
         service_stats(s).pending > 0;) {
        cr_assert_lt(now_ns(), give_up, "B stayed pending");
        sleep_ns(MS);
    }
    cr_assert_eq(atomic_load(&releases), 1);
    cr_assert_eq(tw_handle_query(later), TW_HANDLE_DONE);
    tw_handle_release(later);
    works_and_goes(s);
    cr_assert_eq(atomic_load(&releases), 1);
}
