/*
 * Polled delivery (lib/store/poll.c): an event loop gets its deliveries on
 * its own thread, woken by the store's descriptor in a real epoll loop.
 */
#include <stdatomic.h>
#include <sys/epoll.h>

#include "st.h"

/* What a loop's poll saw: on which thread, when, in which order. */
struct looprec {
    size_t n;
    struct tw_store_id id[16];
    uint64_t at[16];
    bool off_thread;
    pthread_t self;
};

static void on_polled(struct tw_store *s, struct tw_store_id id,
                      const void *payload, size_t len, void *arg)
{
    struct looprec *r = arg;

    cr_assert_eq(len, sizeof(uint64_t));
    cr_assert_eq(*(const uint64_t *)payload, id.deadline_ns, "its payload");
    if (!pthread_equal(pthread_self(), r->self))
        r->off_thread = true;
    if (r->n < 16) {
        r->id[r->n] = id;
        r->at[r->n] = st_real();
    }
    r->n++;
    cr_assert_eq(tw_store_ack(s, id, NULL, NULL), 0);
}

static struct tw_store *open_polled_cfg(const char *dir,
                                        struct tw_store_config *cfg)
{
    struct tw_store *s;
    int err = 1;

    cfg->polled = true;
    s = tw_store_open(dir, cfg, &err);
    cr_assert_not_null(s, "open: %d", err);
    return s;
}

static struct tw_store *open_polled(const char *dir)
{
    struct tw_store_config cfg;

    tw_store_config_init(&cfg);
    return open_polled_cfg(dir, &cfg);
}

/* Schedule one whose payload is its own deadline. */
static void schedule_at(struct tw_store *s, uint64_t deadline)
{
    cr_assert_eq(tw_store_schedule_at(s, deadline, &deadline, sizeof deadline,
                                      NULL, NULL, NULL),
                 0);
}

/* An epoll instance watching the store's fd for reading. */
static int watch_fd(struct tw_store *s)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};

    cr_assert_geq(ep, 0);
    cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, tw_store_fd(s), &ev), 0);
    return ep;
}

/* The loop: sleep in epoll_wait on the store's fd until want deliveries
 * ran (or 5 s passed); returns the epoll wake-ups. */
static int run_loop(struct tw_store *s, struct looprec *r, size_t want)
{
    int ep = watch_fd(s), wakeups = 0;
    struct epoll_event out;
    uint64_t end = st_mono() + 5000 * ST_MS;

    while (r->n < want && st_mono() < end) {
        if (epoll_wait(ep, &out, 1, 1000) == 1) {
            wakeups++;
            cr_assert_geq(tw_store_poll(s, on_polled, r, 64), 1,
                          "a wake-up with nothing to poll");
        }
    }
    /* Drained: the descriptor is quiet again. */
    cr_assert_eq(epoll_wait(ep, &out, 1, 0), 0);
    close(ep);
    return wakeups;
}

/* Three deadlines 40 to 120 ms ahead, scheduled out of order in one batch
 * (commit_ns of an hour: the sync closes it). The loop gets them in
 * deadline order whether the wheel fires them or, on a machine slow
 * enough that the sync outlasts them, the commit finds them all overdue;
 * no wall-clock bound is needed. Batches split by commit_ns could not be
 * ordered: a timer overdue at its commit goes out before a later batch
 * with an earlier deadline is even durable. */
Test(store_poll, deliveries_run_on_the_loops_thread_in_deadline_order)
{
    char dir[64];
    struct looprec r = {.self = pthread_self()};
    struct tw_store_config cfg;
    struct tw_store *s;
    uint64_t now;

    st_mkdir(dir, sizeof dir);
    tw_store_config_init(&cfg);
    cfg.commit_ns = 3600000 * ST_MS;
    s = open_polled_cfg(dir, &cfg);
    now = st_real(); /* after the open, which under TSan can take 170 ms */
    schedule_at(s, now + 120 * ST_MS);
    schedule_at(s, now + 40 * ST_MS);
    schedule_at(s, now + 80 * ST_MS);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_geq(run_loop(s, &r, 3), 1);
    cr_assert_eq(r.n, 3);
    cr_assert_not(r.off_thread, "a delivery ran on another thread");
    for (size_t i = 0; i < 3; i++) {
        cr_assert_geq(r.at[i], r.id[i].deadline_ns, "delivery %zu early", i);
        if (i)
            cr_assert_gt(r.id[i].deadline_ns, r.id[i - 1].deadline_ns);
    }
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(tw_store_count(s), 0, "every ack durable");
    cr_assert_eq(tw_store_close(s), 0);
    st_rmdir(dir);
}

/* A delivery queued for the loop and never polled is not lost: it comes
 * again after a reopen, and the fd of the new store says so. */
Test(store_poll, unpolled_deliveries_come_again_after_reopen)
{
    char dir[64];
    struct looprec r = {.self = pthread_self()};
    struct tw_store *s;
    struct epoll_event out;
    int ep;

    st_mkdir(dir, sizeof dir);
    s = open_polled(dir);
    schedule_at(s, st_real());
    schedule_at(s, st_real() + ST_MS);
    cr_assert_eq(tw_store_sync(s), 0);
    ep = watch_fd(s);
    cr_assert_eq(epoll_wait(ep, &out, 1, 5000), 1, "never readable");
    close(ep);
    cr_assert_eq(tw_store_close(s), 0);

    s = open_polled(dir);
    cr_assert_geq(run_loop(s, &r, 2), 1);
    cr_assert_eq(r.n, 2);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(tw_store_count(s), 0);
    cr_assert_eq(tw_store_close(s), 0);
    st_rmdir(dir);
}

/* max bounds one call; the rest wait, and the fd stays readable. */
Test(store_poll, max_bounds_a_call)
{
    char dir[64];
    struct looprec r = {.self = pthread_self()};
    struct tw_store *s;
    uint64_t end = st_mono() + 5000 * ST_MS;
    struct epoll_event out;
    int ep;

    st_mkdir(dir, sizeof dir);
    s = open_polled(dir);
    for (int i = 0; i < 5; i++)
        schedule_at(s, st_real());
    cr_assert_eq(tw_store_sync(s), 0);
    ep = watch_fd(s);
    /* Wait until all five are queued: the worker hands them out at once. */
    while (r.n == 0 && st_mono() < end) {
        cr_assert_eq(epoll_wait(ep, &out, 1, 1000) >= 0, 1);
        st_sleep_ms(50);
        cr_assert_eq(tw_store_poll(s, on_polled, &r, 2), 2);
    }
    cr_assert_eq(r.n, 2);
    cr_assert_eq(epoll_wait(ep, &out, 1, 0), 1, "three still wait");
    cr_assert_eq(tw_store_poll(s, on_polled, &r, 100), 3);
    cr_assert_eq(epoll_wait(ep, &out, 1, 0), 0);
    cr_assert_eq(tw_store_poll(s, on_polled, &r, 100), 0);
    close(ep);
    cr_assert_eq(tw_store_close(s), 0);
    st_rmdir(dir);
}

static void never(struct tw_store *s, struct tw_store_id id,
                  const void *payload, size_t len, void *arg)
{
    (void)s, (void)id, (void)payload, (void)len, (void)arg;
    cr_assert_fail("not a polled store");
}

Test(store_poll, bad_input)
{
    char dir[64];
    struct st_rec rec;
    struct tw_store_config cfg;
    struct tw_store *s;
    int err = 1;

    st_mkdir(dir, sizeof dir);
    st_rec_init(&rec, false);
    cr_assert_eq(tw_store_fd(NULL), -EINVAL);
    cr_assert_eq(tw_store_poll(NULL, never, NULL, 1), -EINVAL);
    /* Both a function and polled, or neither: refused. */
    tw_store_config_init(&cfg);
    cfg.polled = true;
    cfg.deliver = never;
    cr_assert_null(tw_store_open(dir, &cfg, &err));
    cr_assert_eq(err, -EINVAL);
    tw_store_config_init(&cfg);
    cr_assert_null(tw_store_open(dir, &cfg, &err));
    cr_assert_eq(err, -EINVAL);
    /* A store that calls a function has no fd and cannot be polled. */
    s = st_open(dir, &rec);
    cr_assert_eq(tw_store_fd(s), -EINVAL);
    cr_assert_eq(tw_store_poll(s, never, NULL, 1), -EINVAL);
    cr_assert_eq(tw_store_close(s), 0);
    s = open_polled(dir);
    cr_assert_eq(tw_store_poll(s, NULL, NULL, 1), -EINVAL);
    cr_assert_eq(tw_store_poll(s, never, NULL, 0), -EINVAL);
    cr_assert_eq(tw_store_poll(s, never, NULL, 1), 0, "nothing waits");
    cr_assert_eq(tw_store_close(s), 0);
    st_rmdir(dir);
}

/* Every done callback's code, counted (issue 28, 1). */
struct donecount {
    atomic_size_t n, ok;
};

static void count_done(struct tw_store_id id, int err, void *arg)
{
    struct donecount *d = arg;

    (void)id;
    if (err == 0)
        atomic_fetch_add(&d->ok, 1);
    atomic_fetch_add(&d->n, 1);
}

#define QUEUED 1000

/* QUEUED overdue timers, durable, handed to the loop's queue: the store's
 * fd readable in a real epoll loop, and left alone long enough that the
 * worker has queued all of them (it delivers 10^6 a second). */
static struct tw_store *queue_overdue(const char *dir, struct tw_store_id *ids,
                                      int *ep)
{
    struct tw_store *s = open_polled(dir);
    struct epoll_event out;
    uint64_t now = st_real();

    for (size_t i = 0; i < QUEUED; i++) {
        uint64_t at = now - QUEUED + i;

        cr_assert_eq(
            tw_store_schedule_at(s, at, &at, sizeof at, NULL, NULL, &ids[i]),
            0);
    }
    cr_assert_eq(tw_store_sync(s), 0);
    *ep = watch_fd(s);
    cr_assert_eq(epoll_wait(*ep, &out, 1, 5000), 1, "never readable");
    st_sleep_ms(300);
    return s;
}

/* After every removal is durable, the loop wakes to nothing: the epoll
 * loop sees the fd quiet, and a poll hands out none of the copies. */
static void loop_gets_nothing(struct tw_store *s, int ep)
{
    struct looprec r = {.self = pthread_self()};
    struct epoll_event out;
    int64_t got;

    if (epoll_wait(ep, &out, 1, 100) == 1) {
        got = tw_store_poll(s, on_polled, &r, QUEUED);
        cr_assert_eq(got, 0, "%lld deliveries after their removal was durable",
                     (long long)got);
    }
    cr_assert_eq(tw_store_poll(s, on_polled, &r, QUEUED), 0);
    cr_assert_eq(r.n, 0);
}

Test(store_poll, a_durable_cancel_withdraws_queued_deliveries)
{
    static struct tw_store_id ids[QUEUED];
    struct donecount d = {0};
    char dir[64];
    struct tw_store *s;
    int ep;

    st_mkdir(dir, sizeof dir);
    s = queue_overdue(dir, ids, &ep);
    for (size_t i = 0; i < QUEUED; i++)
        cr_assert_eq(tw_store_cancel(s, ids[i], count_done, &d), 0);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(atomic_load(&d.n), QUEUED);
    cr_assert_eq(atomic_load(&d.ok), QUEUED, "every cancel durable");
    cr_assert_eq(tw_store_count(s), 0);
    loop_gets_nothing(s, ep);
    close(ep);
    cr_assert_eq(tw_store_close(s), 0);
    st_rmdir(dir);
}

/* An ack may come before the loop takes the delivery (the id is known
 * from the schedule): the same withdrawal. Half are taken first, and
 * those come out as usual. */
Test(store_poll, a_durable_ack_withdraws_queued_deliveries)
{
    static struct tw_store_id ids[QUEUED];
    struct looprec r = {.self = pthread_self()};
    struct donecount d = {0};
    char dir[64];
    struct tw_store *s;
    int ep;

    st_mkdir(dir, sizeof dir);
    s = queue_overdue(dir, ids, &ep);
    cr_assert_eq(tw_store_poll(s, on_polled, &r, 10), 10, "taken first");
    for (size_t i = 10; i < QUEUED; i++)
        cr_assert_eq(tw_store_ack(s, ids[i], count_done, &d), 0);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(atomic_load(&d.ok), QUEUED - 10, "every ack durable");
    cr_assert_eq(tw_store_count(s), 0, "the ten taken were acked by the loop");
    loop_gets_nothing(s, ep);
    close(ep);
    cr_assert_eq(tw_store_close(s), 0);
    st_rmdir(dir);
}
