/*
 * Helpers for the named-case tests (see util.h).
 */
/* MAP_ANONYMOUS, for the guard pages. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static int sequence;

atomic_int runs, releases;

void count_run(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
    atomic_fetch_add(&runs, 1);
}

void count_release(void *arg)
{
    (void)arg;
    atomic_fetch_add(&releases, 1);
}

void wait_for(atomic_int *n, int want, const char *what)
{
    uint64_t give_up = now_ns() + 10 * SEC;

    while (atomic_load(n) < want) {
        cr_assert_lt(now_ns(), give_up, "%d of %d %s", atomic_load(n), want,
                     what);
        sleep_ns(MS);
    }
}

void hold_cb(struct tw_handle *h, void *arg)
{
    struct hold *hd = arg;

    (void)h;
    atomic_store(&hd->in, 1);
    while (!atomic_load(&hd->go))
        sleep_ns(MS);
}

struct tw_wheel *wheel_new_at(enum tw_mode mode, uint64_t start)
{
    struct tw_config cfg;
    struct tw_wheel *w;
    int err = 1;

    tw_config_init(&cfg, mode);
    cfg.start_ns = start;
    w = tw_create(&cfg, &err);
    cr_assert(w && err == 0, "create failed: %d", err);
    return w;
}

struct tw_wheel *wheel_new(enum tw_mode mode)
{
    return wheel_new_at(mode, 0);
}

static void record(struct tw_timer *t, void *arg)
{
    struct rec *r = arg;

    cr_assert_eq(t, &r->t);
    r->fired++;
    r->seq = ++sequence;
    r->at = tw_now(r->w);
    if (r->victim)
        r->victim_rc = tw_cancel(r->w, &r->victim->t);
    /* Fixed rate: the next run is one period after the last deadline. */
    if (r->period)
        cr_assert_geq(tw_rearm(r->w, t, tw_timer_deadline(t) + r->period), 0);
}

void rec_init(struct rec *r, struct tw_wheel *w)
{
    *r = (struct rec){.w = w};
    tw_timer_init(&r->t, record, r);
}

void wheel_ok(const struct tw_wheel *w)
{
    char why[200] = "";

    cr_assert_eq(tw_check(w, why, sizeof(why)), 0, "invariant: %s", why);
}

static struct tw_service *service_of(const struct tw_service_config *cfg)
{
    struct tw_service *s;
    int err = 0;

    s = tw_service_create(cfg, &err);
    cr_assert_not_null(s, "create: %s", tw_strerror(err));
    return s;
}

struct tw_service *service_pool(enum tw_mode mode, unsigned executors)
{
    struct tw_service_config cfg;

    tw_service_config_init(&cfg, mode);
    cfg.executor_threads = executors;
    return service_of(&cfg);
}

struct tw_service *service_bounded(enum tw_mode mode, unsigned executors,
                                   size_t max_pending)
{
    struct tw_service_config cfg;

    tw_service_config_init(&cfg, mode);
    cfg.executor_threads = executors;
    cfg.max_pending = max_pending;
    return service_of(&cfg);
}

struct tw_service *default_service(enum tw_mode mode)
{
    return service_pool(mode, 0);
}

struct tw_service_stats service_stats(struct tw_service *s)
{
    struct tw_service_stats st;

    cr_assert_eq(tw_service_stats(s, &st), 0);
    return st;
}

uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

    nanosleep(&ts, NULL);
}

/* ---- the test allocator ---------------------------------------------------
 */

struct alloc_log alloc_log;

/* alloc_watch_next(): armed until the next block is handed out, which is
 * then `watched` until it is given back. */
static atomic_bool watch_armed, watched_freed;
static _Atomic(void *) watched;

/* Every block is 8-aligned, the strictest alignment of anything the library
 * allocates; a guarded block must be a multiple of it to end on the page. */
#define GUARD_ALIGN 8u

/* A header before each malloc'd block keeps its size, to check the size
 * tw_free() gives back; 16 bytes keep the block 16-aligned. */
#define HEADER 16u

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* size bytes that end where a PROT_NONE page begins. */
static void *guarded_alloc(size_t size)
{
    size_t page = page_size(),
           body = (size + GUARD_ALIGN - 1) & ~(size_t)(GUARD_ALIGN - 1);
    size_t len = (body + page - 1) / page * page;
    char *base = mmap(NULL, len + page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (base == MAP_FAILED)
        return NULL;
    if (mprotect(base + len, page, PROT_NONE) != 0) {
        munmap(base, len + page);
        return NULL;
    }
    return base + len - body;
}

static void guarded_free(void *p, size_t size)
{
    size_t page = page_size(),
           body = (size + GUARD_ALIGN - 1) & ~(size_t)(GUARD_ALIGN - 1);
    char *end = (char *)p + body;
    char *base = (char *)((uintptr_t)p & ~(uintptr_t)(page - 1));

    /* A wrong size would not end on the guard page. */
    if ((uintptr_t)end % page != 0) {
        atomic_fetch_add(&alloc_log.bad_frees, 1);
        return;
    }
    munmap(base, (size_t)(end - base) + page);
}

static void *counted_alloc(void *ctx, size_t size)
{
    unsigned long call = atomic_fetch_add(&alloc_log.calls, 1) + 1;
    void *p;

    if (call == atomic_load(&alloc_log.fail_at))
        return NULL;
    if (ctx) {
        p = guarded_alloc(size);
    } else {
        p = malloc(HEADER + size);
        if (p) {
            *(size_t *)p = size;
            p = (char *)p + HEADER;
        }
    }
    if (p) {
        atomic_fetch_add(&alloc_log.allocs, 1);
        atomic_store(&alloc_log.last_size, size);
        if (atomic_exchange(&watch_armed, false))
            atomic_store(&watched, p);
    }
    return p;
}

static void counted_free(void *ctx, void *p, size_t size)
{
    atomic_fetch_add(&alloc_log.frees, 1);
    if (p && p == atomic_load(&watched))
        atomic_store(&watched_freed, true);
    if (ctx) {
        guarded_free(p, size);
        return;
    }
    p = (char *)p - HEADER;
    if (*(size_t *)p != size)
        atomic_fetch_add(&alloc_log.bad_frees, 1);
    free(p);
}

void alloc_install(bool guard)
{
    static int guard_ctx;
    struct tw_allocator a = {counted_alloc, counted_free,
                             guard ? &guard_ctx : NULL};

    cr_assert_eq(tw_set_allocator(&a), 0,
                 "tw_set_allocator() refused: the library allocated before "
                 "this test (run each test in a process of its own, not "
                 "with --no-fork)");
}

void alloc_fail_after(unsigned long k)
{
    atomic_store(&alloc_log.fail_at, k ? atomic_load(&alloc_log.calls) + k : 0);
}

unsigned long alloc_live(void)
{
    return atomic_load(&alloc_log.allocs) - atomic_load(&alloc_log.frees);
}

void alloc_watch_next(void)
{
    atomic_store(&watched, NULL);
    atomic_store(&watched_freed, false);
    atomic_store(&watch_armed, true);
}

void alloc_wait_watched_freed(const char *what)
{
    uint64_t give_up = now_ns() + 10 * SEC;

    cr_assert_not_null(atomic_load(&watched), "%s: no block handed out", what);
    while (!atomic_load(&watched_freed)) {
        cr_assert_lt(now_ns(), give_up, "%s: still held", what);
        sleep_ns(MS);
    }
}

unsigned long alloc_fail_each(int (*attempt)(void *ctx), void *ctx)
{
    unsigned long held = alloc_live(), k;
    int rc;

    for (k = 1;; k++) {
        cr_assert_lt(k, 100, "never succeeded");
        alloc_fail_after(k);
        rc = attempt(ctx);
        if (rc == 0)
            break;
        cr_assert_eq(rc, -ENOMEM, "allocation %lu failed: %d", k, rc);
        cr_assert_eq(alloc_live(), held,
                     "allocation %lu failed: %lu blocks held, %lu before", k,
                     alloc_live(), held);
    }
    alloc_fail_after(0);
    cr_assert_eq(atomic_load(&alloc_log.bad_frees), 0);
    return k - 1;
}

/* ---- out of address space --------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TW_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TW_TEST_SANITIZED 1
#endif
#endif

void limit_address_space(size_t room)
{
    unsigned long pages = 0;
    struct rlimit rl;
    FILE *fp;

#ifdef TW_TEST_SANITIZED
    cr_skip_test("the sanitizers reserve more address space than any cap");
#endif
    if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload"))
        cr_skip_test("valgrind manages the address space itself");
    fp = fopen("/proc/self/statm", "r");
    cr_assert_not_null(fp);
    cr_assert_eq(fscanf(fp, "%lu", &pages), 1);
    fclose(fp);
    rl.rlim_cur = rl.rlim_max = pages * page_size() + room;
    cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
}

/* LeakSanitizer asks this at exit whether to look for leaks. Criterion's
 * runner process (the parent, which runs no test) leaks 48 bytes of its own
 * now and then, which failed `make test SAN=address,undefined` with every
 * test passing; the children that run the tests carry BoxFort's BXFI_MAP
 * in their environment and keep the check. Unused outside ASan builds. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return getenv("BXFI_MAP") == NULL;
}

#ifdef TW_COVERAGE
/* libgcov's writer of the counters (a --coverage build: tests/extra.mk). */
void __gcov_dump(void);
#endif

_Noreturn void child_exit(int code)
{
#ifdef TW_COVERAGE
    __gcov_dump();
#endif
    _exit(code);
}
