/*
 * The timer service's front door: create, schedule, stop, destroy, stats.
 * The design is described in service.h; this file holds the two protocols
 * that involve the caller's threads.
 *
 * The gate (gate.c). Every schedule passes through it: a producer racing
 * stop either gets -ESHUTDOWN or has its timer on the queue before stop
 * drains it: none is lost and none slips in afterwards.
 *
 * Stop. With the gate closed, stop wakes and joins the worker, then joins
 * the executor threads (each finishes the callback it is running). It then
 * owns everything the service holds and sorts it out on its own thread:
 * reap the cancel queue, admit the new queue into the wheel, and take each
 * timer still in the wheel or in the executor queue.
 * Each is claimed for hand-back by compare-and-swap against a racing
 * cancel; the winners are handed to the caller's function, the losers
 * counted as cancelled. Hence, once stop returns,
 *     scheduled == completed + cancelled + returned
 * and every periodic timer is either cancelled or returned.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "clock.h"
#include "reserved.h"
#include "sat.h"
#include "service.h"

/* A sanity bound on the pool, far above any useful size; it catches a
 * negative number passed through an unsigned field. */
#define MAX_EXECUTOR_THREADS 1024u

TW_PUBLIC void tw_service_config_init(struct tw_service_config *cfg,
                                      enum tw_mode mode)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->mode = mode;
    cfg->tick_ns = TW_DEFAULT_TICK_NS;
    cfg->catchup = TW_CATCHUP_SKIP;
    cfg->max_pending = TW_SERVICE_DEFAULT_MAX_PENDING;
    cfg->max_lag_ns = TW_SERVICE_DEFAULT_MAX_LAG_NS;
}

/* Netty's floor: a hashed worker wakes every tick, and below a millisecond
 * it cannot keep up with the clock (a 1 ns tick fell 31 s behind). */
static uint64_t tick_of(const struct tw_service_config *c)
{
    if (c->mode == TW_HASHED && c->tick_ns &&
        c->tick_ns < TW_SERVICE_MIN_HASHED_TICK_NS)
        return TW_SERVICE_MIN_HASHED_TICK_NS;
    return c->tick_ns;
}

static int make_wheel(struct tw_service *s, const struct tw_service_config *c)
{
    struct tw_config wc;
    int rc;

    tw_config_init(&wc, c->mode);
    wc.tick_ns = tick_of(c);
    wc.slots = c->slots;
    wc.levels = c->levels;
    wc.start_ns = tw__mono_ns();
    s->wheel = tw_create(&wc, &rc);
    if (!rc) /* due timers go to the worker; their cb field is ours */
        rc = tw_set_expiry(s->wheel, tw__worker_expire, s);
    s->mode = c->mode;
    s->tick_ns = wc.tick_ns;
    s->start_ns = wc.start_ns;
    s->drained_at = wc.start_ns;
    s->catchup = c->catchup;
    s->max_pending = c->max_pending;
    s->max_lag = c->max_lag_ns;
    atomic_init(&s->avail,
                (int_fast64_t)(c->max_pending > INT64_MAX ? INT64_MAX
                                                          : c->max_pending));
    return rc;
}

/* The worker sleeps against CLOCK_MONOTONIC, the clock of every deadline. */
static void init_sync(struct tw_service *s)
{
    pthread_condattr_t attr;

    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->stop_lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &attr);
    pthread_cond_init(&s->reap_done, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&s->exec.lock, NULL);
    pthread_cond_init(&s->exec.ready, NULL);
}

static void free_service(struct tw_service *s)
{
    tw__registry_remove(s);
    tw__rings_free(s);
    tw__exec_destroy(&s->exec);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->reap_done);
    pthread_mutex_destroy(&s->stop_lock);
    pthread_mutex_destroy(&s->lock);
    tw_destroy(s->wheel);
    tw_free(s->base, sizeof(*s) + TW__CACHE_LINE);
}

/* A zeroed service aligned to a cache line, for its padded members. */
static struct tw_service *new_service(void)
{
    char *raw = tw__svc_zalloc(sizeof(struct tw_service) + TW__CACHE_LINE);
    struct tw_service *s;

    if (!raw)
        return NULL;
    s = (struct tw_service *)(raw + TW__CACHE_LINE -
                              (uintptr_t)raw % TW__CACHE_LINE);
    s->base = raw;
    return s;
}

static int start(struct tw_service *s, const struct tw_service_config *cfg)
{
    int rc;

    tw__mpsc_init(&s->newq);
    tw__mpsc_init(&s->cancelq);
    /* The reaping bound before the worker's first turn (backlog.c), which
     * a thread slow to start may make long after the first cancels. */
    atomic_store_explicit(&s->reap_bound, TW__REAP_FLOOR, memory_order_relaxed);
    atomic_store_explicit(&s->reap_queue, TW__REAP_FLOOR, memory_order_relaxed);
    init_sync(s);
    rc = make_wheel(s, cfg);
    if (!rc)
        rc = tw__registry_add(s);
    if (!rc)
        rc = tw__exec_start(s, cfg->executor_threads);
    if (!rc) {
        rc = -pthread_create(&s->worker, NULL, tw__worker_main, s);
        s->worker_alive = rc == 0;
    }
    if (rc)
        tw__exec_stop(&s->exec);
    return rc;
}

TW_PUBLIC struct tw_service *
tw_service_create(const struct tw_service_config *cfg, int *err)
{
    struct tw_service *s = NULL;
    int rc = -EINVAL;

    if (cfg && tw__reserved_zero(cfg->reserved) &&
        cfg->executor_threads <= MAX_EXECUTOR_THREADS &&
        (cfg->catchup == TW_CATCHUP_SKIP || cfg->catchup == TW_CATCHUP_ALL)) {
        tw__gate_init();
        tw__fork_watch();
        s = new_service();
        rc = s ? start(s, cfg) : -ENOMEM;
        if (rc && s) {
            free_service(s);
            s = NULL;
        }
    }
    if (err)
        *err = rc;
    return s;
}

/* Build the handle and push it to the worker. Once pushed, it may run and
 * be freed at once (when the caller keeps no reference): don't touch it. */
static int submit(struct tw_service *s, struct tw__stripe *st,
                  const struct tw_timer_spec *spec, struct tw_handle **out)
{
    struct tw_handle *h = tw__handle_new(s, spec);

    if (!h) {
        tw__gate_unreserve(s, st);
        return -ENOMEM;
    }
    if (out) {
        tw__handle_ref_unpublished(h);
        *out = h;
    }
    tw__count(s, st, &st->accepted); /* before the push: see gate.c */
    tw__worker_post(s, h);
    return 0;
}

TW_PUBLIC int tw_service_submit(struct tw_service *s,
                                const struct tw_timer_spec *spec,
                                struct tw_handle **out)
{
    struct tw_timer_spec periodic;
    struct tw__stripe *st;
    int rc;

    if (out)
        *out = NULL;
    if (!s || !spec || !spec->cb ||
        (spec->period && spec->kind != TW_FIXED_RATE &&
         spec->kind != TW_FIXED_DELAY))
        return -EINVAL;
    if (spec->period) {
        periodic = *spec;
        periodic.deadline = tw__catchup_start(s->catchup, spec->deadline,
                                              spec->period, spec->kind);
        spec = &periodic;
    }
    st = tw__gate_enter(s, &rc);
    if (!st)
        return rc;
    rc = tw__gate_reserve(s, st);
    if (!rc)
        rc = submit(s, st, spec, out);
    tw__gate_leave(s, st);
    return rc;
}

TW_PUBLIC uint64_t tw_service_now(const struct tw_service *s)
{
    return s ? tw__mono_ns() : 0;
}

TW_PUBLIC int tw_service_schedule_at(struct tw_service *s, uint64_t deadline,
                                     tw_service_callback *cb, void *arg,
                                     struct tw_handle **out)
{
    struct tw_timer_spec spec = {.deadline = deadline, .cb = cb, .arg = arg};

    return tw_service_submit(s, &spec, out);
}

TW_PUBLIC int tw_service_schedule(struct tw_service *s, uint64_t delay,
                                  tw_service_callback *cb, void *arg,
                                  struct tw_handle **out)
{
    return tw_service_schedule_at(s, tw__add_sat(tw__svc_clock_upper(), delay),
                                  cb, arg, out);
}

TW_PUBLIC int tw_service_schedule_periodic(struct tw_service *s, uint64_t delay,
                                           uint64_t period, enum tw_period kind,
                                           tw_service_callback *cb, void *arg,
                                           struct tw_handle **out)
{
    struct tw_timer_spec spec = {
        .deadline = tw__add_sat(tw__svc_clock_upper(), delay),
        .period = period,
        .kind = kind,
        .cb = cb,
        .arg = arg,
    };

    if (period == 0) {
        if (out)
            *out = NULL;
        return -EINVAL;
    }
    return tw_service_submit(s, &spec, out);
}

/* tw_drain() gives us each timer once it has left the wheel: only then
 * may its handle join a list, whose link lies over the timer's deadline
 * (service.h). */
static void gather_one(struct tw_timer *t, void *all)
{
    tw__hlist_push(all, TW_CONTAINER_OF(t, struct tw_handle, timer));
}

/* Every timer the service still holds, out of the wheel and the lists. */
static void gather(struct tw_service *s, struct tw__hlist *all)
{
    struct tw_handle *h;

    while ((h = tw__hlist_pop(&s->exec.queue)))
        tw__hlist_push(all, h);
    tw_drain(s->wheel, gather_one, all);
}

static void hand_back(struct tw_service *s, struct tw_handle *h,
                      tw_handback_fn *fn, void *ctx)
{
    struct tw_handback t = {
        .cb = tw__cb(s, h),
        .arg = tw__arg(h),
        .deadline = tw__deadline(h),
        .period = tw__period(h),
        .kind = tw__kind(h),
    };

    if (fn)
        fn(&t, ctx);
}

/* Hand h back unless a cancel got it first (waiting out a re-arm or cancel
 * in progress). */
static void claim(struct tw_service *s, struct tw_handle *h, tw_handback_fn *fn,
                  void *ctx)
{
    if (!tw__handle_claim_return(h)) {
        tw__handle_drop(s, h, TW__OUT_CANCELLED);
        return;
    }
    hand_back(s, h, fn, ctx);
    tw__handle_drop(s, h, TW__OUT_RETURNED);
}

static void shut_down(struct tw_service *s, tw_handback_fn *fn, void *ctx)
{
    const struct tw_service *was = tw__svc_current;
    struct tw__hlist all = {0};
    struct tw_handle *h;

    tw__gate_close(s);
    if (s->worker_alive) {
        tw__wake_kick(s);
        pthread_join(s->worker, NULL);
        s->worker_alive = false;
    }
    tw__exec_stop(&s->exec);
    /* fn or a release hook calling stop or destroy gets -EDEADLK */
    tw__svc_current = s;
    tw__worker_reap(s, true);
    tw__worker_admit(s, SIZE_MAX, true);
    gather(s, &all);
    while ((h = tw__hlist_pop(&all)))
        claim(s, h, fn, ctx);
    /* Cancels that won during the walk queued their handles: free them. */
    tw__worker_reap(s, true);
    tw__svc_current = was;
}

TW_PUBLIC int tw_service_stop(struct tw_service *s, tw_handback_fn *fn,
                              void *ctx)
{
    if (!s)
        return -EINVAL;
    if (s->forked)
        return -ECHILD; /* fork.c */
    if (tw__svc_current == s)
        return -EDEADLK;
    pthread_mutex_lock(&s->stop_lock);
    if (!s->stopped) {
        shut_down(s, fn, ctx);
        s->stopped = true;
    }
    pthread_mutex_unlock(&s->stop_lock);
    return 0;
}

TW_PUBLIC int tw_service_destroy(struct tw_service *s)
{
    int rc;

    if (!s)
        return 0;
    if (s->forked)
        return -ECHILD; /* fork.c: at once, nothing freed */
    rc = tw_service_stop(s, NULL, NULL);
    if (!rc)
        free_service(s);
    return rc;
}
