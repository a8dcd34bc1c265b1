/*
 * Bounded stress test of the service: producer threads schedule one-shot
 * and periodic timers and cancel many of them (at once, or later so that the
 * cancel races the firing) while timers fire, then the main thread stops
 * the service with the producers still calling. The accounting must be
 * exact for every timer accepted:
 *   one-shot:  ran + cancelled + handed back == 1
 *   periodic:  cancelled + handed back == 1
 * and the service's own counters must agree. Fixed seeds, printed on
 * failure; each case runs for STRESS_NS plus the stop.
 *
 * Whether a producer's timer is still pending when stop claims them is up
 * to timing: the last advance before stop may have fired every one-shot
 * (due within 4 ms) and the producers, cut off, cancel their periodic ones
 * while stop joins the threads (seen under TSan on a loaded machine). So
 * the main thread adds one timer an hour out just before stop, which stop
 * must hand back: the hand-back path is always exercised.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "timewheel.h"

#define MS UINT64_C(1000000)
#define NPROD 3
#define PER_PROD 400000 /* more than fit in STRESS_NS: stop cuts them off */
#define RING 16         /* cancels lag this many schedules behind */
#define STRESS_NS (250 * MS)
/* Stop once every producer has scheduled this many, or after STRESS_NS:
 * either way well before any can finish, so stop always races them. */
#define STOP_AFTER (PER_PROD / 8)
#define SEED UINT64_C(0x5eed5eed)

struct rec {
    atomic_int ran;
    atomic_int back;
    int cancelled; /* tw_handle_cancel() said 1 */
    bool periodic;
};

struct producer {
    struct tw_service *s;
    struct rec *recs;
    uint64_t seed;
    atomic_int accepted; /* recs[0 .. accepted) were scheduled */
    int refused;         /* -EAGAIN */
    int shutdown_rc;     /* the error that ended the loop */
};

static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void fired(struct tw_handle *h, void *arg)
{
    (void)h;
    atomic_fetch_add(&((struct rec *)arg)->ran, 1);
}

static void handed_back(const struct tw_handback *t, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&((struct rec *)t->arg)->back, 1);
}

static void cancel_one(struct producer *p, struct tw_handle **slot, int *who)
{
    if (*slot) {
        /* Checked later: Criterion's asserts belong to the main thread. */
        p->recs[*who].cancelled = tw_handle_cancel(*slot);
        tw_handle_release(*slot);
        *slot = NULL;
    }
}

/* Schedule timer i; returns the schedule's result. What happens to it is
 * chosen at random: fire-and-forget, cancel now, cancel RING schedules
 * later, or keep and release (let it run). One in 64 is periodic. */
static int schedule_one(struct producer *p, int i, struct tw_handle **ring,
                        int *ring_who)
{
    struct rec *r = &p->recs[i];
    uint64_t x = next_rand(&p->seed);
    uint64_t delay = x % (4 * MS);
    struct tw_handle *h = NULL;
    int what = (int)((x >> 32) % 4), rc;

    r->periodic = (x >> 40) % 64 == 0;
    if (r->periodic)
        rc = tw_service_schedule_periodic(p->s, delay, MS, TW_FIXED_RATE, fired,
                                          r, &h);
    else
        rc = tw_service_schedule(p->s, delay, fired, r,
                                 what == 0 && !r->periodic ? NULL : &h);
    if (rc)
        return rc;
    if (what == 1) {
        r->cancelled = tw_handle_cancel(h);
        tw_handle_release(h);
    } else if (what == 2 || r->periodic) {
        int k = i % RING;

        cancel_one(p, &ring[k], &ring_who[k]);
        ring[k] = h;
        ring_who[k] = i;
    } else if (h) {
        tw_handle_release(h);
    }
    return 0;
}

static void *produce(void *arg)
{
    struct producer *p = arg;
    struct tw_handle *ring[RING] = {0};
    int ring_who[RING] = {0};

    while (atomic_load(&p->accepted) < PER_PROD) {
        int rc = schedule_one(p, atomic_load(&p->accepted), ring, ring_who);

        if (rc == -EAGAIN) {
            p->refused++;
            continue;
        }
        if (rc) {
            p->shutdown_rc = rc;
            break;
        }
        /* Past STOP_AFTER, slow down (35 s for the rest), so that stop,
         * which waits for a first firing, always cuts producers off even
         * when a loaded machine starves the worker for a while. */
        if (atomic_fetch_add(&p->accepted, 1) >= STOP_AFTER) {
            struct timespec pause = {0, 100000};

            nanosleep(&pause, NULL);
        }
    }
    for (int k = 0; k < RING; k++)
        cancel_one(p, &ring[k], &ring_who[k]);
    return NULL;
}

static void check_producer(struct producer *p, int id, uint64_t seed)
{
    for (int i = 0; i < atomic_load(&p->accepted); i++) {
        const struct rec *r = &p->recs[i];
        int ran = atomic_load(&r->ran), back = atomic_load(&r->back);

        if (r->periodic)
            cr_assert_eq(r->cancelled + back, 1,
                         "seed %llx producer %d periodic %d: cancelled %d, "
                         "handed back %d",
                         (unsigned long long)seed, id, i, r->cancelled, back);
        else
            cr_assert_eq(ran + r->cancelled + back, 1,
                         "seed %llx producer %d timer %d: ran %d, "
                         "cancelled %d, handed back %d",
                         (unsigned long long)seed, id, i, ran, r->cancelled,
                         back);
    }
}

/* An hour-out timer from the main thread, retried while the producers
 * keep the pending limit full (-EAGAIN); a slot frees within a few ms. */
static void schedule_anchor(struct tw_service *s, struct rec *anchor)
{
    struct timespec pause = {0, 100000};
    int rc;

    for (int tries = 0;; tries++) {
        rc = tw_service_schedule(s, 3600 * 1000 * MS, fired, anchor, NULL);
        if (rc != -EAGAIN)
            break;
        cr_assert_lt(tries, 100000, "the pending limit never freed a slot");
        nanosleep(&pause, NULL);
    }
    cr_assert_eq(rc, 0);
}

static void stress(enum tw_mode mode, unsigned threads, size_t max_pending)
{
    struct tw_service_config cfg;
    struct tw_service *s;
    struct producer p[NPROD];
    pthread_t tid[NPROD];
    struct tw_service_stats st;
    struct timespec ms = {0, (long)MS};
    uint64_t accepted = 0, ran = 0;
    int cut_off = 0;
    struct rec anchor = {0};

    tw_service_config_init(&cfg, mode);
    cfg.executor_threads = threads;
    cfg.max_pending = max_pending;
    cfg.tick_ns = MS / 2;
    s = tw_service_create(&cfg, NULL);
    cr_assert_not_null(s);
    for (int i = 0; i < NPROD; i++) {
        p[i] = (struct producer){.s = s, .seed = SEED + (uint64_t)i * 7919};
        p[i].recs = calloc(PER_PROD, sizeof(struct rec));
        cr_assert_not_null(p[i].recs);
        cr_assert_eq(pthread_create(&tid[i], NULL, produce, &p[i]), 0);
    }
    for (uint64_t waited = 0; waited < STRESS_NS; waited += MS) {
        int behind = 0;

        for (int i = 0; i < NPROD; i++)
            behind += atomic_load(&p[i].accepted) < STOP_AFTER;
        if (!behind)
            break;
        nanosleep(&ms, NULL);
    }
    /* On a slow build (coverage, sanitizers, a loaded CI machine) the worker
     * may not have fired anything yet: wait for a first firing, so that the
     * accounting below covers all three outcomes, but never forever. */
    for (uint64_t waited = 0; waited < 40 * STRESS_NS; waited += MS) {
        cr_assert_eq(tw_service_stats(s, &st), 0);
        if (st.completed > 0)
            break;
        nanosleep(&ms, NULL);
    }
    schedule_anchor(s, &anchor);
    cr_assert_eq(tw_service_stop(s, handed_back, NULL), 0);
    cr_assert_eq(atomic_load(&anchor.back), 1, "the hour-out timer");
    cr_assert_eq(atomic_load(&anchor.ran), 0);
    for (int i = 0; i < NPROD; i++) {
        pthread_join(tid[i], NULL);
        cr_assert(atomic_load(&p[i].accepted) == PER_PROD ||
                      p[i].shutdown_rc == -ESHUTDOWN,
                  "producer %d ended on %d", i, p[i].shutdown_rc);
        cut_off += p[i].shutdown_rc == -ESHUTDOWN;
        check_producer(&p[i], i, SEED);
        accepted += (uint64_t)atomic_load(&p[i].accepted);
        for (int k = 0; k < atomic_load(&p[i].accepted); k++)
            ran += (uint64_t)atomic_load(&p[i].recs[k].ran);
        free(p[i].recs);
    }
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_log_info(
        "scheduled %llu, runs %llu, completed %llu, cancelled %llu, "
        "returned %llu, rejected %llu",
        (unsigned long long)st.scheduled, (unsigned long long)st.runs,
        (unsigned long long)st.completed, (unsigned long long)st.cancelled,
        (unsigned long long)st.returned, (unsigned long long)st.rejected);
    cr_assert_eq(st.scheduled, accepted + 1); /* and the anchor */
    cr_assert_eq(st.runs, ran);
    cr_assert_eq(st.completed + st.cancelled + st.returned, st.scheduled);
    cr_assert_eq(st.pending, 0);
    cr_assert_gt(st.completed, 0, "nothing fired");
    cr_assert_gt(st.cancelled, 0, "nothing was cancelled");
    cr_assert_gt(st.returned, 0, "stop found nothing to hand back");
    cr_assert_gt(cut_off, 0, "stop raced no producer");
    if (max_pending)
        cr_assert_gt(st.rejected, 0, "the maximum was never reached");
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_stress, hier_worker_callbacks, .timeout = 60)
{
    stress(TW_HIER, 0, 0);
}

Test(service_stress, hier_executor_bounded, .timeout = 60)
{
    stress(TW_HIER, 2, 300);
}

Test(service_stress, hashed_executor, .timeout = 60)
{
    stress(TW_HASHED, 1, 0);
}
