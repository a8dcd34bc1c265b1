/*
 * poll.c: polled delivery, for a store opened with cfg.polled.
 *
 * The worker does not call a delivery function: it copies each due timer's
 * id and payload into a FIFO and the caller's thread takes them out with
 * tw_store_poll(). An eventfd tells an event loop when to call: it is
 * written when the FIFO goes from empty to not empty and drained when it
 * goes back, both under the FIFO's own lock (not the store's, which the
 * producers of operations take), so the descriptor is readable exactly
 * while a delivery waits.
 *
 * A copy, not the timer's own entry: a cancel or an ack from another
 * thread may free the entry on the worker while the delivery waits here.
 * What waits here is in the DELIVERED state for the rest of the store, as
 * a delivery made by a callback is; if the process dies before the loop
 * acks it, it comes again after the reopen.
 *
 * A cancel or an ack that becomes durable while the copy still waits
 * withdraws it (tw__poll_withdraw(), from the worker before the done
 * callback runs), so that no loop is handed a timer whose removal was
 * already confirmed. The entry and its copy point at each other, both
 * links under poll_mu: the worker clears them when it withdraws, the
 * poller when it takes the copy, so whichever comes first wins and the
 * other finds nothing to do. The entry outlives the link: the worker frees
 * it only after withdrawing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "store.h"

struct tw__polled {
    struct tw__polled *next, *prev;
    struct tw__entry *entry; /* whose copy, until taken or withdrawn */
    struct tw_store_id id;
    size_t len;
    unsigned char payload[];
};

static void polled_free(struct tw__polled *p)
{
    if (p)
        tw_free(p, sizeof *p + p->len);
}

int tw__poll_init(struct tw_store *s)
{
    s->evfd = -1;
    if (!s->cfg.polled)
        return 0;
    pthread_mutex_init(&s->poll_mu, NULL);
    s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return s->evfd < 0 ? -errno : 0;
}

void tw__poll_fini(struct tw_store *s)
{
    struct tw__polled *p;

    if (!s->cfg.polled)
        return;
    while ((p = s->polled_head)) {
        s->polled_head = p->next;
        polled_free(p);
    }
    if (s->evfd >= 0)
        close(s->evfd);
    pthread_mutex_destroy(&s->poll_mu);
}

/* eventfd's counter: one write makes it readable, one read empties it. */
static void signal_fd(int fd, bool on)
{
    uint64_t v = 1;
    ssize_t rc = on ? write(fd, &v, sizeof v) : read(fd, &v, sizeof v);

    (void)rc; /* EAGAIN: already in the state wanted */
}

bool tw__poll_push(struct tw_store *s, struct tw__entry *e)
{
    struct tw__polled *p = tw_alloc(sizeof *p + e->len);

    if (!p)
        return false;
    p->next = NULL;
    p->entry = e;
    p->id = e->id;
    p->len = e->len;
    memcpy(p->payload, e->payload, e->len);
    pthread_mutex_lock(&s->poll_mu);
    p->prev = s->polled_tail;
    if (s->polled_tail)
        s->polled_tail->next = p;
    else
        s->polled_head = p;
    s->polled_tail = p;
    p->entry->copy = p;
    if (p == s->polled_head)
        signal_fd(s->evfd, true);
    pthread_mutex_unlock(&s->poll_mu);
    return true;
}

/* Under poll_mu: take p out of the FIFO and cut its link with its entry;
 * the last one out drains the fd. */
static void unlink_copy(struct tw_store *s, struct tw__polled *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        s->polled_head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        s->polled_tail = p->prev;
    if (p->entry)
        p->entry->copy = NULL;
    p->entry = NULL;
    if (!s->polled_head)
        signal_fd(s->evfd, false);
}

void tw__poll_withdraw(struct tw_store *s, struct tw__entry *e)
{
    struct tw__polled *p;

    pthread_mutex_lock(&s->poll_mu);
    p = e->copy;
    if (p)
        unlink_copy(s, p);
    pthread_mutex_unlock(&s->poll_mu);
    polled_free(p);
}

/* The oldest waiting delivery, or NULL; the last one out drains the fd. */
static struct tw__polled *pop(struct tw_store *s)
{
    struct tw__polled *p;

    pthread_mutex_lock(&s->poll_mu);
    p = s->polled_head;
    if (p)
        unlink_copy(s, p);
    pthread_mutex_unlock(&s->poll_mu);
    return p;
}

int tw_store_fd(const struct tw_store *s)
{
    if (s && tw__forked(s))
        return -ECHILD;
    return s && s->cfg.polled ? s->evfd : -EINVAL;
}

int64_t tw_store_poll(struct tw_store *s, tw_store_deliver_fn *fn, void *arg,
                      uint64_t max)
{
    int64_t n = 0;
    struct tw__polled *p;

    if (!s || !fn || !max || !s->cfg.polled)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    while ((uint64_t)n < max && (p = pop(s))) {
        fn(s, p->id, p->payload, p->len, arg);
        polled_free(p);
        n++;
    }
    return n;
}
