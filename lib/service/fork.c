/*
 * fork(): what a child may do with the services it inherits.
 *
 * A child of fork() has one thread, the one that forked; the services it
 * inherits are copies without their worker and executor threads, and any
 * of them may be in the middle of a change that a parent thread was
 * making (a lock held, a ring or queue half pushed). Nothing of them can
 * be run, stopped or freed safely there. So every call on an inherited
 * service or one of its handles answers -ECHILD and changes nothing:
 * schedule and submit, cancel (the _release form still drops the caller's
 * reference), cancel-and-wait, re-arm, stats, stop and destroy, which
 * returns at once without joining threads that do not exist in the child
 * and without freeing anything. What is left in the child (the service
 * object, its wheel, rings, queued handles, its registry slot) is its copy
 * of the parent's memory, given back when the child exits or execs.
 * tw_handle_query(), tw_handle_deadline() and tw_handle_release() still
 * work on the copy; tw_service_now() reads the clock. Services created in
 * the child work as anywhere.
 *
 * Detected once, at the fork: a pthread_atfork() child handler, installed
 * with the first service, marks every live service (registry.c) and sets
 * the child's thread on the shared stripe (gate.c), so that the fast
 * paths, which look at their stripe first, fall to the paths that check:
 * the schedule's gate already tests `closed` (no instruction added), and
 * the cancels' and re-arm's general paths test the slot's stale flag.
 */
#include <pthread.h>

#include "service.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void in_child(void)
{
    tw__registry_forked();
    /* The shared stripe: no ring of the parent's, no claim (gate.c) */
    tw__my_stripe = TW__STRIPES + 1;
}

static void watch(void)
{
    pthread_atfork(NULL, NULL, in_child);
}

void tw__fork_watch(void)
{
    pthread_once(&once, watch);
}
