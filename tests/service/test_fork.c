/*
 * fork() (lib/service/fork.c): in a child, every call on a service it
 * inherited, or on one of its handles, answers -ECHILD and changes
 * nothing, destroy included, which returns at once; nothing hangs, nothing
 * is accepted silently (before, a schedule answered 0 and its timer never
 * ran, and destroy never returned: issue 30). A service made in the child
 * works. The parent's service is untouched by its child.
 *
 * The child reports by its exit status (its first check that failed),
 * not through Criterion, whose reporting is its parent's; the parent gives
 * it 10 s before it calls it hung.
 */
#define _DEFAULT_SOURCE /* usleep */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timewheel.h"
#include "util.h"

#define HOUR (UINT64_C(3600) * SEC)

#if defined(__SANITIZE_THREAD__)
#define FORK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FORK_TSAN 1
#endif
#endif

#ifdef FORK_TSAN
/* ThreadSanitizer's lock-order detector cannot follow a fork(): jemalloc's
 * prefork handler (libjemalloc is loaded into every test) takes every one
 * of its arena and bin mutexes, more than the 64 locks the detector lets a
 * thread hold, and TSan stops on its own CHECK (sanitizer_deadlock_detector.h)
 * before any of our code runs in the child. Races are still detected. One
 * Criterion binary holds every test, so this is the suite's default under
 * TSan; TSAN_OPTIONS=detect_deadlocks=1 puts the detector back (and fails
 * the fork tests, and only them, that way). */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "detect_deadlocks=0";
}
#endif

static atomic_int child_runs;

static void child_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
    atomic_fetch_add(&child_runs, 1);
}

static void handback(const struct tw_handback *t, void *ctx)
{
    (void)t;
    (void)ctx;
}

/* What the child checks; returns a bit per failure. */
static int in_child(struct tw_service *s, struct tw_handle *h,
                    struct tw_handle *h2)
{
    struct tw_service_stats st;
    struct tw_service_metrics m;
    struct tw_timer_spec spec = {.deadline = 0, .cb = child_cb};
    struct tw_handle *out = (struct tw_handle *)&spec;
    int bad = 0;

    if (tw_service_schedule(s, 0, child_cb, NULL, &out) != -ECHILD || out)
        bad |= 1 << 0;
    if (tw_service_submit(s, &spec, NULL) != -ECHILD)
        bad |= 1 << 1;
    if (tw_handle_cancel(h) != -ECHILD)
        bad |= 1 << 2;
    if (tw_handle_rearm(h, SEC) != -ECHILD)
        bad |= 1 << 3;
    if (tw_handle_cancel_wait(h) != -ECHILD)
        bad |= 1 << 4;
    if (tw_handle_query(h) != TW_HANDLE_PENDING)
        bad |= 1 << 5; /* nothing changed */
    if (tw_service_stats(s, &st) != -ECHILD)
        bad |= 1 << 6;
    if (tw_handle_cancel_release(h2) != -ECHILD)
        bad |= 1 << 7;
    if (tw_service_stop(s, handback, NULL) != -ECHILD)
        bad |= 1 << 8;
    if (tw_service_metrics(s, &m) != -ECHILD ||
        tw_service_metrics_text(s, NULL, 0) != -ECHILD)
        bad |= 1 << 13;
    if (tw_service_destroy(s) != -ECHILD)
        bad |= 1 << 9;
#ifndef FORK_TSAN
    /* A service of the child's own works (not under ThreadSanitizer, which
     * ends a child of a threaded parent that starts threads). */
    {
        struct tw_service_config cfg;
        struct tw_service *c;

        tw_service_config_init(&cfg, TW_HIER);
        c = tw_service_create(&cfg, NULL);
        if (!c || tw_service_schedule(c, MS, child_cb, NULL, NULL))
            bad |= 1 << 10;
        for (int i = 0; i < 5000 && !atomic_load(&child_runs); i++)
            usleep(1000);
        if (atomic_load(&child_runs) != 1)
            bad |= 1 << 11;
        if (!c || tw_service_destroy(c))
            bad |= 1 << 12;
    }
#endif
    return bad;
}

/* Wait up to 10 s for pid; its exit status, or -1 if it hung (killed). */
static int reap(pid_t pid)
{
    int status;

    for (int i = 0; i < 10000; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);

        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 256;
        usleep(1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static void fork_with(unsigned executors)
{
    /* A service destroyed before the fork leaves an empty slot in the
     * registry below s's, which the child's marking steps over. */
    struct tw_service *gone = default_service(TW_HIER);
    struct tw_service *s = service_pool(TW_HIER, executors);
    struct tw_handle *h, *h2;
    pid_t pid;
    int rc;

    cr_assert_eq(tw_service_destroy(gone), 0);
    cr_assert_eq(tw_service_schedule(s, HOUR, count_run, NULL, &h), 0);
    cr_assert_eq(tw_service_schedule(s, HOUR, count_run, NULL, &h2), 0);
    sleep_ns(10 * MS); /* the worker asleep until the hour */
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int bad = in_child(s, h, h2);

        child_exit(bad ? 1 + __builtin_ctz((unsigned)bad) : 0);
    }
    rc = reap(pid);
    cr_assert_neq(rc, -1, "the child hung (killed after 10 s)");
    cr_assert_eq(rc, 0, "the child's check %d (in_child()'s bit) failed",
                 rc - 1);
    /* The parent's service is as it was. */
    cr_assert_eq(tw_handle_cancel(h), 1);
    cr_assert_eq(tw_handle_cancel_release(h2), 1);
    tw_handle_release(h);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_fork, child_gets_echild_and_no_hang)
{
    fork_with(0);
}

Test(service_fork, child_gets_echild_with_executors)
{
    fork_with(2);
}
