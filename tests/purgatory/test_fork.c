/*
 * fork() and the purgatory (lib/purgatory/purgatory.c, "fork"): in a child,
 * every call on a purgatory over a service that it inherited answers
 * -ECHILD, destroy at once; nothing hangs (a shard lock a parent thread
 * held, or a timeout no thread of the child fires) and nothing is accepted
 * silently. The parent's purgatory is untouched by its child. A purgatory
 * over a core wheel has no thread or lock of its own and still works in
 * the child.
 *
 * The child reports by its exit status (its first failed check + 1); the
 * parent gives it 10 s before it calls it hung.
 */
#define _DEFAULT_SOURCE /* usleep */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preq.h"
#include "util.h"

static struct preq child_req;

static int in_child(struct tw_purgatory *p)
{
    struct tw_key k = pkey("k");
    struct tw_purgatory_stats st;
    int bad = 0;

    preq_init(&child_req, p);
    if (tw_purgatory_watch(p, &child_req.op, &k, 1, SEC) != -ECHILD)
        bad |= 1 << 0;
    if (tw_purgatory_check(p, "a", 1) != -ECHILD)
        bad |= 1 << 1;
    if (tw_purgatory_cancel_key(p, "a", 1, NULL, NULL) != -ECHILD)
        bad |= 1 << 2;
    if (tw_purgatory_stats(p, &st) != -ECHILD)
        bad |= 1 << 3;
    if (tw_purgatory_stop(p, NULL, NULL) != -ECHILD)
        bad |= 1 << 4;
    if (tw_purgatory_destroy(p) != -ECHILD)
        bad |= 1 << 5;
    return bad;
}

static int reap(pid_t pid)
{
    int status;

    for (int i = 0; i < 10000; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 256;
        usleep(1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

Test(purgatory_fork, child_gets_echild_over_a_service)
{
    struct tw_service_config cfg;
    struct tw_service *s;
    struct tw_purgatory *p;
    struct tw_key k = pkey("a");
    struct preq r;
    pid_t pid;
    int rc;

    tw_service_config_init(&cfg, TW_HIER);
    s = tw_service_create(&cfg, NULL);
    cr_assert_not_null(s);
    p = purgatory_on(s);
    preq_init(&r, p);
    cr_assert_eq(tw_purgatory_watch(p, &r.op, &k, 1, 3600 * SEC), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int bad = in_child(p);

        child_exit(bad ? 1 + __builtin_ctz((unsigned)bad) : 0);
    }
    rc = reap(pid);
    cr_assert_neq(rc, -1, "the child hung (killed after 10 s)");
    cr_assert_eq(rc, 0, "the child's check %d failed", rc - 1);
    /* The parent's purgatory is as it was: the watch is still there. */
    atomic_store(&r.ready, true);
    cr_assert_eq(tw_purgatory_check(p, "a", 1), 1);
    cr_assert_eq(atomic_load(&r.completes), 1);
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(purgatory_fork, child_uses_a_purgatory_over_a_wheel)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw_purgatory *p = purgatory_on_wheel(w);
    struct tw_key k = pkey("a");
    struct preq r;
    pid_t pid;
    int rc;

    preq_init(&r, p);
    cr_assert_eq(tw_purgatory_watch(p, &r.op, &k, 1, SEC), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        atomic_store(&r.ready, true);
        child_exit(tw_purgatory_check(p, "a", 1) == 1 &&
                           atomic_load(&r.completes) == 1 &&
                           tw_purgatory_destroy(p) == 0
                       ? 0
                       : 1);
    }
    rc = reap(pid);
    cr_assert_eq(rc, 0, "the child could not use its copy (%d)", rc);
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    tw_destroy(w);
}
