/*
 * Telling ThreadSanitizer about the service's orderings, in every build.
 *
 * In a library built with -fsanitize=thread (make SAN=thread) TSan sees our
 * C11 atomics itself; only liburcu's queue, which is not instrumented, needs
 * the release/acquire on each node (mpsc.h).
 *
 * In an ordinary build, a user's program compiled with -fsanitize=thread
 * sees none of our atomics, so it would report races between what it wrote
 * before a schedule and what its callback reads, what its callback wrote
 * and what it reads after tw_handle_cancel_wait() or a query saying DONE,
 * and between our initialisation of a handle and its free on another thread. So
 * the library also calls __tsan_release() and __tsan_acquire() through
 * weak references: in a program without TSan they are NULL and cost a
 * test; in a program with TSan they resolve to its runtime, and the
 * reports go away. The addresses used are the handle's (and the queue
 * node's), the objects the orderings are about.
 */
#ifndef TW_SERVICE_TSAN_H
#define TW_SERVICE_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define TW__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TW__TSAN 1
#endif
#endif

#ifdef TW__TSAN
#include <sanitizer/tsan_interface.h>
/* Only the queue's nodes: TSan sees the rest. */
#define tsan_release(p) __tsan_release(p)
#define tsan_acquire(p) __tsan_acquire(p)
#define tw__hb_release(p) ((void)(p))
#define tw__hb_acquire(p) ((void)(p))
/* Whether a user's ThreadSanitizer is listening: never in our own TSan
 * builds, which see our atomics without being told. */
#define tw__hb_live() 0
#else
void __tsan_release(void *addr) __attribute__((weak));
void __tsan_acquire(void *addr) __attribute__((weak));

static inline void tw__hb_release(const void *p)
{
    if (__tsan_release)
        __tsan_release((void *)p);
}

static inline void tw__hb_acquire(const void *p)
{
    if (__tsan_acquire)
        __tsan_acquire((void *)p);
}

/* Whether a user's ThreadSanitizer is listening (one test, for a path
 * that would otherwise test at every step). */
static inline int tw__hb_live(void)
{
    return __tsan_release != 0;
}

#define tsan_release(p) tw__hb_release(p)
#define tsan_acquire(p) tw__hb_acquire(p)
#endif

#endif /* TW_SERVICE_TSAN_H */
