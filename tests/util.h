/*
 * Small helpers shared by the named-case tests: wheels of each mode, a
 * timer that records when and in which order it fired, the real clock, and
 * an allocator for the library that counts, fails on demand and guards.
 */
#ifndef TW_TEST_UTIL_H
#define TW_TEST_UTIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timewheel.h"

#define MS UINT64_C(1000000)
#define SEC (1000 * MS)

struct rec {
    struct tw_timer t;
    struct tw_wheel *w;
    int fired;          /* times the callback ran */
    int seq;            /* global firing order of the last run */
    uint64_t at;        /* tw_now() when it last ran */
    uint64_t period;    /* > 0: re-arm itself this far after each run */
    struct rec *victim; /* cancelled by this timer's callback, if set */
    int victim_rc;
};

/* A wheel of mode with the default layout and 1 ms tick, start 0, or
 * starting at start. */
struct tw_wheel *wheel_new(enum tw_mode mode);
struct tw_wheel *wheel_new_at(enum tw_mode mode, uint64_t start);
/* Initialise r on w with the recording callback. */
void rec_init(struct rec *r, struct tw_wheel *w);
/* Assert that tw_check() passes. */
void wheel_ok(const struct tw_wheel *w);
/* A service of mode with the default configuration; asserts it exists. */
struct tw_service *default_service(enum tw_mode mode);
/* The same with a pool of `executors` threads running the callbacks. */
struct tw_service *service_pool(enum tw_mode mode, unsigned executors);
/* The same with at most max_pending timers pending (0: no bound). */
struct tw_service *service_bounded(enum tw_mode mode, unsigned executors,
                                   size_t max_pending);
/* s's stats; asserts tw_service_stats() answers 0. */
struct tw_service_stats service_stats(struct tw_service *s);
/* CLOCK_MONOTONIC in ns, and a sleep of ns, for the service's tests. */
uint64_t now_ns(void);
void sleep_ns(uint64_t ns);

/*
 * The test allocator, routed in with tw_set_allocator(). Which must come
 * before the library's first allocation in the process: Criterion runs each
 * test in a process of its own, so a test calls alloc_install() first (or
 * from its .init) and the choice ends with the test.
 *
 * Every block is counted; the fail_at-th call to alloc (counting from 1,
 * failed calls included) returns NULL, 0 never fails. With guard set, each
 * block ends where an inaccessible page begins, so that a read or write
 * one byte past any block faults in every build (ASan is not needed, and
 * jemalloc is bypassed); otherwise blocks come from malloc(). The counters
 * are atomic: the service's worker frees handles on its own thread.
 */
struct alloc_log {
    atomic_ulong calls;     /* calls to alloc, failed ones included */
    atomic_ulong allocs;    /* blocks handed out */
    atomic_ulong frees;     /* blocks given back */
    atomic_ulong bad_frees; /* given back with a size other than asked */
    atomic_ulong fail_at;   /* the call that fails; 0: none */
    atomic_ulong last_size; /* size asked by the latest block handed out */
};

extern struct alloc_log alloc_log;

/* Install the test allocator; asserts that the library took it. */
void alloc_install(bool guard);
/* The k-th call to alloc from now returns NULL (k = 1: the next); k = 0:
 * none does. */
void alloc_fail_after(unsigned long k);
/* Blocks handed out and not given back. */
unsigned long alloc_live(void);
/*
 * Watch the next block handed out from now (by any thread), and wait
 * until it is given back: for a test that must know that a block the
 * library frees on a thread of its own (a handle, which the service's
 * worker frees up to TW__REAP_NS after a cancel) is gone. The wait fails
 * the test, naming `what`, if no block was handed out or it is still held
 * after 10 s. One watch at a time; alloc_watch_next() replaces the last.
 */
void alloc_watch_next(void);
void alloc_wait_watched_freed(const char *what);
/*
 * Run attempt(ctx) with the k-th allocation from now failing, for k = 1,
 * 2, ... until it returns 0; until then it must return -ENOMEM and hold no
 * more blocks than before. Afterwards no allocation fails. Returns how many
 * tries failed: the number of allocations the call makes.
 */
unsigned long alloc_fail_each(int (*attempt)(void *ctx), void *ctx);

/* Counting callbacks for the service's tests: each run of count_run() adds
 * one to `runs`, each call of count_release() one to `releases` (a test
 * process runs one test, so the counters start at 0). */
extern atomic_int runs, releases;
void count_run(struct tw_handle *h, void *arg);
void count_release(void *arg);
/* Wait until *n reaches want, sleeping a millisecond at a time; fail the
 * test, naming `what`, if it has not after 10 s (far above any scheduling
 * delay, so that only something that never happens fails). */
void wait_for(atomic_int *n, int want, const char *what);

/* A callback that holds its thread (the worker, or an executor) until told:
 * it sets `in` on entry, then sleeps a millisecond at a time until `go`. */
struct hold {
    atomic_int in, go;
};
void hold_cb(struct tw_handle *h, void *arg);

/* Cap this process's address space at what it maps now plus room, so that
 * a large allocation (or a thread's stack) fails for real. Criterion runs
 * each test in a process of its own, so the cap ends with the test. Skips
 * the test under the sanitizers, which reserve more address space than any
 * cap, and under valgrind, which manages it itself. */
void limit_address_space(size_t room);

/* End a child of fork() that a test made, with code as its exit status:
 * _exit(), so that none of the parent's atexit handlers (Criterion's) run
 * in it, after writing the child's coverage counters in a --coverage build
 * (`make coverage`), which _exit() alone would drop: what the child ran
 * (every -ECHILD path) counts as run. */
_Noreturn void child_exit(int code);

#endif /* TW_TEST_UTIL_H */
