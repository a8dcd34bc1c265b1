/*
 * fork.c: what a child of fork() may do with a store its parent opened.
 *
 * Nothing but let go of it. The store's worker and witness threads, and
 * RocksDB's, are not in the child; its locks may be held by them forever;
 * its files and the directory's lock are the parent's. So in a child
 * every call on an inherited store answers -ECHILD at once, touching none
 * of that, and tw_store_close() returns -ECHILD without joining a thread,
 * flushing, or closing a descriptor (the child's copy of its memory is
 * left, as exec() or _exit() will take it). A child that wants a store
 * opens one of its own, in another directory (the parent holds the lock of
 * this one), or after the parent closed it.
 *
 * A store knows it is in a child by a generation count that a
 * pthread_atfork() child handler, registered once at the first open,
 * increments: each store notes the generation at its open, and a call
 * compares it with one load, where getpid() would be a system call on
 * every operation.
 */
#include <pthread.h>

#include "store.h"

_Atomic unsigned tw__fork_gen;

static void in_child(void)
{
    atomic_fetch_add_explicit(&tw__fork_gen, 1, memory_order_relaxed);
}

static void watch(void)
{
    pthread_atfork(NULL, NULL, in_child);
}

unsigned tw__fork_watch(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, watch);
    return atomic_load_explicit(&tw__fork_gen, memory_order_relaxed);
}
