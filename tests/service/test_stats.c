/*
 * tw_service_stats() under a flood: a snapshot's pending is a number that
 * really was pending at some instant (issue 22, defect 5). Before the fix,
 * with max_pending 1000 and two flooding producers, samples read pending
 * up to 26,154 while the handles alive never exceeded 1,001: stats read the
 * outcome counters first and the accepted count last, and every timer
 * accepted and let go of in between counted as pending.
 *
 * The handles alive are counted through tw_set_allocator() (blocks of a
 * handle's sizes, 48 and 80 bytes), as the issue did: a pending timer's
 * handle is allocated before its acceptance is counted and freed after its
 * outcome is, so no real pending ever exceeds the most handles alive.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "timewheel.h"
#include "util.h"

#define MAX_PENDING 1000
#define FLOOD_NS (1500 * MS)

static atomic_long live;     /* handle-sized blocks alive */
static atomic_long live_max; /* the most at once */

static bool handle_sized(size_t size)
{
    return size == 48 || size == 80;
}

static void *live_alloc(void *ctx, size_t size)
{
    void *p = malloc(size);

    (void)ctx;
    if (p && handle_sized(size)) {
        long n = atomic_fetch_add(&live, 1) + 1;
        long m = atomic_load(&live_max);

        while (n > m && !atomic_compare_exchange_weak(&live_max, &m, n))
            ;
    }
    return p;
}

static void live_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    if (p && handle_sized(size))
        atomic_fetch_sub(&live, 1);
    free(p);
}

static void nop_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
}

struct flood {
    struct tw_service *s;
    atomic_bool quit;
    atomic_ulong taken;
    atomic_ulong odd; /* answers other than 0 and -EAGAIN */
};

/* Fire-and-forget timers due within 2 ms, retrying at once on -EAGAIN. */
static void *producer(void *arg)
{
    struct flood *f = arg;
    uint64_t i = 0;

    while (!atomic_load_explicit(&f->quit, memory_order_relaxed)) {
        int rc =
            tw_service_schedule(f->s, (i++ % 2000) * 1000, nop_cb, NULL, NULL);

        if (rc && rc != -EAGAIN)
            atomic_fetch_add_explicit(&f->odd, 1, memory_order_relaxed);
        else if (!rc)
            atomic_fetch_add_explicit(&f->taken, 1, memory_order_relaxed);
    }
    return NULL;
}

Test(service_stats, pending_is_a_number_that_was_pending, .timeout = 60)
{
    struct tw_allocator a = {live_alloc, live_free, NULL};
    struct tw_service_config cfg;
    struct flood f = {0};
    struct tw_service_stats st;
    pthread_t t[2];
    uint64_t samples = 0, top = 0, end;
    long seen = 0;
    bool bad = false;

    cr_assert_eq(tw_set_allocator(&a), 0);
    tw_service_config_init(&cfg, TW_HIER);
    cfg.max_pending = MAX_PENDING;
    f.s = tw_service_create(&cfg, NULL);
    cr_assert_not_null(f.s);
    cr_assert_eq(atomic_load(&live), 0, "blocks of a handle's size at create");
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, producer, &f), 0);
    end = now_ns() + FLOOD_NS;
    while (!bad && now_ns() < end) {
        cr_assert_eq(tw_service_stats(f.s, &st), 0);
        samples++;
        if (st.pending > top)
            top = st.pending;
        seen = atomic_load(&live_max);
        bad = st.pending > MAX_PENDING || (long)st.pending > seen ||
              st.scheduled !=
                  st.completed + st.cancelled + st.returned + st.pending;
    }
    atomic_store(&f.quit, true);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert(!bad,
              "sample %llu: pending %llu (max_pending %d, at most %ld "
              "handles ever alive), scheduled %llu, let go of %llu",
              (unsigned long long)samples, (unsigned long long)st.pending,
              MAX_PENDING, seen, (unsigned long long)st.scheduled,
              (unsigned long long)(st.completed + st.cancelled + st.returned));
    cr_assert_eq(atomic_load(&f.odd), 0,
                 "schedule answered other than 0 "
                 "or -EAGAIN");
    cr_assert_gt(atomic_load(&f.taken), MAX_PENDING, "the flood never filled");
    cr_assert_gt(top, 0, "no sample saw a pending timer");
    cr_log_info("%llu samples, pending at most %llu, handles alive at most "
                "%ld, %lu timers taken",
                (unsigned long long)samples, (unsigned long long)top,
                atomic_load(&live_max), atomic_load(&f.taken));
    tw_service_destroy(f.s);
    cr_assert_eq(atomic_load(&live), 0, "handles left after destroy");
}

/* With nothing moving, a snapshot is exact: pending counts every timer
 * waiting, scheduled every timer taken. */
Test(service_stats, quiet_snapshot_is_exact)
{
    struct tw_service_config cfg;
    struct tw_service *s;
    struct tw_service_stats st;
    struct tw_handle *h[10];

    tw_service_config_init(&cfg, TW_HIER);
    s = tw_service_create(&cfg, NULL);
    cr_assert_not_null(s);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(tw_service_schedule(s, 3600 * SEC, nop_cb, NULL, &h[i]),
                     0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(tw_handle_cancel_release(h[i]), 1);
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(st.scheduled, 10);
    cr_assert_eq(st.cancelled, 4);
    cr_assert_eq(st.pending, 6);
    for (int i = 4; i < 10; i++)
        tw_handle_release(h[i]);
    tw_service_destroy(s);
}
