/*
 * The service benchmark's helpers, shared by the driver (svcbench.c) and
 * the workload files (figures.c, fresh.c, rpc.c): clock and CPU readings,
 * random delays, result rows (the table on stdout and the CSV file),
 * making a service and scheduling on it, the allocator's count.
 *
 * They lived in svcbench.c, the file with main, which calls the workload
 * files while those called back into it for these (issue 29): here, every
 * other file calls into this one and this one into none of them.
 */
#define _DEFAULT_SOURCE /* getrusage's struct, CLOCK_THREAD_CPUTIME_ID,        \
                         * mallinfo2 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#ifdef TW_ALLOC_LIBC
#include <malloc.h>
#else
/* The library's private jemalloc (lib/core/jemalloc.c), its names
 * prefixed tw_je_: the service's blocks are there, reached in this static
 * link. */
#define JEMALLOC_NO_DEMANGLE 1
#include <jemalloc/jemalloc.h>
#endif

#include "svcbench.h"

/* --csv FILE: every row emit() prints is appended there too. */
static FILE *csv;

uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sleep_until(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

uint64_t cpu_ns(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

uint64_t thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

void emit(const char *workload, const char *impl, uint64_t n,
          const char *metric, double value, const char *unit)
{
    printf("%-20s %-7s %10llu  %-20s %14.3f %s\n", workload, impl,
           (unsigned long long)n, metric, value, unit);
    fflush(stdout);
    if (csv) {
        fprintf(csv, "%s,%s,%llu,%s,%.6g,%s\n", workload, impl,
                (unsigned long long)n, metric, value, unit);
        fflush(csv);
    }
}

void emit_open_csv(const char *path)
{
    long size;

    csv = fopen(path, "a");
    if (!csv) {
        perror(path);
        exit(2);
    }
    fseek(csv, 0, SEEK_END);
    size = ftell(csv);
    if (size == 0)
        fprintf(csv, "workload,impl,n,metric,value,unit\n");
}

void emit_close_csv(void)
{
    if (csv)
        fclose(csv);
    csv = NULL;
}

/* The most timers a run holds at once (--n, or the suite's size). */
static uint64_t run_timers;

void make_bound(uint64_t timers)
{
    run_timers = timers;
}

struct tw_service *make(enum tw_mode mode, unsigned threads)
{
    struct tw_service_config cfg;
    int err;
    struct tw_service *s;

    tw_service_config_init(&cfg, mode);
    cfg.executor_threads = threads;
    /* A run of more timers than the default bound would hold (--n 1e7:
     * the default is 2^22) gets an unbounded service, as Netty's timer is:
     * otherwise its schedules would wait forever for slots that timers an
     * hour away never give back. Runs within the bound keep the defaults. */
    if (2 * run_timers > TW_SERVICE_DEFAULT_MAX_PENDING)
        cfg.max_pending = 0;
    s = tw_service_create(&cfg, &err);
    if (!s) {
        fprintf(stderr, "svcbench: create: %s\n", tw_strerror(err));
        exit(2);
    }
    return s;
}

void must(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "svcbench: %s: %s\n", what, tw_strerror(rc));
        exit(2);
    }
}

/* Schedules refused with -EAGAIN (the service bounds how far its worker may
 * lag) and retried, since the last reset. */
static atomic_uint_fast64_t refused;

uint64_t refusals(void)
{
    return atomic_load(&refused);
}

void refusals_reset(void)
{
    atomic_store(&refused, 0);
}

void put(struct tw_service *s, uint64_t delay, tw_service_callback *cb,
         void *arg, struct tw_handle **out)
{
    int rc;

    while ((rc = tw_service_schedule(s, delay, cb, arg, out)) == -EAGAIN) {
        atomic_fetch_add_explicit(&refused, 1, memory_order_relaxed);
        sleep_until(now_ns() + 100000);
    }
    must(rc, "schedule");
}

void nop_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
}

int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* Bytes the allocator has handed out and not had back. jemalloc counts
 * whole size classes, and blocks cached per thread as allocated (a few
 * hundred KB at most, under 1 byte a timer at 10^6). */
uint64_t allocated_bytes(void)
{
#ifdef TW_ALLOC_LIBC
    return mallinfo2().uordblks;
#else
    uint64_t epoch = 1;
    size_t len = sizeof(epoch), bytes = 0;

    je_mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    je_mallctl("epoch", &epoch, &len, &epoch, len);
    len = sizeof(bytes);
    if (je_mallctl("stats.allocated", &bytes, &len, NULL, 0))
        return 0;
    return bytes;
#endif
}
