/*
 * The registry of live services: a slot number for each, so that a handle
 * can name its service in 16 bits of its refs word (service.h) instead of
 * carrying an 8-byte pointer. That pointer was the difference between a
 * handle of 88 bytes (a 96-byte jemalloc class) and one of 80.
 *
 * A service takes a slot when it is created and gives it back when it is
 * destroyed. A handle looks its service up only while the service holds it
 * (a canceller or re-armer holding CANCELLING or LOCKED, or the worker),
 * which is before stop returns, so the slot still names that service; a
 * handle that outlives its service never looks, and may find its old slot
 * given to another service without harm.
 *
 * The table is static: 65,535 usable slots of 8 bytes, 512 KB of address
 * space of which only the pages of slots in use are ever touched (the
 * lowest free slot is taken). Each service runs a worker thread of its own,
 * so a process meets its thread limit long before it runs out of slots;
 * if it does, tw_service_create() answers -EAGAIN, as it does when a
 * thread cannot be started. Creating and destroying take a mutex; creating
 * scans up from the lowest slot that may be free. Both are rare and cost
 * far more in thread start-up.
 *
 * Why not a per-service slab whose chunks point to the service: the chunks
 * would need an allocator of their own, safe from every producer thread;
 * a chunk would stay allocated while any one of its handles lived (a
 * released-late handle pins a whole chunk); and handles must outlive the
 * service, so the chunks too. The table costs one load per lookup.
 */
#include <errno.h>

#include "service.h"

_Atomic(struct tw_service *) tw__registry[TW__SLOTS];
/* Set in a child of fork() for every slot its parent's services held
 * (tw__registry_forked()); cleared when a slot is given again. A handle
 * looks here, by its slot, without reading its service, which may be gone. */
atomic_bool tw__registry_stale[TW__SLOTS];

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
/* No slot below this one is free (under registry_lock). */
static unsigned lowest_free = 1;
/* No slot at or above this one was ever given (under registry_lock, read
 * without it by a child of fork(), which has only its forking thread). */
static unsigned highest_given = 1;

/* Give s the lowest free slot; -EAGAIN when every slot is taken. */
int tw__registry_add(struct tw_service *s)
{
    int rc = -EAGAIN;

    pthread_mutex_lock(&registry_lock);
    for (unsigned i = lowest_free; i < TW__SLOTS; i++) {
        if (!atomic_load_explicit(&tw__registry[i], memory_order_relaxed)) {
            atomic_store_explicit(&tw__registry_stale[i], false,
                                  memory_order_relaxed);
            atomic_store_explicit(&tw__registry[i], s, memory_order_release);
            s->slot = i;
            lowest_free = i + 1;
            if (i + 1 > highest_given)
                highest_given = i + 1;
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

/* Give back s's slot, if it has one. No handle of s looks it up any more:
 * s has been stopped. */
void tw__registry_remove(struct tw_service *s)
{
    if (!s->slot)
        return;
    pthread_mutex_lock(&registry_lock);
    atomic_store_explicit(&tw__registry[s->slot], NULL, memory_order_relaxed);
    if (s->slot < lowest_free)
        lowest_free = s->slot;
    pthread_mutex_unlock(&registry_lock);
    s->slot = 0;
}

/* In a child of fork() (fork.c), alone in the process: every service the
 * parent had is its copy, without its threads, and perhaps in the middle
 * of a change a parent thread was making. Mark each: closed to new work
 * and forked (every call answers -ECHILD), its slot stale. No lock is
 * taken: a parent thread may have held registry_lock at the fork. */
void tw__registry_forked(void)
{
    for (unsigned i = 1; i < highest_given; i++) {
        struct tw_service *s =
            atomic_load_explicit(&tw__registry[i], memory_order_relaxed);

        if (!s)
            continue;
        s->forked = true;
        atomic_store_explicit(&s->closed, true, memory_order_relaxed);
        atomic_store_explicit(&tw__registry_stale[i], true,
                              memory_order_relaxed);
    }
}
