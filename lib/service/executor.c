/*
 * The executor: a pool of threads that run the callbacks of due timers, so
 * that a slow callback delays only itself (two 2 s callbacks due at 1 s
 * both start at about 1 s, given two threads).
 *
 * The worker claims each due timer (PENDING -> DISPATCHED) during its
 * advance and hands the whole batch over with one lock. A pool thread takes
 * the oldest handle and claims it again (DISPATCHED -> RUNNING) before
 * running it: if a cancel got there first, the callback does not run; if a
 * re-arm did, the timer goes back to the worker. The
 * queue is a plain mutex-protected list: it has one producer (the worker),
 * moves a batch per lock, and its consumers must block anyway when it is
 * empty, which a condition variable does best.
 *
 * Stop lets each thread finish the callback it is running and leaves the
 * rest of the queue to tw_service_stop(), which hands those timers back.
 */
#include <errno.h>

#include "service.h"

/* Claim h and run it, or hand it back to the worker (re-armed while
 * queued) or let go of it (cancelled): handle.c decides and moves its
 * word. */
static void take(struct tw_service *s, struct tw_handle *h)
{
    switch (tw__handle_claim_dispatched(h)) {
    case TW__CLAIM_LATER:
        tw__worker_post(s, h);
        return;
    case TW__CLAIM_GONE:
        tw__handle_drop(s, h, TW__OUT_CANCELLED);
        return;
    case TW__CLAIM_WON:
        if (tw__handle_run(s, h))
            tw__worker_post(s, h); /* periodic or re-armed: pending again */
        return;
    }
}

static void *exec_main(void *arg)
{
    struct tw_service *s = arg;
    struct tw__exec *x = &s->exec;

    tw__svc_current = s;
    pthread_mutex_lock(&x->lock);
    for (;;) {
        struct tw_handle *h;

        while (!x->stop && !x->queue.head)
            pthread_cond_wait(&x->ready, &x->lock);
        if (x->stop)
            break;
        h = tw__hlist_pop(&x->queue);
        pthread_mutex_unlock(&x->lock);
        take(s, h);
        pthread_mutex_lock(&x->lock);
    }
    pthread_mutex_unlock(&x->lock);
    return NULL;
}

/* Start n threads; the lock and condition are already initialised. */
int tw__exec_start(struct tw_service *s, unsigned n)
{
    struct tw__exec *x = &s->exec;

    x->nthreads = n;
    if (n == 0)
        return 0;
    x->threads = tw__svc_zalloc(n * sizeof(*x->threads));
    if (!x->threads)
        return -ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        int rc = pthread_create(&x->threads[i], NULL, exec_main, s);

        if (rc) {
            tw__exec_stop(x);
            return -rc;
        }
        x->started++;
    }
    return 0;
}

void tw__exec_submit(struct tw__exec *x, struct tw__hlist *batch)
{
    pthread_mutex_lock(&x->lock);
    if (x->queue.tail)
        x->queue.tail->next = batch->head;
    else
        x->queue.head = batch->head;
    x->queue.tail = batch->tail;
    x->queue.n += batch->n;
    if (batch->n > 1)
        pthread_cond_broadcast(&x->ready);
    else
        pthread_cond_signal(&x->ready);
    pthread_mutex_unlock(&x->lock);
    batch->head = batch->tail = NULL;
    batch->n = 0;
}

/* Join every thread; the queue is left for stop. Safe twice. */
void tw__exec_stop(struct tw__exec *x)
{
    pthread_mutex_lock(&x->lock);
    x->stop = true;
    pthread_cond_broadcast(&x->ready);
    pthread_mutex_unlock(&x->lock);
    for (unsigned i = 0; i < x->started; i++)
        pthread_join(x->threads[i], NULL);
    x->started = 0;
}

void tw__exec_destroy(struct tw__exec *x)
{
    if (x->threads)
        tw_free(x->threads, x->nthreads * sizeof(*x->threads));
    pthread_cond_destroy(&x->ready);
    pthread_mutex_destroy(&x->lock);
}
