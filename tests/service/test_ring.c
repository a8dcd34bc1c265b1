/*
 * The producers' rings (lib/service/ring.c): each thread pushes its new
 * handles and its messages into rings of its own, made at its first push
 * and grown a block at a time, with the queue behind them.
 *
 *  - a block that cannot be allocated sends the push to the queue, and
 *    every timer still runs (and rings that cannot be made at all);
 *  - threads that exit give their stripe, rings included, to the threads
 *    that come after them: every timer of every thread runs once;
 *  - stop takes every handle out of every ring: what did not run is handed
 *    back, once;
 *  - a push that races the worker going to sleep is seen: the worker pays
 *    for the producers' missing fence with a membarrier, and neither a new
 *    timer nor a cancel's message is stranded while it sleeps;
 *  - a membarrier that starts failing (seccomp) strands nothing either.
 */
#define _DEFAULT_SOURCE /* syscall() */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "timewheel.h"
#include "util.h"

#define HOUR (UINT64_C(3600) * SEC)
/* Longest wait for something that must happen: far above any scheduling
 * delay, so that only a timer that never runs fails the test. */
#define PATIENCE (10 * SEC)
/* Handles in a ring block (lib/service/ring.h): a push past it grows the
 * ring. The tests push across it. */
#define BLOCK 511

static atomic_int handed;

static void count_handback(const struct tw_handback *t, void *ctx)
{
    (void)t;
    (void)ctx;
    atomic_fetch_add(&handed, 1);
}

static void accounted(struct tw_service *s)
{
    struct tw_service_stats st = service_stats(s);

    cr_assert_eq(st.pending, 0);
    cr_assert_eq(
        st.scheduled, st.completed + st.cancelled + st.returned,
        "scheduled %llu, completed %llu, cancelled %llu, "
        "returned %llu",
        (unsigned long long)st.scheduled, (unsigned long long)st.completed,
        (unsigned long long)st.cancelled, (unsigned long long)st.returned);
}

static void counted(void)
{
    alloc_install(false);
}

/* ---- a block that cannot be had: the queue ------------------------------- */

/* One schedule due in 1..20 ms; the k-th allocation it makes from now fails
 * when k > 0. Returns how many allocations it asked for. */
static unsigned long schedule_failing(struct tw_service *s, int i,
                                      unsigned long k)
{
    unsigned long calls = atomic_load(&alloc_log.calls);

    alloc_fail_after(k);
    cr_assert_eq(tw_service_schedule(s, (uint64_t)(1 + i % 20) * MS, count_run,
                                     NULL, NULL),
                 0, "schedule %d refused", i);
    alloc_fail_after(0);
    return atomic_load(&alloc_log.calls) - calls;
}

/*
 * A thread's pushes fill its ring's first block (BLOCK handles) while the
 * worker is held in a callback; the next push needs a block and its
 * allocation fails: that timer goes through the queue. The ring grows at
 * the push after. Every timer runs once and every block comes back.
 */
Test(service_ring, block_allocation_fails_timer_goes_through_queue,
     .init = counted)
{
    static struct hold hd;
    struct tw_service *s = default_service(TW_HIER);
    int n = 3 * BLOCK;

    /* The thread's rings and its first block come with its first push. */
    cr_assert_eq(tw_service_schedule(s, 0, hold_cb, &hd, NULL), 0);
    wait_for(&hd.in, 1, "holding callbacks");
    for (int i = 0; i < BLOCK - 1; i++)
        cr_assert_eq(schedule_failing(s, i, 0), 1, "push %d", i);
    /* The block is full: the handle, then the block, which fails. */
    cr_assert_eq(schedule_failing(s, BLOCK, 2), 2);
    /* The next push grows the ring (a second block), the rest fit. */
    cr_assert_eq(schedule_failing(s, BLOCK + 1, 0), 2);
    for (int i = BLOCK + 2; i < n; i++)
        schedule_failing(s, i, 0);
    atomic_store(&hd.go, 1);
    wait_for(&runs, n - 1, "timers run");
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    accounted(s);
    cr_assert_eq(service_stats(s).completed, (uint64_t)n);
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held after destroy",
                 alloc_live());
    cr_assert_eq(atomic_load(&alloc_log.bad_frees), 0);
}

/* The rings themselves cannot be made: the thread uses the queue for that
 * service from then on, and its timers run. */
Test(service_ring, rings_not_made_timers_go_through_queue, .init = counted)
{
    struct tw_service *s = default_service(TW_HIER);
    int n = 2 * BLOCK;

    /* The handle, then the rings, which fail. */
    cr_assert_eq(schedule_failing(s, 0, 2), 2);
    for (int i = 1; i < n; i++)
        cr_assert_eq(schedule_failing(s, i, 0), 1, "push %d", i);
    wait_for(&runs, n, "timers run");
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(alloc_live(), 0);
}

/* ---- stripes handed from thread to thread -------------------------------- */

struct life {
    struct tw_service *s;
    int seq;
};

/*
 * A short-lived thread: schedules BLOCK + 100 timers (its ring grows), half
 * soon and half an hour out, and cancels every fourth of the far ones
 * (messages), then exits: its stripe, and the rings it left (perhaps not
 * yet drained), go to the next thread that claims one.
 */
static void *short_life(void *arg)
{
    struct life *l = arg;

    for (int i = 0; i < BLOCK + 100; i++) {
        struct tw_handle *h;
        bool far = i % 2;

        cr_assert_eq(tw_service_schedule(l->s,
                                         far ? HOUR : (uint64_t)(i % 7) * MS,
                                         count_run, NULL, &h),
                     0);
        if (far && i % 4 == 1)
            cr_assert_eq(tw_handle_cancel(h), 1);
        tw_handle_release(h);
    }
    return NULL;
}

Test(service_ring, exited_threads_stripes_go_to_new_threads, .timeout = 60)
{
    enum { ROUNDS = 40, AT_ONCE = 3 };
    struct tw_service *s = default_service(TW_HIER);
    struct life l[AT_ONCE];
    int per = BLOCK + 100, soon = 0, cancelled = 0, far;

    for (int i = 0; i < per; i++) {
        soon += i % 2 == 0;
        cancelled += i % 4 == 1;
    }
    far = per - soon - cancelled;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t t[AT_ONCE];

        for (int k = 0; k < AT_ONCE; k++) {
            l[k] = (struct life){s, r * AT_ONCE + k};
            cr_assert_eq(pthread_create(&t[k], NULL, short_life, &l[k]), 0);
        }
        for (int k = 0; k < AT_ONCE; k++)
            pthread_join(t[k], NULL);
    }
    wait_for(&runs, ROUNDS * AT_ONCE * soon, "soon timers run");
    cr_assert_eq(tw_service_stop(s, count_handback, NULL), 0);
    cr_assert_eq(atomic_load(&runs), ROUNDS * AT_ONCE * soon);
    cr_assert_eq(atomic_load(&handed), ROUNDS * AT_ONCE * far, "%d handed back",
                 atomic_load(&handed));
    cr_assert_eq(service_stats(s).cancelled,
                 (uint64_t)(ROUNDS * AT_ONCE * cancelled));
    accounted(s);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* ---- stop empties the rings --------------------------------------------- */

/*
 * Held in a callback, the worker cannot drain; producers fill their rings
 * with more than a turn admits (a ring gives at most its share of 10^5 a
 * turn), a release hook on every fourth. Then the callback returns and stop
 * comes at once: the worker's last turn leaves handles in the rings, and
 * stop must hand every one back, and call every hook once.
 */
struct filler {
    struct tw_service *s;
    int n;
};

static void *fill(void *arg)
{
    struct filler *f = arg;

    for (int i = 0; i < f->n; i++) {
        struct tw_timer_spec spec = {
            .deadline = now_ns() + HOUR,
            .cb = count_run,
            .release = i % 4 ? NULL : count_release,
        };

        cr_assert_eq(tw_service_submit(f->s, &spec, NULL), 0);
    }
    return NULL;
}

Test(service_ring, stop_hands_back_every_handle_in_rings, .timeout = 60)
{
    enum { THREADS = 2, EACH = 60000 };
    static struct hold hd;
    struct tw_service_config cfg;
    struct tw_service *s;
    struct filler f[THREADS];
    pthread_t t[THREADS];

    tw_service_config_init(&cfg, TW_HIER);
    cfg.max_pending = 0;
    cfg.max_lag_ns = 0;
    s = tw_service_create(&cfg, NULL);
    cr_assert_not_null(s);
    cr_assert_eq(tw_service_schedule(s, 0, hold_cb, &hd, NULL), 0);
    wait_for(&hd.in, 1, "holding callbacks");
    for (int k = 0; k < THREADS; k++) {
        f[k] = (struct filler){s, EACH};
        cr_assert_eq(pthread_create(&t[k], NULL, fill, &f[k]), 0);
    }
    for (int k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    atomic_store(&hd.go, 1);
    cr_assert_eq(tw_service_stop(s, count_handback, NULL), 0);
    cr_assert_eq(atomic_load(&handed), THREADS * EACH, "%d handed back",
                 atomic_load(&handed));
    cr_assert_eq(atomic_load(&releases), THREADS * EACH / 4, "%d hooks run",
                 atomic_load(&releases));
    cr_assert_eq(atomic_load(&runs), 0);
    cr_assert_eq(service_stats(s).returned, (uint64_t)(THREADS * EACH));
    accounted(s);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* ---- nothing stranded while the worker falls asleep ---------------------- */

static atomic_int fired;

static void note_fired(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
    atomic_fetch_add(&fired, 1);
}

/* Spin about n iterations: a varying delay to sweep the race window. */
static void spin(unsigned n)
{
    for (volatile unsigned i = 0; i < n; i++)
        ;
}

/* As wait_for(), without sleeping: the test must act within microseconds
 * of the callback. */
static void spin_for(atomic_int *n, int want, const char *what)
{
    uint64_t give_up = now_ns() + PATIENCE;

    while (atomic_load(n) < want)
        cr_assert_lt(now_ns(), give_up, "%d of %d %s", atomic_load(n), want,
                     what);
}

/*
 * With nothing else pending, the worker sleeps without a timeout after
 * running a timer. Right after each run, with a delay that sweeps the
 * moments the worker publishes its sleep and looks at the rings, the test
 * schedules the next timer, due in 1 ms: it must run (a stranded one would
 * wait forever).
 */
Test(service_ring, push_racing_the_workers_sleep_is_not_stranded,
     .timeout = 120)
{
    struct tw_service *s = default_service(TW_HIER);
    int rounds = 1500;

    cr_assert_eq(tw_service_schedule(s, MS, note_fired, NULL, NULL), 0);
    for (int r = 0; r < rounds; r++) {
        spin_for(&fired, r + 1, "timers fired");
        spin((unsigned)(r % 50) * 200);
        cr_assert_eq(tw_service_schedule(s, MS, note_fired, NULL, NULL), 0);
    }
    wait_for(&fired, rounds + 1, "timers fired");
    cr_assert_eq(tw_service_destroy(s), 0);
}

/*
 * A cancel's message racing the worker's sleep: the worker sleeps an hour
 * (its only other timer's deadline) once the short timer has run, so a
 * message it missed would wait that long. The cancelled timer's release
 * hook runs when the worker takes the message: it must come within
 * PATIENCE (the worker reaps within 0.1 s of a cancel).
 */
Test(service_ring, cancel_racing_the_workers_sleep_is_not_stranded,
     .timeout = 120)
{
    struct tw_service *s = default_service(TW_HIER);
    int rounds = 300;

    for (int r = 0; r < rounds; r++) {
        struct tw_timer_spec far = {.deadline = now_ns() + HOUR,
                                    .cb = count_run,
                                    .release = count_release};
        struct tw_handle *h;

        cr_assert_eq(tw_service_submit(s, &far, &h), 0);
        cr_assert_eq(tw_service_schedule(s, MS, note_fired, NULL, NULL), 0);
        spin_for(&fired, r + 1, "timers fired");
        spin((unsigned)(r % 50) * 200);
        cr_assert_eq(tw_handle_cancel(h), 1);
        tw_handle_release(h);
        wait_for(&releases, r + 1, "cancelled timers let go of");
    }
    cr_assert_eq(atomic_load(&runs), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/*
 * membarrier failing after it registered (here: a seccomp filter that
 * answers EPERM, installed once the thread's rings exist): the worker
 * sleeps no further than the next tick while its barrier fails, producers
 * fall back to the queue for new rings, and stop, which then waits out the
 * store buffers instead, hands back what did not run. A functional check
 * of the fallback, not of the race it covers (too narrow to hit).
 */
static void deny_membarrier(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & 0xffff)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};

    cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    cr_assert_eq(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                         SECCOMP_FILTER_FLAG_TSYNC, &prog),
                 0);
    cr_assert_eq(syscall(SYS_membarrier, 0, 0, 0), -1);
}

static void *schedule_soon(void *arg)
{
    struct tw_service *s = arg;

    for (int i = 0; i < 100; i++)
        cr_assert_eq(tw_service_schedule(s, 2 * MS, count_run, NULL, NULL), 0);
    return NULL;
}

Test(service_ring, membarrier_failing_later_strands_nothing, .timeout = 60)
{
    struct tw_service *s = default_service(TW_HIER);
    pthread_t t;

    cr_assert_eq(tw_service_schedule(s, HOUR, count_run, NULL, NULL), 0);
    deny_membarrier();
    sleep_ns(20 * MS); /* the worker goes to sleep: its barrier fails */
    for (int i = 0; i < 100; i++) /* into this thread's rings */
        cr_assert_eq(tw_service_schedule(s, 2 * MS, count_run, NULL, NULL), 0);
    cr_assert_eq(pthread_create(&t, NULL, schedule_soon, s), 0);
    pthread_join(t, NULL); /* a new thread: no rings any more */
    wait_for(&runs, 200, "timers run");
    atomic_store(&handed, 0);
    cr_assert_eq(tw_service_stop(s, count_handback, NULL), 0);
    cr_assert_eq(atomic_load(&handed), 1);
    cr_assert_eq(tw_service_destroy(s), 0);
}
