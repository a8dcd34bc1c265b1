/*
 * The purgatory over the threaded service (suite purgatory_service): the
 * behaviours of test_watch.c where threads change something, and the lock
 * order. Waits are bounded polls (a few seconds at most) and no test
 * asserts how soon something happens, only that it happens and what ran.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "preq.h"
#include "util.h"

/* Destroy both, the purgatory first; the service then holds no timer. */
static void both_free(struct tw_purgatory *p, struct tw_service *s)
{
    struct tw_service_stats st;

    cr_assert_eq(tw_purgatory_destroy(p), 0);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(st.returned, 0, "a timeout outlived its operation");
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* A request that records the thread of its on_complete. */
struct treq {
    struct preq r;
    pthread_t thread;
};

static void complete_records_thread(struct tw_delayed *op, void *arg)
{
    struct treq *t = TW_CONTAINER_OF(arg, struct treq, r);

    t->thread = pthread_self();
    t->r.expired_first = atomic_load(&t->r.expires) > 0;
    t->r.state_in_complete = tw_delayed_state(op);
    atomic_fetch_add(&t->r.completes, 1);
}

static void expires_on_a_service_thread(unsigned executors)
{
    struct tw_service *s = service_bounded(TW_HIER, executors, 0);
    struct tw_purgatory *p = purgatory_on(s);
    struct tw_key k[2] = {pkey("a"), pkey("b")};
    struct treq t;

    preq_init(&t.r, p);
    t.r.op.on_complete = complete_records_thread;
    cr_assert_eq(tw_purgatory_watch(p, &t.r.op, k, 2, 20 * MS), 0);
    wait_for(&t.r.completes, 1, "expired");
    cr_assert_eq(t.r.expires, 1);
    cr_assert(t.r.expired_first);
    cr_assert_eq(t.r.state_in_complete, TW_DELAYED_EXPIRED);
    cr_assert(!pthread_equal(t.thread, pthread_self()),
              "expiry runs on the service's thread");
    stats_are(p, 1, 0, 1, 0, 0, 0, 0);
    both_free(p, s);
    cr_assert_eq(t.r.completes, 1);
}

Test(purgatory_service, expires_on_the_worker)
{
    expires_on_a_service_thread(0);
}

Test(purgatory_service, expires_on_the_executor)
{
    expires_on_a_service_thread(2);
}

struct checker {
    struct tw_purgatory *p;
    const char *key;
    int64_t completed;
};

static void *check_in_thread(void *arg)
{
    struct checker *c = arg;

    c->completed = tw_purgatory_check(c->p, c->key, strlen(c->key));
    return NULL;
}

Test(purgatory_service, completed_by_another_thread_cancels_its_timeout)
{
    struct tw_service *s = service_bounded(TW_HIER, 0, 0);
    struct tw_purgatory *p = purgatory_on(s);
    struct tw_key k = pkey("orders-3");
    struct checker c = {p, "orders-3", -1};
    struct tw_service_stats st;
    struct treq t;
    pthread_t th;

    preq_init(&t.r, p);
    t.r.op.on_complete = complete_records_thread;
    /* Long enough that the checker's thread comes first under valgrind on
     * a loaded machine too (50 ms did not, once). */
    cr_assert_eq(tw_purgatory_watch(p, &t.r.op, &k, 1, 500 * MS), 0);
    atomic_store(&t.r.ready, true);
    cr_assert_eq(pthread_create(&th, NULL, check_in_thread, &c), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
    cr_assert_eq(c.completed, 1);
    cr_assert_eq(t.r.completes, 1);
    cr_assert(pthread_equal(t.thread, th), "on_complete ran on the checker");
    stats_are(p, 1, 1, 0, 0, 0, 0, 0);
    /* Past the timeout, and past the service timer that was armed for it
     * (its run finds nothing due): nothing expired, nothing ran twice. */
    sleep_ns(550 * MS);
    for (uint64_t end = now_ns() + 10 * SEC;; sleep_ns(MS)) {
        cr_assert_eq(tw_service_stats(s, &st), 0);
        if (st.pending == 0 || now_ns() > end)
            break;
    }
    cr_assert_eq(st.pending, 0, "the service timer ran and was let go");
    cr_assert_eq(t.r.expires, 0, "the timeout was cancelled");
    cr_assert_eq(t.r.completes, 1);
    stats_are(p, 1, 1, 0, 0, 0, 0, 0);
    both_free(p, s);
}

/* More shards than timeout wheels (a shard past the first 16 keeps its
 * timeouts in the wheel of a lower one, under that shard's lock): every
 * timeout still fires on its own, and one completed in time never does,
 * with two threads watching and checking at once. */
struct many {
    struct tw_purgatory *p;
    struct preq *r;
    int from, n;
};

static void *watch_half_then_check(void *arg)
{
    struct many *m = arg;
    char key[16];

    for (int i = m->from; i < m->from + m->n; i++) {
        struct tw_key k;

        snprintf(key, sizeof(key), "k%d", i);
        k = pkey(key);
        preq_init(&m->r[i], m->p);
        cr_assert_eq(tw_purgatory_watch(m->p, &m->r[i].op, &k, 1,
                                        (i % 2 ? 30 : 3600) * MS),
                     0);
    }
    /* The even ones (an hour's timeout) complete by a check. */
    for (int i = m->from; i < m->from + m->n; i += 2) {
        snprintf(key, sizeof(key), "k%d", i);
        atomic_store(&m->r[i].ready, true);
        cr_assert_eq(tw_purgatory_check(m->p, key, strlen(key)), 1);
    }
    return NULL;
}

Test(purgatory_service, more_shards_than_timeout_wheels)
{
    enum { N = 512 };
    struct tw_service *s = service_bounded(TW_HIER, 0, 0);
    struct tw_purgatory_config cfg;
    struct tw_purgatory *p;
    static struct preq r[N];
    struct many m[2];
    pthread_t th[2];

    tw_purgatory_config_init(&cfg);
    cfg.service = s;
    cfg.shards = 256;
    p = tw_purgatory_create(&cfg, NULL);
    cr_assert(p);
    for (int t = 0; t < 2; t++) {
        m[t] = (struct many){p, r, t * N / 2, N / 2};
        cr_assert_eq(pthread_create(&th[t], NULL, watch_half_then_check, &m[t]),
                     0);
    }
    for (int t = 0; t < 2; t++)
        cr_assert_eq(pthread_join(th[t], NULL), 0);
    for (int i = 0; i < N; i++)
        wait_for(&r[i].completes, 1, "answered");
    for (int i = 0; i < N; i++)
        cr_assert_eq(r[i].expires, i % 2, "request %d", i);
    stats_are(p, N, N / 2, N / 2, 0, 0, 0, 0);
    both_free(p, s);
}

/* A request that records when its on_expire ran. */
struct xreq {
    struct preq r;
    uint64_t t_watch; /* just before the watch call */
    uint64_t t_expire;
};

static void expire_records_time(struct tw_delayed *op, void *arg)
{
    struct xreq *x = TW_CONTAINER_OF(arg, struct xreq, r);

    x->t_expire = now_ns();
    expire_cb(op, arg);
}

/* Many watches share one service timer: the service holds one pending
 * timer however many timeouts the purgatory holds, and each timeout still
 * fires at its own time, not before. */
Test(purgatory_service, one_service_timer_for_every_timeout)
{
    enum { N = 200 };
    struct tw_service *s = service_bounded(TW_HIER, 0, 0);
    struct tw_purgatory *p = purgatory_on(s);
    struct tw_key k[2] = {pkey("x"), pkey("y")};
    struct tw_service_stats st;
    static struct xreq x[N];

    for (int i = 0; i < N; i++) {
        struct preq *r = &x[i].r;

        preq_init(r, p);
        r->op.on_expire = expire_records_time;
        x[i].t_watch = now_ns();
        /* Short timeouts in reverse order: each new one is earlier than
         * the service timer armed so far, which must move. */
        cr_assert_eq(
            tw_purgatory_watch(p, &r->op, &k[i % 2], 1, (uint64_t)(N - i) * MS),
            0);
    }
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_leq(st.pending, 1, "%llu service timers",
                  (unsigned long long)st.pending);
    for (int i = 0; i < N; i++)
        wait_for(&x[i].r.completes, 1, "expired");
    for (int i = 0; i < N; i++) {
        cr_assert_eq(x[i].r.expires, 1);
        cr_assert_geq(x[i].t_expire - x[i].t_watch, (uint64_t)(N - i) * MS,
                      "timeout %d fired early", i);
    }
    stats_are(p, N, 0, N, 0, 0, 0, 0);
    both_free(p, s);
}

/* A timeout of 0 fires on the worker while watch may still own the
 * operation: either way it expires exactly once. */
Test(purgatory_service, zero_timeout_races_the_watch)
{
    enum { N = 300 };
    struct tw_service *s = service_bounded(TW_HIER, 0, 0);
    struct tw_purgatory *p = purgatory_on(s);
    struct tw_key k = pkey("k");
    static struct preq r[N];
    atomic_int done = 0;

    for (int i = 0; i < N; i++) {
        preq_init(&r[i], p);
        cr_assert_eq(tw_purgatory_watch(p, &r[i].op, &k, 1, 0), 0);
    }
    for (int i = 0; i < N; i++) {
        wait_for(&r[i].completes, 1, "expired");
        cr_assert_eq(r[i].expires, 1);
        atomic_fetch_add(&done, 1);
    }
    stats_are(p, N, 0, N, 0, 0, 0, 0);
    both_free(p, s);
    for (int i = 0; i < N; i++)
        cr_assert_eq(r[i].completes, 1);
}

Test(purgatory_service, stop_hands_back_and_refuses_later_watches)
{
    struct tw_service *s = service_bounded(TW_HIER, 0, 0);
    struct tw_purgatory *p = purgatory_on(s);
    struct tw_key k[2] = {pkey("a"), pkey("b")};
    struct preq r[20], late;

    for (int i = 0; i < 20; i++) {
        preq_init(&r[i], p);
        cr_assert_eq(
            tw_purgatory_watch(p, &r[i].op, k, 1 + (size_t)(i % 2), 3600 * SEC),
            0);
    }
    cr_assert_eq(tw_purgatory_stop(p, preq_handback, NULL), 20);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(r[i].handed_back, 1);
    stats_are(p, 20, 0, 0, 0, 20, 0, 0);
    preq_init(&late, p);
    cr_assert_eq(tw_purgatory_watch(p, &late.op, k, 1, SEC), -ESHUTDOWN);
    cr_assert_eq(tw_delayed_state(&late.op), TW_DELAYED_IDLE);
    both_free(p, s);
}

Test(purgatory_service, cancel_key_hands_back_over_the_service)
{
    struct tw_service *s = service_bounded(TW_HIER, 0, 0);
    struct tw_purgatory *p = purgatory_on(s);
    struct tw_key k = pkey("gone");
    struct preq r[5];

    for (int i = 0; i < 5; i++) {
        preq_init(&r[i], p);
        cr_assert_eq(tw_purgatory_watch(p, &r[i].op, &k, 1, 50 * MS), 0);
    }
    cr_assert_eq(tw_purgatory_cancel_key(p, "gone", 4, preq_handback, NULL), 5);
    sleep_ns(100 * MS); /* past the cancelled timeouts */
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(r[i].handed_back, 1);
        cr_assert_eq(r[i].completes + r[i].expires, 0);
    }
    stats_are(p, 5, 0, 0, 5, 0, 0, 0);
    both_free(p, s);
}

static void nop_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
}

/* Wait (bounded) until the service holds n pending timers. */
static void wait_pending(struct tw_service *s, uint64_t n)
{
    struct tw_service_stats st;

    for (uint64_t end = now_ns() + 10 * SEC;; sleep_ns(MS)) {
        cr_assert_eq(tw_service_stats(s, &st), 0);
        if (st.pending == n || now_ns() > end)
            break;
    }
    cr_assert_eq(st.pending, n, "%llu pending", (unsigned long long)st.pending);
}

/* The service's refusals come back from watch, and lose nothing. */
Test(purgatory_service, service_refusals_leave_the_operation_idle)
{
    struct tw_service *s = service_bounded(TW_HIER, 0, 1);
    struct tw_purgatory *p = purgatory_on(s);
    struct tw_key k = pkey("k");
    struct tw_handle *other;
    struct preq r[2];

    /* A service full of another user's timer: the purgatory's needs a
     * service timer and is refused. */
    cr_assert_eq(tw_service_schedule(s, 3600 * SEC, nop_cb, NULL, &other), 0);
    preq_init(&r[0], p);
    preq_init(&r[1], p);
    cr_assert_eq(tw_purgatory_watch(p, &r[0].op, &k, 1, 3600 * SEC), -EAGAIN,
                 "max_pending");
    cr_assert_eq(tw_delayed_state(&r[0].op), TW_DELAYED_IDLE);
    stats_are(p, 0, 0, 0, 0, 0, 0, 0);
    cr_assert_eq(tw_handle_cancel_release(other), 1);
    wait_pending(s, 0);
    /* One service timer covers both watches (max_pending is 1). */
    cr_assert_eq(tw_purgatory_watch(p, &r[0].op, &k, 1, 3600 * SEC), 0);
    cr_assert_eq(tw_purgatory_watch(p, &r[1].op, &k, 1, 3600 * SEC), 0);
    stats_are(p, 2, 0, 0, 0, 0, 2, 1);
    cr_assert_eq(tw_purgatory_stop(p, preq_handback, NULL), 2);
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    /* A stopped service: -ESHUTDOWN. */
    p = purgatory_on(s);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    preq_init(&r[1], p);
    cr_assert_eq(tw_purgatory_watch(p, &r[1].op, &k, 1, SEC), -ESHUTDOWN);
    cr_assert_eq(tw_delayed_state(&r[1].op), TW_DELAYED_IDLE);
    stats_are(p, 0, 0, 0, 0, 0, 0, 0);
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/*
 * The lock order: a caller holds its own lock while checking a key, and
 * the operation's try_complete takes that same lock, on this thread (the
 * lock is recursive, as Java's are) and on another thread at once. Kafka's
 * purgatory deadlocks here: the checker holding the caller's lock blocks on
 * the operation's lock, whose holder's tryComplete waits for the caller's
 * lock. Here the checker never waits for an owner (it leaves a note and
 * moves on), so both threads finish; a deadlock would hang the test until
 * Criterion's timeout fails it.
 */
static pthread_mutex_t caller_lock;
static atomic_int lock_tries;

static void caller_lock_init(void)
{
    pthread_mutexattr_t a;

    cr_assert_eq(pthread_mutexattr_init(&a), 0);
    cr_assert_eq(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE), 0);
    cr_assert_eq(pthread_mutex_init(&caller_lock, &a), 0);
    pthread_mutexattr_destroy(&a);
}

static bool try_under_caller_lock(struct tw_delayed *op, void *arg)
{
    (void)op;
    (void)arg;
    pthread_mutex_lock(&caller_lock);
    atomic_fetch_add(&lock_tries, 1);
    pthread_mutex_unlock(&caller_lock);
    return false;
}

static void never(struct tw_delayed *op, void *arg)
{
    (void)op;
    (void)arg;
}

struct locker {
    struct tw_purgatory *p;
    bool hold;
    int rounds;
};

static void *check_rounds(void *arg)
{
    struct locker *l = arg;

    for (int i = 0; i < l->rounds; i++) {
        if (l->hold)
            pthread_mutex_lock(&caller_lock);
        cr_assert_geq(tw_purgatory_check(l->p, "k", 1), 0);
        if (l->hold)
            pthread_mutex_unlock(&caller_lock);
    }
    return NULL;
}

Test(purgatory_service, checking_under_a_caller_lock_cannot_deadlock,
     .timeout = 60)
{
    struct tw_service *s = service_bounded(TW_HIER, 0, 0);
    struct tw_purgatory *p = purgatory_on(s);
    struct tw_key k = pkey("k");
    struct locker l[2] = {{p, true, 2000}, {p, false, 2000}};
    struct tw_delayed op[8];
    pthread_t th[2];

    caller_lock_init();
    for (int i = 0; i < 8; i++) {
        tw_delayed_init(&op[i], try_under_caller_lock, never, never, NULL);
        cr_assert_eq(tw_purgatory_watch(p, &op[i], &k, 1, 3600 * SEC), 0);
    }
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, check_rounds, &l[i]), 0);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_join(th[i], NULL), 0);
    cr_assert_geq(lock_tries, 8 * 2, "both threads tried");
    stats_are(p, 8, 0, 0, 0, 0, 8, 1);
    cr_assert_eq(tw_purgatory_stop(p, NULL, NULL), 8);
    both_free(p, s);
}

/*
 * No missed event, with a real second thread: while the first try is
 * running (its answer already computed as no), another thread makes the
 * operation ready and checks its key, which finds nothing watched yet. The
 * try after watching sees the event, so watch completes the operation.
 */
struct racer {
    struct tw_purgatory *p;
    atomic_bool *ready;
    int64_t checked;
};

static void *event_now(void *arg)
{
    struct racer *r = arg;

    atomic_store(r->ready, true);
    r->checked = tw_purgatory_check(r->p, "k", 1);
    return NULL;
}

static bool try_with_event_meanwhile(struct tw_delayed *op, void *arg)
{
    struct preq *r = arg;
    bool answer = atomic_load(&r->ready);
    struct racer rc = {r->p, &r->ready, -1};
    pthread_t th;

    (void)op;
    if (atomic_fetch_add(&r->tries, 1) == 0) {
        cr_assert_eq(pthread_create(&th, NULL, event_now, &rc), 0);
        cr_assert_eq(pthread_join(th, NULL), 0);
        cr_assert_eq(rc.checked, 0, "nothing was watched yet");
    }
    return answer;
}

Test(purgatory_service, event_during_the_first_try_is_not_missed)
{
    struct tw_service *s = service_bounded(TW_HIER, 0, 0);
    struct tw_purgatory *p = purgatory_on(s);
    struct tw_key k = pkey("k");
    struct preq r;

    preq_init(&r, p);
    r.op.try_complete = try_with_event_meanwhile;
    cr_assert_eq(tw_purgatory_watch(p, &r.op, &k, 1, 3600 * SEC), 1);
    cr_assert_eq(r.tries, 2);
    cr_assert_eq(r.completes, 1);
    stats_are(p, 1, 1, 0, 0, 0, 0, 0);
    both_free(p, s);
}

/* Over the service too, a completion leaves every key at once. */
Test(purgatory_service, completion_leaves_every_key)
{
    struct tw_service *s = service_bounded(TW_HIER, 0, 0);
    struct tw_purgatory *p = purgatory_on(s);
    struct tw_key k[3] = {pkey("a"), pkey("b"), pkey("c")};
    struct preq r;

    preq_init(&r, p);
    cr_assert_eq(tw_purgatory_watch(p, &r.op, k, 3, 3600 * SEC), 0);
    stats_are(p, 1, 0, 0, 0, 0, 1, 3);
    atomic_store(&r.ready, true);
    cr_assert_eq(tw_purgatory_check(p, "c", 1), 1);
    stats_are(p, 1, 1, 0, 0, 0, 0, 0);
    cr_assert_eq(tw_purgatory_check(p, "a", 1), 0);
    cr_assert_eq(r.completes, 1);
    both_free(p, s);
}
