/*
 * The timeouts of a purgatory over a service: core wheels kept in the
 * shards and one service timer for them all (Kafka's purgatory keeps its
 * own wheel too, advanced by its reaper thread).
 *
 * Why not one service timer per watch: a watch that completes, the
 * common case, then costs a service schedule and a cancel, each a
 * message the worker takes on another core, a handle allocated and freed,
 * and the record's second reference. Here a watch schedules a core timer
 * in the wheel of its first key's shard (under that shard's lock) and a
 * completion cancels it there: O(1), no message, nothing allocated.
 *
 * A wheel costs about 16 KiB whatever its layout, so only the first
 * TW__P_WHEELS shards hold one: shard i keeps its timeouts in the wheel of
 * shard i mod TW__P_WHEELS (tw__p_wheel_shard()), under that shard's lock.
 * With the default 16 shards that is each shard's own wheel, in the
 * section that links or unlinks the first key; with more shards a shard
 * past the first TW__P_WHEELS takes the wheel's shard lock inside its own
 * (the only place two shard locks are held at once, always a higher
 * index around a lower one, so no two threads wait for each other).
 *
 * The service timer (the tick, struct tw__ptick) fires at `due`, the
 * earliest time any wheel may have work, as tw_next_deadline() says.
 * Its callback, under the tick's lock: sets due to UINT64_MAX (nothing
 * armed), advances every wheel to the service's clock
 * under the shard's lock, claiming what fired (a record owned elsewhere
 * gets EXPIRE, as before), detaches the claimed records, re-arms the
 * handle at the earliest next deadline of the wheels, and only then,
 * holding no lock, delivers on_expire and on_complete.
 *
 * No lost timeout: a watch schedules its deadline d under the shard lock,
 * releases it, then reads due. If due <= d the armed tick fires by d.
 * Otherwise it takes the tick's lock and arms the handle at d. A callback
 * stores UINT64_MAX in due before it takes any shard lock, so either its
 * advance of that shard comes after the watch's schedule (it sees d and
 * arms the next run for it) or the watch's read of due comes after that
 * store (and the watch arms d itself). due is written only under the
 * tick's lock, and only to a deadline the handle is armed at.
 *
 * The handle: one at a time (an arm, struct tw__ptarm), re-armed with
 * tw_handle_rearm_at(). When the service is done with it (a run that did
 * not re-arm, a hand-back at the service's stop) re-arming answers 0 and
 * the tick submits a new one, so a watch over a stopped service is refused
 * with -ESHUTDOWN and one over a full service with -EAGAIN, as before. An
 * arm lives until both the service has let go of it (its release hook)
 * and the tick has released its handle; the tick lives until the
 * purgatory and every arm have let go of it, so a release hook that runs
 * after the purgatory is freed finds its tick.
 *
 * Stop (tw__p_tick_stop(), once every shard is empty) detaches the tick
 * from the purgatory under its lock, so a callback running then either
 * finished its work on the shards before or finds no purgatory after,
 * and cancels the handle.
 */
#include <errno.h>
#include <string.h>

#include "purgatory.h"
#include "sat.h"

/* The shard wheels' tick: the service's own default, so that a timeout
 * fires within the same tick it would as a service timer. */
#define TICK_NS UINT64_C(1000000)
/* Six 64-slot levels of 1 ms: 2^36 ms (about two years) before the core
 * adds coarser levels; 384 slots a shard, a few KiB, where the default
 * clock layout (1000/60/60/24) would take several times that. */
static const uint32_t layout[] = {64, 64, 64, 64, 64, 64};

struct tw__ptarm {
    struct tw__ptick *t;
    struct tw_handle *h;
    atomic_uint refs; /* the service's (release hook) and the tick's */
};

struct tw__ptick {
    pthread_mutex_t lock;
    struct tw_purgatory *p; /* NULL once stop detached the tick */
    struct tw__ptarm *cur;  /* the handle in use, or NULL */
    _Atomic uint64_t due;   /* cur fires by then; UINT64_MAX: not armed */
    atomic_uint refs;       /* the purgatory's and one per arm */
};

static void tick_put(struct tw__ptick *t)
{
    if (atomic_fetch_sub(&t->refs, 1) == 1) {
        pthread_mutex_destroy(&t->lock);
        tw_free(t, sizeof(*t));
    }
}

static void arm_put(struct tw__ptarm *a)
{
    struct tw__ptick *t = a->t;

    if (atomic_fetch_sub(&a->refs, 1) == 1) {
        tw_free(a, sizeof(*a));
        tick_put(t);
    }
}

/* The tick lets go of its handle (tick locked). */
static void drop_cur(struct tw__ptick *t)
{
    struct tw__ptarm *a = t->cur;

    t->cur = NULL;
    atomic_store(&t->due, UINT64_MAX);
    if (a) {
        tw_handle_release(a->h);
        arm_put(a); /* the service's reference keeps t alive */
    }
}

static void on_tick(struct tw_handle *h, void *arg);

/* The service lets go of an arm: nothing covers the wheels any more. */
static void on_release(void *arg)
{
    struct tw__ptarm *a = arg;
    struct tw__ptick *t = a->t;

    pthread_mutex_lock(&t->lock);
    if (t->cur == a)
        atomic_store(&t->due, UINT64_MAX);
    pthread_mutex_unlock(&t->lock);
    arm_put(a);
}

/* A new handle firing at d (tick locked). */
static int submit(struct tw__ptick *t, struct tw_service *svc, uint64_t d)
{
    struct tw__ptarm *a = tw_alloc(sizeof(*a));
    struct tw_timer_spec spec = {
        .deadline = d, .cb = on_tick, .release = on_release};
    int rc;

    if (!a)
        return -ENOMEM;
    a->t = t;
    atomic_init(&a->refs, 2);
    spec.arg = a;
    atomic_fetch_add(&t->refs, 1);
    rc = tw_service_submit(svc, &spec, &a->h);
    if (rc < 0) {
        atomic_fetch_sub(&t->refs, 1);
        tw_free(a, sizeof(*a));
        return rc;
    }
    t->cur = a;
    atomic_store(&t->due, d);
    return 0;
}

/* Make the handle fire by d (tick locked, attached to p). */
static int arm_at(struct tw__ptick *t, struct tw_service *svc, uint64_t d)
{
    if (atomic_load(&t->due) <= d)
        return 0;
    if (t->cur) {
        int rc = tw_handle_rearm_at(t->cur->h, d);

        if (rc < 0)
            return rc;
        if (rc == 1) {
            atomic_store(&t->due, d);
            return 0;
        }
        drop_cur(t); /* the service is done with it */
    }
    return submit(t, svc, d);
}

int tw__p_tick_cover(struct tw_purgatory *p, uint64_t d)
{
    struct tw__ptick *t = p->tick;
    int rc = 0;

    if (atomic_load(&t->due) <= d)
        return 0;
    pthread_mutex_lock(&t->lock);
    if (t->p)
        rc = arm_at(t, p->svc, d);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

/* The expiry function of every shard wheel (shard locked, inside its
 * advance): claim the record or leave it a note. */
static void on_fired(struct tw_timer *tm, void *ctx)
{
    struct tw__pshard *sh = ctx;
    struct tw__pwatch *w = TW_CONTAINER_OF(tm, struct tw__pwatch, timer);

    if (tw__p_take_or_note(w, TW__P_DONE, TW__P_EXPIRE)) {
        w->next = sh->fired;
        sh->fired = w;
    }
}

/* Advance one shard's wheel to now; add what it claimed to *out and
 * return the wheel's next deadline. */
static uint64_t advance_shard(struct tw__pshard *sh, uint64_t now,
                              struct tw__pwatch **out)
{
    uint64_t next, wnow;

    tw__p_lock(sh);
    wnow = tw_now(sh->timeouts);
    tw_advance(sh->timeouts, now > wnow ? now : wnow);
    while (sh->fired) {
        struct tw__pwatch *w = sh->fired;

        sh->fired = w->next;
        w->next = *out;
        *out = w;
    }
    next = tw_next_deadline(sh->timeouts);
    tw__p_unlock(sh);
    return next;
}

/* The callback's work on p (tick locked): the records it expired, every
 * one detached, the handle re-armed for what is left. */
static struct tw__pwatch *expire_due(struct tw__ptick *t,
                                     struct tw_purgatory *p)
{
    struct tw__pwatch *fired = NULL;
    uint64_t now = tw_service_now(p->svc), next = UINT64_MAX;

    atomic_store(&t->due, UINT64_MAX);
    for (unsigned i = 0; i < tw__p_nwheels(p); i++) {
        uint64_t n = advance_shard(&p->shards[i], now, &fired);

        next = n < next ? n : next;
    }
    for (struct tw__pwatch *w = fired; w; w = w->next) {
        w->outcome = TW_DELAYED_EXPIRED;
        tw__p_detach(w);
    }
    /* A later deadline from the timer's own callback needs no memory
     * (tw_handle_rearm_at()); should a new handle be refused, due stays
     * UINT64_MAX and the next watch arms one. */
    if (next != UINT64_MAX)
        arm_at(t, p->svc, next);
    return fired;
}

static void on_tick(struct tw_handle *h, void *arg)
{
    struct tw__ptarm *a = arg;
    struct tw__ptick *t = a->t;
    struct tw__pwatch *fired = NULL, *next;

    (void)h;
    pthread_mutex_lock(&t->lock);
    if (t->p && t->cur == a)
        fired = expire_due(t, t->p);
    pthread_mutex_unlock(&t->lock);
    for (struct tw__pwatch *w = fired; w; w = next) {
        next = w->next;
        tw__p_deliver(w, NULL, NULL);
    }
}

static void free_wheels(struct tw_purgatory *p)
{
    for (unsigned i = 0; i < tw__p_nwheels(p); i++)
        if (p->shards[i].timeouts)
            tw_destroy(p->shards[i].timeouts);
}

static int make_wheels(struct tw_purgatory *p)
{
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HIER);
    cfg.tick_ns = TICK_NS;
    cfg.slots = layout;
    cfg.levels = sizeof(layout) / sizeof(layout[0]);
    cfg.start_ns = tw_service_now(p->svc);
    for (unsigned i = 0; i < tw__p_nwheels(p); i++) {
        struct tw__pshard *sh = &p->shards[i];

        sh->timeouts = tw_create(&cfg, NULL);
        if (!sh->timeouts || tw_set_expiry(sh->timeouts, on_fired, sh) < 0)
            return -ENOMEM;
    }
    return 0;
}

int tw__p_tick_create(struct tw_purgatory *p)
{
    struct tw__ptick *t = tw_alloc(sizeof(*t));

    if (!t)
        return -ENOMEM;
    memset(t, 0, sizeof(*t));
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        tw_free(t, sizeof(*t));
        return -ENOMEM;
    }
    t->p = p;
    atomic_init(&t->due, UINT64_MAX);
    atomic_init(&t->refs, 1);
    p->tick = t;
    if (make_wheels(p) < 0) {
        tw__p_tick_free(p);
        return -ENOMEM;
    }
    return 0;
}

void tw__p_tick_stop(struct tw_purgatory *p)
{
    struct tw__ptick *t = p->tick;

    pthread_mutex_lock(&t->lock);
    t->p = NULL;
    if (t->cur)
        tw_handle_cancel(t->cur->h);
    drop_cur(t);
    pthread_mutex_unlock(&t->lock);
}

void tw__p_tick_free(struct tw_purgatory *p)
{
    if (!p->tick)
        return;
    free_wheels(p);
    tick_put(p->tick);
    p->tick = NULL;
}
