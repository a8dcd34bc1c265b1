/*
 * A store across fork() (suite store_fork, issue 30): in the child, every
 * call on the store inherited from the parent answers -ECHILD at once and
 * tw_store_close() returns -ECHILD without waiting for threads the child
 * does not have (lib/store/fork.c); the directory stays the parent's (an
 * open in the child: -EBUSY); the parent's store goes on untouched. The
 * child reports by its exit status, and the parent gives it 10 s before
 * calling it a hang. Runs in the default build and under TSan: there the
 * test runs again in another process of this binary with TSan's
 * lock-order detector off (detect_deadlocks=0; race detection stays on),
 * as jemalloc's pre-fork handlers take more locks at once (over 64) than
 * that detector can hold, and it stops the process with a CHECK failure
 * inside fork() before the store is reached.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/wait.h>

#include "st.h"
#include "util.h"

ST_FIXTURE(store_fork, 60, (void)0);

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* Under TSan, outside the inner run: run this test again with the
 * lock-order detector off, and take its verdict. True if it was run. */
static bool run_inner(const char *test)
{
#ifdef UNDER_TSAN
    const char *tsan = getenv("TSAN_OPTIONS");
    char opts[1024], inner[] = "TWSTORE_FORK_INNER=1",
                     *envp[] = {opts, inner, NULL};
    int status;

    if (getenv("TWSTORE_FORK_INNER"))
        return false;
    snprintf(opts, sizeof opts, "TSAN_OPTIONS=%s%sdetect_deadlocks=0",
             tsan ? tsan : "", tsan ? ":" : "");
    status = st_run_self(test, envp, true);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the run under TSan failed (status %d)", status);
    return true;
#else
    (void)test;
    return false;
#endif
}

static void never(struct tw_store *s, struct tw_store_id id,
                  const void *payload, size_t len, void *arg)
{
    (void)s, (void)id, (void)payload, (void)len, (void)arg;
}

static int refuse_bytes(const void *buf, size_t len, void *ctx)
{
    (void)buf, (void)len, (void)ctx;
    return -EIO;
}

/* The child's checks; the number that failed. */
static int child_checks(struct tw_store *s, struct tw_store_id id)
{
    struct tw_store_config cfg;
    struct tw_store_metrics m;
    struct tw_store_replica ri;
    int bad = 0, err = 0;

    bad += tw_store_schedule_at(s, 1, "c", 1, NULL, NULL, NULL) != -ECHILD;
    bad += tw_store_schedule_after(s, 1, "c", 1, NULL, NULL, NULL) != -ECHILD;
    bad += tw_store_schedule_durable(s, 1, "c", 1, NULL) != -ECHILD;
    bad += tw_store_cancel(s, id, NULL, NULL) != -ECHILD;
    bad += tw_store_ack(s, id, NULL, NULL) != -ECHILD;
    bad += tw_store_sync(s) != -ECHILD;
    bad += tw_store_fd(s) != -ECHILD;
    bad += tw_store_poll(s, never, NULL, 1) != -ECHILD;
    bad += tw_store_metrics(s, &m) != -ECHILD;
    bad += tw_store_metrics_text(s, NULL, 0) != -ECHILD;
    bad += tw_store_replica_info(s, &ri) != -ECHILD;
    bad += tw_store_fence(s) != -ECHILD;
    bad += tw_store_renew(s, 1) != -ECHILD;
    bad += tw_store_apply(s, "TWL1", 4) != -ECHILD;
    bad += tw_store_promote(s, 0) != -ECHILD;
    bad += tw_store_snapshot(s, refuse_bytes, NULL, NULL) != -ECHILD;
    tw_store_config_init(&cfg);
    cfg.polled = true;
    bad += tw_store_open(dir, &cfg, &err) != NULL || err != -EBUSY;
    bad += tw_store_close(s) != -ECHILD;
    return bad;
}

/* The child's status, or a failure after 10 s (it hung: killed). */
static int wait_child(pid_t pid)
{
    uint64_t end = st_mono() + 10000 * ST_MS;
    int status = 0;
    pid_t got;

    while ((got = waitpid(pid, &status, WNOHANG)) == 0 && st_mono() < end)
        st_sleep_ms(5);
    if (got == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        cr_assert_fail("the child hung on its inherited store");
    }
    cr_assert_eq(got, pid);
    return status;
}

Test(store_fork, a_child_gets_echild_and_the_parent_goes_on)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    struct tw_store_id id;
    int err = 1, status;
    pid_t pid;

    if (run_inner("store_fork/a_child_gets_echild_and_the_parent_goes_on"))
        return;
    tw_store_config_init(&cfg);
    cfg.polled = true;
    s = tw_store_open(dir, &cfg, &err);
    cr_assert_not_null(s, "open: %d", err);
    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "p", 1, &id), 0);
    /* Work in flight at the fork: the worker busy with a batch. */
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(tw_store_schedule_after(s, tw_sec(3600), &i, sizeof i,
                                             NULL, NULL, NULL),
                     0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        child_exit(child_checks(s, id));
    status = wait_child(pid);
    cr_assert(WIFEXITED(status), "the child died (status %d)", status);
    cr_assert_eq(WEXITSTATUS(status), 0,
                 "%d of the child's calls did not "
                 "answer -ECHILD",
                 WEXITSTATUS(status));
    cr_assert_eq(tw_store_sync(s), 0, "the parent's store after the fork");
    cr_assert_eq(tw_store_cancel(s, id, NULL, NULL), 0);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(tw_store_count(s), 1000);
    cr_assert_eq(tw_store_close(s), 0);
    cr_assert_eq(st_on_disk(dir), 1000);
}
