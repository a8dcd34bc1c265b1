/*
 * svcbench.h: what the service benchmark's files share: the implementations
 * table, the clock and CPU readings, the random delays, result rows.
 * svcbench.c holds the service's own workloads and the driver; figures.c the
 * workloads measured beside Netty's HashedWheelTimer (bench/netty/),
 * fresh.c and rpc.c two more; helpers.c what they all call (and it calls
 * none of them).
 */
#ifndef SVCBENCH_H
#define SVCBENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "timewheel.h"

#define MS UINT64_C(1000000)
#define SEC (1000 * MS)
#define HOUR (3600 * SEC)

struct impl {
    const char *name;
    enum tw_mode mode;
};

/* Sizes of one run: the full one and --quick (for CI and make bench). */
struct sizes {
    uint64_t throughput_total; /* schedules per throughput run */
    uint64_t latency_ns;       /* length of the latency run */
    uint64_t idle_ns;          /* length of the idle measurement */
    uint64_t stress_ns;        /* length of the stress run */
    uint64_t timers;           /* N of schedule, cancel, memory, lateness,
                                * wakeups (--n changes it) */
    uint64_t lateness_ns;      /* probe stream of the lateness workload */
    uint64_t wakeups_ns;       /* idle window of the wakeups workload */
};

/* ---- helpers.c ---- */
uint64_t now_ns(void);
void sleep_until(uint64_t t);
/* CPU time of the whole process (all threads), ns: getrusage. */
uint64_t cpu_ns(void);
/* CPU time of the calling thread, ns. */
uint64_t thread_cpu_ns(void);
uint64_t next_rand(uint64_t *x);
int cmp_u64(const void *a, const void *b);

/* A result row: printed, and appended to the CSV file if one is open. */
void emit(const char *workload, const char *impl, uint64_t n,
          const char *metric, double value, const char *unit);
/* --csv FILE: open (header written if empty; exits on failure), close. */
void emit_open_csv(const char *path);
void emit_close_csv(void);
/* A service of the mode with `threads` executor threads; exits on failure.
 * Unbounded when the run holds more timers than the default bound would:
 * make_bound() says how many it holds at most. */
struct tw_service *make(enum tw_mode mode, unsigned threads);
void make_bound(uint64_t timers);
void must(int rc, const char *what);
void nop_cb(struct tw_handle *h, void *arg);
/* tw_service_schedule(), retried after 100 us while the service refuses
 * with -EAGAIN (as a producer that must not drop the timer would; the wait
 * counts in the caller's time); exits on any other error. */
void put(struct tw_service *s, uint64_t delay, tw_service_callback *cb,
         void *arg, struct tw_handle **out);
/* Refusals retried by put() since refusals_reset(). */
uint64_t refusals(void);
void refusals_reset(void);
/* Bytes the allocator has handed out and not had back. */
uint64_t allocated_bytes(void);

/* ---- the workload files ---- */

/* The workloads of figures.c, run for one implementation. */
void fig_schedule(const struct impl *im, const struct sizes *sz, int warmup);
void fig_cancel(const struct impl *im, const struct sizes *sz, int warmup);
void fig_rearm(const struct impl *im, const struct sizes *sz, int warmup);
void fig_memory(const struct impl *im, const struct sizes *sz, int warmup);
void fig_lateness(const struct impl *im, const struct sizes *sz);
void fig_wakeups(const struct impl *im, const struct sizes *sz);
void fig_flood(const struct impl *im, const struct sizes *sz);
void fig_fire(const struct impl *im, const struct sizes *sz);
/* fresh.c: a producer thread new to the service against a warm one. */
void fig_fresh(const struct impl *im, const struct sizes *sz, int warmup);
/* rpc.c: the RPC pattern (steady churn of outstanding requests). */
void fig_rpc(const struct impl *im);

#endif
