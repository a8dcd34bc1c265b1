/*
 * The wheel object: configuration, creation and destruction, tick
 * arithmetic, the next-deadline query, the walk over every pending timer,
 * the drain that takes them all out, and the expiry function an embedder
 * may set instead of the timers' own callbacks.
 * Both designs share all of this; they differ only in how the slots are laid
 * out and searched (hier.c, hashed.c).
 *
 * Ticks are counted from start_ns. Tick boundary k lies at start_ns + k * tick
 * and the last boundary saturates at UINT64_MAX, so every deadline has a due
 * tick in [0, max_tick] and advancing to UINT64_MAX reaches max_tick.
 */
#include <errno.h>
#include <string.h>

#include "alloc.h"
#include "list.h"
#include "reserved.h"
#include "wheel.h"

/* The default hierarchical layout reads like a clock at the default 1 ms
 * tick: a second wheel, a minute wheel, an hour wheel and a day wheel. */
static const uint32_t clock_layout[] = {1000, 60, 60, 24};

TW_PUBLIC void tw_config_init(struct tw_config *cfg, enum tw_mode mode)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->mode = mode;
    cfg->tick_ns = TW_DEFAULT_TICK_NS;
}

/* The layout a config selects when it names none. */
static void default_layout(struct tw_config *cfg)
{
    static const uint32_t hashed_layout[] = {TW_DEFAULT_HASHED_SLOTS};

    if (cfg->slots)
        return;
    if (cfg->mode == TW_HIER) {
        cfg->slots = clock_layout;
        cfg->levels = sizeof(clock_layout) / sizeof(clock_layout[0]);
    } else {
        cfg->slots = hashed_layout;
        cfg->levels = 1;
    }
}

uint64_t tw__time_tick(const struct tw_wheel *w, uint64_t time)
{
    if (time == UINT64_MAX)
        return w->max_tick;
    if (time <= w->start_ns)
        return 0;
    return (time - w->start_ns) / w->tick_ns;
}

/* Allocate the slot heads (and, for the hierarchical wheel, the bitmap
 * words) that the design's layout function sized in w. */
static int alloc_slots(struct tw_wheel *w)
{
    w->slots = tw__zalloc(w->nslots * sizeof(*w->slots));
    if (!w->slots)
        return -ENOMEM;
    for (size_t i = 0; i < w->nslots; i++)
        tw__list_init(&w->slots[i]);
    /* Each hierarchical level's first slot, for insertion (wheel.h). */
    for (unsigned k = 0; k < w->nlevels; k++)
        w->place[k].slot0 = &w->slots[w->levels[k].first];
    return 0;
}

static void free_wheel(struct tw_wheel *w)
{
    if (w->slots)
        tw__free(w->slots, w->nslots * sizeof(*w->slots));
    if (w->words)
        tw__free(w->words, w->nwords * sizeof(*w->words));
    tw__free(w, sizeof(*w));
}

static int build(struct tw_wheel *w, const struct tw_config *given)
{
    struct tw_config cfg = *given;
    int rc;

    if (cfg.tick_ns == 0 || (cfg.mode != TW_HIER && cfg.mode != TW_HASHED) ||
        !tw__reserved_zero(cfg.reserved))
        return -EINVAL;
    default_layout(&cfg);
    if (cfg.levels == 0 || cfg.levels > TW_MAX_LEVELS)
        return -EINVAL;
    w->mode = cfg.mode;
    w->tick_ns = cfg.tick_ns;
    w->start_ns = cfg.start_ns;
    w->head.now = cfg.start_ns;
    w->max_tick = tw__due_tick(w, UINT64_MAX);
    w->tick_limit = (UINT64_MAX - w->start_ns) / w->tick_ns;
    tw__set_defer(w, w->start_ns); /* the boundary of tick 0 */
    /* Empty: the hierarchical wheel may skip any advance, the hashed one
     * any advance within tick 0 (advance.c). */
    w->head.idle_ns = w->mode == TW_HIER ? UINT64_MAX : tw__tick_time(w, 1);
    tw__list_init(&w->expired);
    tw__list_init(&w->deferred);
    tw__list_init(&w->demoting);
    rc = w->mode == TW_HIER ? tw__hier_layout(w, &cfg)
                            : tw__hashed_layout(w, &cfg);
    return rc ? rc : alloc_slots(w);
}

TW_PUBLIC struct tw_wheel *tw_create(const struct tw_config *cfg, int *err)
{
    struct tw_wheel *w = NULL;
    int rc = -EINVAL;

    if (cfg) {
        w = tw__zalloc(sizeof(*w));
        rc = w ? build(w, cfg) : -ENOMEM;
        if (rc && w) {
            free_wheel(w);
            w = NULL;
        }
    }
    if (err)
        *err = rc;
    return w;
}

/* Call fn on every list head of w: expired, deferred, demoting, then every
 * slot. */
static int each_list(struct tw_wheel *w,
                     int (*fn)(struct tw_link *head, void *ctx), void *ctx)
{
    int rc = fn(&w->expired, ctx);

    if (!rc)
        rc = fn(&w->deferred, ctx);
    if (!rc)
        rc = fn(&w->demoting, ctx);
    for (size_t i = 0; !rc && i < w->nslots; i++)
        rc = fn(&w->slots[i], ctx);
    return rc;
}

static int detach_list(struct tw_link *head, void *ctx)
{
    struct tw_link *node = head->next;

    (void)ctx;
    while (node != head) {
        struct tw_link *next = node->next;

        node->next = NULL;
        node->prev = NULL;
        node = next;
    }
    tw__list_init(head);
    return 0;
}

TW_PUBLIC int tw_destroy(struct tw_wheel *w)
{
    if (!w)
        return 0;
    if (w->busy)
        return -EDEADLK;
    each_list(w, detach_list, NULL);
    free_wheel(w);
    return 0;
}

TW_PUBLIC uint64_t tw_now(const struct tw_wheel *w)
{
    return w ? w->head.now : 0;
}

TW_PUBLIC size_t tw_pending(const struct tw_wheel *w)
{
    return w ? w->count : 0;
}

/* The next tick with work to do in the design's slots, UINT64_MAX if none. */
static uint64_t next_work_tick(const struct tw_wheel *w)
{
    if (w->mode == TW_HIER)
        return tw__hier_next_tick(w);
    /* The hashed wheel must visit every tick while anything is pending. */
    return w->count ? w->cur + 1 : UINT64_MAX;
}

TW_PUBLIC uint64_t tw_next_deadline(const struct tw_wheel *w)
{
    uint64_t tick, at;

    if (!w)
        return UINT64_MAX;
    if (!tw__list_empty(&w->expired) || !tw__list_empty(&w->deferred) ||
        !tw__list_empty(&w->demoting))
        return w->head.now;
    tick = next_work_tick(w);
    if (tick == UINT64_MAX)
        return UINT64_MAX;
    at = tw__tick_time(w, tick);
    return at < w->head.now ? w->head.now : at;
}

struct visit {
    tw_visitor *fn;
    void *ctx;
};

static int visit_list(struct tw_link *head, void *ctx)
{
    struct visit *v = ctx;
    int rc = 0;

    for (struct tw_link *n = head->next; !rc && n != head; n = n->next)
        rc = v->fn(tw__list_timer(n), v->ctx);
    return rc;
}

TW_PUBLIC int tw_visit(struct tw_wheel *w, tw_visitor *fn, void *ctx)
{
    struct visit v = {fn, ctx};
    uint64_t idle;
    unsigned busy;
    int rc;

    if (!w || !fn)
        return -EINVAL;
    busy = w->busy;
    idle = w->head.idle_ns;
    w->busy |= TW__VISITING;
    w->head.idle_ns = 0;           /* closes the fast paths: advance, */
    tw__set_defer(w, w->defer_ns); /* schedule and re-arm */
    rc = each_list(w, visit_list, &v);
    w->busy = busy;
    tw__set_defer(w, w->defer_ns);
    w->head.idle_ns = idle;
    return rc;
}

struct drain {
    struct tw_wheel *w;
    tw_callback *fn;
    void *ctx;
    int64_t taken;
};

/* Take the timers of one list out of the wheel: the whole list at once,
 * so that the slot's bit is cleared and the wheel is consistent whenever
 * fn runs (tw_check() may be called from it), then each timer, which stops
 * being pending just before fn gets it. */
static int drain_list(struct tw_link *head, void *ctx)
{
    struct drain *d = ctx;
    struct tw_link taken;

    if (tw__list_empty(head))
        return 0;
    tw__list_init(&taken);
    tw__list_splice_back(&taken, head);
    if (d->w->mode == TW_HIER)
        tw__hier_emptied(d->w, head);
    while (!tw__list_empty(&taken)) {
        struct tw_timer *t = tw__list_timer(taken.next);

        tw__list_unlink(&t->link);
        d->w->count--;
        d->taken++;
        d->fn(t, d->ctx);
    }
    return 0;
}

/* Like a visit, the drain closes the fast paths and marks the wheel busy,
 * so that fn's calls on w are refused. Removing work never makes idle_ns
 * unsafe (advance.c), so it is restored as it was. */
TW_PUBLIC int64_t tw_drain(struct tw_wheel *w, tw_callback *fn, void *ctx)
{
    struct drain d = {w, fn, ctx, 0};
    uint64_t idle;

    if (!w || !fn)
        return -EINVAL;
    if (w->busy)
        return -EBUSY;
    idle = w->head.idle_ns;
    w->busy |= TW__VISITING;
    w->head.idle_ns = 0;
    tw__set_defer(w, w->defer_ns);
    each_list(w, drain_list, &d);
    w->busy &= ~TW__VISITING;
    tw__set_defer(w, w->defer_ns);
    w->head.idle_ns = idle;
    return d.taken;
}

/* An expiry function changes only between advances (w->busy), so that an
 * advance reads it once (advance.c); dropping it while timers are pending
 * would leave timers that may have no callback. */
TW_PUBLIC int tw_set_expiry(struct tw_wheel *w, tw_callback *fn, void *ctx)
{
    if (!w)
        return -EINVAL;
    if (w->busy || (!fn && w->count))
        return -EBUSY;
    w->expire = fn;
    w->expire_ctx = fn ? ctx : NULL;
    return 0;
}
