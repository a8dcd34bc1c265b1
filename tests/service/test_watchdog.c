/*
 * The Redisson-style lock watchdog, and a stress of the whole
 * handle lifecycle.
 *
 * Watchdog: 64 threads take a lock 10^5 times in all (10^4 under the
 * sanitizers); each take schedules a
 * renewal that runs at once and then every millisecond (on a pool of two
 * threads, so renewals really run beside the holder), and each unlock is a
 * tw_handle_cancel_wait(). The renewal records that it is inside and checks
 * that the lock is still held: after cancel-and-wait returns, no renewal
 * may be running or start, so the lock can be dropped and its state
 * reused at once. Every renewal's release hook must be called exactly once.
 *
 * Lifecycle stress: threads schedule, re-arm, cancel and cancel-and-wait
 * the same handles at once while they fire and re-arm themselves, and the
 * main thread stops the service in the middle. Accounting must be exact,
 * and every release hook called once.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "timewheel.h"
#include "util.h"

#define HOLDERS 64
/* Lock cycles in all: 10^5, a tenth under the sanitizers
 * (TSan makes each cycle about 12 times slower here). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define CYCLES 10000
#else
#define CYCLES 100000
#endif

struct lock {
    atomic_int held;    /* 1 while the holder holds it */
    atomic_int inside;  /* renewals running now */
    atomic_int renewed; /* renewals run, this cycle */
    atomic_int released;
    int violations; /* a renewal that ran unheld or outlived the unlock */
};

static atomic_int total_violations;

static void renew(struct tw_handle *h, void *arg)
{
    struct lock *l = arg;

    (void)h;
    atomic_fetch_add(&l->inside, 1);
    if (!atomic_load(&l->held))
        atomic_fetch_add(&total_violations, 1);
    for (int i = 0; i < 2000; i++) /* a renewal takes a moment */
        atomic_load(&l->held);
    atomic_fetch_add(&l->renewed, 1);
    atomic_fetch_sub(&l->inside, 1);
}

static void renew_released(void *arg)
{
    atomic_fetch_add(&((struct lock *)arg)->released, 1);
}

struct holder {
    struct tw_service *s;
    struct lock lock;
    int cycles;
    int errors;
    int renewals; /* cycles in which a renewal ran */
    int raced;    /* cycles whose unlock found a renewal running */
};

static void *holder_main(void *arg)
{
    struct holder *me = arg;
    struct lock *l = &me->lock;
    struct tw_timer_spec spec = {
        .period = MS,
        .kind = TW_FIXED_RATE,
        .cb = renew,
        .arg = l,
        .release = renew_released,
    };

    for (int i = 0; i < me->cycles; i++) {
        struct tw_handle *h;

        atomic_store(&l->held, 1);
        atomic_store(&l->renewed, 0);
        spec.deadline = tw_service_now(me->s);
        if (tw_service_submit(me->s, &spec, &h)) {
            me->errors++;
            break;
        }
        /* One cycle in eight holds the lock until a renewal has run (5 ms
         * at most), so unlocks meet renewals that are running. */
        for (int spin = 0;
             (i & 7) == 0 && spin < 5000 && !atomic_load(&l->renewed) &&
             !atomic_load(&l->inside);
             spin++)
            sleep_ns(1000);
        if (atomic_load(&l->inside))
            me->raced++;
        if (tw_handle_cancel_wait(h) < 0)
            me->errors++;
        if (atomic_load(&l->inside))
            atomic_fetch_add(&total_violations, 1);
        if (atomic_load(&l->renewed))
            me->renewals++;
        atomic_store(&l->held, 0); /* unlocked: no renewal may run now */
        tw_handle_release(h);
    }
    return NULL;
}

static int cycles_here(void)
{
    const char *e = getenv("TW_WATCHDOG_CYCLES");

    return e ? atoi(e) : CYCLES;
}

Test(service_watchdog, no_renewal_after_cancel_wait, .timeout = 120)
{
    struct tw_service_config cfg;
    static struct holder hs[HOLDERS];
    pthread_t t[HOLDERS];
    struct tw_service *s;
    int cycles = cycles_here();
    int renewals = 0, raced = 0, err;

    tw_service_config_init(&cfg, TW_HIER);
    cfg.executor_threads = 2;
    s = tw_service_create(&cfg, &err);
    cr_assert_not_null(s);
    atomic_store(&total_violations, 0);
    for (int i = 0; i < HOLDERS; i++) {
        hs[i] = (struct holder){.s = s};
        hs[i].cycles = cycles / HOLDERS + (i < cycles % HOLDERS);
        cr_assert_eq(pthread_create(&t[i], NULL, holder_main, &hs[i]), 0);
    }
    for (int i = 0; i < HOLDERS; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(hs[i].errors, 0, "holder %d", i);
        renewals += hs[i].renewals;
        raced += hs[i].raced;
    }
    cr_assert_eq(atomic_load(&total_violations), 0,
                 "renewals ran after cancel-and-wait returned");
    cr_assert_eq(tw_service_destroy(s), 0);
    for (int i = 0; i < HOLDERS; i++)
        cr_assert_eq(atomic_load(&hs[i].lock.released), hs[i].cycles);
    cr_log_info("watchdog: %d cycles, %d with a renewal, %d unlocks met one "
                "running, 0 violations",
                cycles, renewals, raced);
    cr_assert_gt(renewals, cycles / 16, "renewals must really run");
}

/* ---- lifecycle stress -------------------------------------------------------
 */

#define SLOTS 256
#define WORKERS 3
#define STRESS_NS (300 * MS)

struct slot {
    atomic_int released;
    atomic_int ran;
    atomic_int back;
    atomic_int cancels; /* cancel or cancel-and-wait said 1 */
    atomic_int self;    /* re-arm itself this many more times */
    bool periodic;
};

static struct slot slots[SLOTS * 64];
static _Atomic(struct tw_handle *) live[SLOTS];
static atomic_int next_slot;
static atomic_int stop_now;

static void slot_cb(struct tw_handle *h, void *arg)
{
    struct slot *sl = arg;

    atomic_fetch_add(&sl->ran, 1);
    if (atomic_fetch_sub(&sl->self, 1) > 0)
        tw_handle_rearm(h, (uint64_t)(atomic_load(&sl->ran) % 3) * MS);
}

static void slot_released(void *arg)
{
    atomic_fetch_add(&((struct slot *)arg)->released, 1);
}

static void slot_back(const struct tw_handback *t, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&((struct slot *)t->arg)->back, 1);
}

static uint64_t xs(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Put a new timer in slot i, taking over (and releasing) the old one. */
static void refill(struct tw_service *s, int i, uint64_t *seed)
{
    int n = atomic_fetch_add(&next_slot, 1);
    struct slot *sl;
    struct tw_timer_spec spec = {.cb = slot_cb, .release = slot_released};
    struct tw_handle *h, *old;

    if (n >= SLOTS * 64)
        return;
    sl = &slots[n];
    sl->periodic = xs(seed) % 8 == 0;
    atomic_store(&sl->self, (int)(xs(seed) % 3));
    spec.arg = sl;
    spec.deadline = tw_service_now(s) + xs(seed) % (4 * MS);
    spec.period = sl->periodic ? MS : 0;
    if (tw_service_submit(s, &spec, &h)) {
        atomic_store(&sl->released, 1); /* refused: never the service's */
        atomic_store(&sl->back, -1000);
        return;
    }
    old = atomic_exchange(&live[i], h);
    if (old)
        tw_handle_release(old);
}

static void *churn(void *arg)
{
    struct tw_service *s = arg;
    uint64_t seed = (uint64_t)(uintptr_t)&seed | 1;

    while (!atomic_load(&stop_now)) {
        int i = (int)(xs(&seed) % SLOTS);
        struct tw_handle *h = atomic_exchange(&live[i], NULL);
        int op = (int)(xs(&seed) % 8);

        if (!h) {
            refill(s, i, &seed);
            continue;
        }
        if (op < 3) {
            tw_handle_rearm(h, xs(&seed) % (3 * MS));
        } else if (op < 5) {
            tw_handle_cancel(h);
        } else if (op < 6) {
            tw_handle_cancel_wait(h);
        }
        /* put it back (or release it if another thread refilled) */
        {
            struct tw_handle *exp = NULL;

            if (!atomic_compare_exchange_strong(&live[i], &exp, h))
                tw_handle_release(h);
        }
        if (op == 7)
            refill(s, i, &seed);
    }
    return NULL;
}

static void lifecycle_stress(enum tw_mode mode, unsigned threads)
{
    struct tw_service_config cfg;
    struct tw_service_stats st;
    struct tw_service *s;
    pthread_t t[WORKERS];
    int err, n;
    uint64_t end;

    memset(slots, 0, sizeof(slots));
    for (int i = 0; i < SLOTS; i++)
        atomic_store(&live[i], NULL);
    atomic_store(&next_slot, 0);
    atomic_store(&stop_now, 0);
    tw_service_config_init(&cfg, mode);
    cfg.executor_threads = threads;
    s = tw_service_create(&cfg, &err);
    cr_assert_not_null(s);
    for (int i = 0; i < WORKERS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, churn, s), 0);
    end = now_ns() + STRESS_NS;
    while (now_ns() < end && atomic_load(&next_slot) < SLOTS * 64)
        sleep_ns(5 * MS);
    /* stop while they still churn: stop races re-arm and cancel */
    cr_assert_eq(tw_service_stop(s, slot_back, NULL), 0);
    atomic_store(&stop_now, 1);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < SLOTS; i++) {
        struct tw_handle *h = atomic_exchange(&live[i], NULL);

        if (h) {
            cr_assert_neq(tw_handle_query(h), TW_HANDLE_PENDING);
            cr_assert_neq(tw_handle_query(h), TW_HANDLE_RUNNING);
            tw_handle_release(h);
        }
    }
    cr_assert_eq(tw_service_stats(s, &st), 0);
    n = atomic_load(&next_slot);
    if (n > SLOTS * 64)
        n = SLOTS * 64;
    {
        uint64_t accepted = 0;

        for (int i = 0; i < n; i++) {
            if (atomic_load(&slots[i].back) < 0)
                continue;
            accepted++;
            cr_assert_eq(atomic_load(&slots[i].released), 1,
                         "slot %d released %d times", i,
                         atomic_load(&slots[i].released));
            cr_assert_leq(atomic_load(&slots[i].back), 1);
        }
        cr_assert_eq(st.scheduled, accepted);
    }
    cr_assert_eq(st.pending, 0);
    cr_assert_eq(st.scheduled, st.completed + st.cancelled + st.returned);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_watchdog, lifecycle_stress_hier_worker, .timeout = 60)
{
    lifecycle_stress(TW_HIER, 0);
}
Test(service_watchdog, lifecycle_stress_hier_executor, .timeout = 60)
{
    lifecycle_stress(TW_HIER, 2);
}
Test(service_watchdog, lifecycle_stress_hashed_executor, .timeout = 60)
{
    lifecycle_stress(TW_HASHED, 1);
}
