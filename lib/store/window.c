/*
 * window.c: the timers of the next window_ns, in memory, and their
 * delivery. Everything here runs on the store's worker.
 *
 * The window is the key range below window_end: every timer on disk whose
 * key (deadline, seq) is below it is in memory, in the table, and in one of
 *   the core wheel (ARMED: deadline ahead), keyed by CLOCK_REALTIME ns; the
 *       wheel's time only moves forward, so a step back of the wall clock
 *       holds it rather than re-firing anything;
 *   the due queue (DUE), in the order timers fell due; the loader appends
 *       overdue timers in key order, so after a restart the oldest deadline
 *       goes first, and so does a commit (commit.c) with the timers of its
 *       batch that are overdue by the time it is durable;
 *   delivered (DELIVERED), waiting for an ack.
 * The loader moves window_end forward, reading the database in key order
 * from window_end, while fewer than window_max timers are in memory and the
 * window reaches less than window_ns ahead of now. It runs again when the
 * window has shrunk by an eighth (time moved on) or memory has freed an
 * eighth, so a steady stream loads in chunks, not one record at a time.
 *
 * Delivery reads the wall clock and never hands out a timer whose deadline
 * is still ahead of it (the wheel cannot fire early, but the wall clock can
 * step back after the wheel fired). A token bucket bounds deliveries per
 * second at deliver_rate, with a burst of a hundredth of a second's worth.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "sat.h"
#include "store.h"

#define NS_PER_S UINT64_C(1000000000)
#define WHEEL_TICK_NS UINT64_C(1000000) /* 1 ms: the delivery granularity */
#define BURST_DIV 100                   /* burst: 1/100 s of the rate */
#define IDLE_NS (NS_PER_S)              /* longest sleep with nothing due */

static void due_push(struct tw_store *s, struct tw__entry *e)
{
    e->state = TW__DUE;
    e->next = NULL;
    if (s->due_tail)
        s->due_tail->next = e;
    else
        s->due_head = e;
    s->due_tail = e;
}

static void on_expire(struct tw_timer *t, void *ctx)
{
    due_push(ctx, TW_CONTAINER_OF(t, struct tw__entry, timer));
}

int tw__window_init(struct tw_store *s)
{
    struct tw_config cfg;
    int rc;

    tw_config_init(&cfg, TW_HIER);
    cfg.tick_ns = WHEEL_TICK_NS;
    cfg.start_ns = tw__real_ns();
    s->wheel = tw_create(&cfg, &rc);
    if (!s->wheel)
        return rc;
    rc = tw_set_expiry(s->wheel, on_expire, s);
    if (rc == 0)
        rc = tw__table_init(&s->table,
                            (size_t)s->cfg.window_max + s->cfg.commit_ops);
    s->window_end = (struct tw_store_id){0, 0};
    s->tokens_at = tw__mono_ns();
    s->tokens = 1;
    return rc;
}

static void free_all(struct tw_timer *t, void *ctx)
{
    (void)t;
    (void)ctx;
}

void tw__window_fini(struct tw_store *s)
{
    if (s->wheel) {
        tw_drain(s->wheel, free_all, NULL);
        tw_destroy(s->wheel);
    }
    if (s->table.slot)
        for (size_t i = 0; i <= s->table.mask; i++)
            tw__entry_free(s->table.slot[i]);
    /* Dead timers left the table but may wait in the due queue. */
    for (struct tw__entry *e = s->due_head, *n; e; e = n) {
        n = e->next;
        if (e->dead)
            tw__entry_free(e);
    }
    tw__table_fini(&s->table);
}

void tw__window_arm(struct tw_store *s, struct tw__entry *e, uint64_t now)
{
    if (e->id.deadline_ns <= now) {
        due_push(s, e);
        return;
    }
    e->state = TW__ARMED;
    tw_timer_init(&e->timer, NULL, NULL);
    tw_schedule(s->wheel, &e->timer, e->id.deadline_ns);
}

/* A DUE timer stays in the queue, dead, and is freed when it comes to the
 * front; the others go at once, a polled delivery's copy still waiting for
 * the loop with them. The caller took it out of the table. */
void tw__window_drop(struct tw_store *s, struct tw__entry *e)
{
    s->loaded--;
    if (e->state == TW__ARMED)
        tw_cancel(s->wheel, &e->timer);
    if (e->state == TW__DELIVERED) {
        tw__stat_add(&s->stats.unacked, -1);
        if (s->cfg.polled)
            tw__poll_withdraw(s, e);
    }
    if (e->state == TW__DUE)
        e->dead = true;
    else
        tw__entry_free(e);
}

/* One record of the database into memory: 1, or 0 when memory is full,
 * or -EBADMSG for a payload no schedule could have written (damage). */
static int load_one(struct tw_store *s, struct tw_store_id id, const void *v,
                    size_t vl, uint64_t now)
{
    struct tw__entry *e;

    if (tw__table_find(&s->table, id))
        return 1; /* kept in memory when the window last shrank */
    if (vl > TW_STORE_PAYLOAD_MAX)
        return -EBADMSG;
    if (s->loaded >= s->cfg.window_max || !(e = tw__entry_new(id, v, vl)))
        return 0;
    if (tw__table_insert(&s->table, e) != 0) {
        tw__entry_free(e);
        return 0;
    }
    s->loaded++;
    tw__window_arm(s, e, now);
    return 1;
}

/* Read from window_end up to now + window_ns or until memory is full. */
static int load(struct tw_store *s, uint64_t now)
{
    uint64_t limit = tw__add_sat(now, s->cfg.window_ns);
    unsigned char key[TW__KEY_LEN];
    struct tw__db_iter *it;
    int rc = 0;

    tw__key_encode(key, s->window_end);
    it = tw__db_iter_new(s->db, key, sizeof key);
    if (!it)
        return -ENOMEM;
    for (; tw__db_iter_valid(it); tw__db_iter_next(it)) {
        size_t kl, vl;
        const void *k = tw__db_iter_key(it, &kl);
        const void *v = tw__db_iter_value(it, &vl);
        struct tw_store_id id;

        rc = tw__key_decode(k, kl, &id);
        if (rc <= 0 || id.deadline_ns >= limit)
            break; /* damage, or past the timers ('M' sorts before) */
        rc = load_one(s, id, v, vl, now);
        if (rc <= 0) {
            if (rc == 0)
                s->window_end = id; /* memory is full: from here later */
            tw__db_iter_free(it);
            return rc;
        }
    }
    if (rc >= 0)
        rc = tw__db_iter_error(it);
    tw__db_iter_free(it);
    if (rc == 0)
        s->window_end = (struct tw_store_id){limit, 0};
    return rc;
}

static bool load_due(const struct tw_store *s, uint64_t now)
{
    uint64_t slack = s->cfg.window_ns - s->cfg.window_ns / 8;
    size_t room = s->cfg.window_max - s->cfg.window_max / 8;

    return s->loaded < room && (s->window_end.deadline_ns <= now ||
                                s->window_end.deadline_ns - now <= slack);
}

static void refill(struct tw_store *s)
{
    uint64_t t = tw__mono_ns(), rate = s->cfg.deliver_rate;
    double burst = rate / BURST_DIV ? (double)(rate / BURST_DIV) : 1.0;

    s->tokens += (double)(t - s->tokens_at) * (double)rate / 1e9;
    if (s->tokens > burst)
        s->tokens = burst;
    s->tokens_at = t;
}

/* Hand out due timers while the rate allows; the wait until the next
 * token when some remain, UINT64_MAX when the queue is empty. */
static uint64_t deliver(struct tw_store *s)
{
    struct tw__entry *e;

    if (s->cfg.deliver_rate)
        refill(s);
    while ((e = s->due_head)) {
        if (e->dead) {
            s->due_head = e->next;
            tw__entry_free(e);
        } else if (e->id.deadline_ns > tw__real_ns()) {
            return WHEEL_TICK_NS; /* the wall clock stepped back */
        } else if (!tw__repl_may_deliver(s)) {
            return WHEEL_TICK_NS; /* replication: no lease, no delivery */
        } else if (s->cfg.deliver_rate && s->tokens < 1) {
            return (uint64_t)((1 - s->tokens) * 1e9 / s->cfg.deliver_rate) + 1;
        } else {
            struct tw__entry *next = e->next; /* copy shares its place */

            if (s->cfg.polled && !tw__poll_push(s, e))
                return WHEEL_TICK_NS; /* no memory for the copy: again */
            s->due_head = next;
            s->tokens -= 1;
            e->state = TW__DELIVERED;
            tw__stat_add(&s->stats.deliveries, 1);
            tw__stat_add(&s->stats.unacked, 1);
            if (!s->cfg.polled)
                s->cfg.deliver(s, e->id, e->payload, e->len,
                               s->cfg.deliver_arg);
        }
        if (!s->due_head)
            s->due_tail = NULL;
    }
    return UINT64_MAX;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* How long until the wheel or the window next need the worker. */
static uint64_t next_work(const struct tw_store *s, uint64_t now)
{
    uint64_t wait = IDLE_NS, slack = s->cfg.window_ns - s->cfg.window_ns / 8;
    uint64_t next = tw_next_deadline(s->wheel);

    if (tw_pending(s->wheel))
        wait = min64(wait, next > now ? next - now : 0);
    if (s->window_end.deadline_ns > now + slack)
        wait = min64(wait, s->window_end.deadline_ns - now - slack);
    else if (s->loaded < s->cfg.window_max - s->cfg.window_max / 8)
        wait = 0; /* load_due() waits for room or time: not here */
    return wait;
}

uint64_t tw__window_step(struct tw_store *s)
{
    uint64_t now = tw__real_ns(), wait;
    int rc = 0;

    if (load_due(s, now))
        rc = load(s, now);
    if (rc != 0) {
        pthread_mutex_lock(&s->mu);
        if (!s->err) {
            s->err = rc;
            s->fail_at = s->accepted;
        }
        pthread_mutex_unlock(&s->mu);
        return UINT64_MAX;
    }
    if (now > tw_now(s->wheel))
        tw_advance(s->wheel, now);
    wait = deliver(s);
    tw__stat_set(&s->stats.in_memory, s->loaded);
    now = tw__real_ns();
    return min64(wait, next_work(s, now));
}
