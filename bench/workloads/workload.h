/*
 * The workload interface. A workload turns (variant, size) into one
 * operation sequence (prepare), replays it on one implementation while
 * timing it (run), and frees it (release). The runner (runner.c) calls
 * prepare once per (variant, size), then run once per repetition of each
 * implementation, round after round (the first repetition of every
 * implementation, then the second...), so every implementation replays the
 * same sequence in the same stretches of time. Each call adds its values to
 * the cell's one wl_result; a cell whose call adds none gets no more calls.
 */
#ifndef BENCH_WORKLOAD_H
#define BENCH_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "impl.h"

/* Knobs of the workloads; a suite (suite.c) sets them, options override. */
struct bench_params {
    uint64_t seed;
    unsigned reps;              /* timed repetitions per cell */
    double budget_s;            /* wall time one cell may take */
    uint64_t churn_pairs;       /* cancel+schedule pairs per repetition */
    uint64_t rearm_msgs;        /* messages per repetition */
    uint64_t rearm_per_tick;    /* messages per 1 ms tick */
    uint64_t rearm_idle_ns;     /* idle timeout */
    double purg_rate;           /* request arrivals per second */
    double purg_p50_ms;         /* completion latency, median */
    double purg_p75_ms;         /* completion latency, 75th percentile */
    double purg_timeout_ms;     /* request timeout */
    uint64_t burst_max_run;     /* callbacks per bounded advance */
    uint64_t longdelay_span_ns; /* simulated time of longdelay */
    uint64_t jump_span_ns;      /* the long jump */
    uint64_t scale_ops;         /* cancels, pairs, re-arms per size (scale) */
    uint64_t slice_run;         /* callbacks per sliced advance (stall) */
    uint64_t slice_work;        /* work units per sliced advance (stall) */
};

struct wl_metric {
    const char *name; /* "_<variant>" is appended when there are variants */
    const char *unit;
    bool higher_better;
    /* For a person: "what, unit per what" ("Cancel + reschedule, ns per
     * pair"); the plots' titles, and after its last comma their axis. */
    const char *title;
};

/* Metrics in this unit exist only where the instruction counter works. */
#define WL_UNIT_INSTRUCTIONS "instructions"

#define WL_MAX_METRICS 10
#define WL_MAX_REPS 64
#define WL_NOTE 320

/* What one cell measured: every repetition of every metric, and a note per
 * metric (the reason a metric is empty, or a remark on how it was
 * measured). A metric with no value and no note is not reported at all. */
struct wl_result {
    unsigned nrep[WL_MAX_METRICS];
    double rep[WL_MAX_METRICS][WL_MAX_REPS];
    char note[WL_MAX_METRICS][WL_NOTE];
};

/* How much one call of run() may do. The runner calls run() once per
 * repetition (reps 1), round counting them; a workload keeps what it must
 * between the calls of one cell in ctx and keep. */
struct wl_plan {
    unsigned reps;    /* timed repetitions wanted */
    unsigned round;   /* which repetition of the cell this call is, from 0 */
    bool warmup;      /* one untimed repetition first */
    double budget_s;  /* the cell's budget */
    uint64_t stop_ns; /* no repetition may end after this (real clock) */
    uint64_t rep_ns;  /* wl_more(): when the last repetition started */
    uint64_t keep;    /* the workload's own, 0 at a cell's first call */
    void *ctx; /* an im context kept between the calls; NULL at the first,
                * the runner destroys it after the last */
};

/* The suites (harness/suite.c); a workload lists its sizes for each. */
enum suite_id { SUITE_QUICK, SUITE_FULL, SUITE_SMOKE, SUITE_COUNT };
#define WL_MAX_SIZES 8

struct workload {
    const char *name;
    const char *about;   /* what it models and why: a report paragraph */
    const char *x_label; /* what n counts */
    unsigned nvariants;
    const char *const *variants; /* labels; NULL when there is one */
    uint64_t sizes[SUITE_COUNT][WL_MAX_SIZES]; /* per suite, 0-terminated */
    bool fixed_size; /* --sizes does not apply (the size defines it) */
    /* A repetition below this size repeats its whole cycle until it has
     * done this many timers' worth (wl_rep_work()); 0: one cycle always.
     * The runner scales its budget predictions by that work, not by n. */
    uint64_t rep_min;
    bool log_values; /* plot values on a log axis however close they are */
    bool plot_each_metric; /* a plot per metric, not only the first's */
    unsigned nmetrics;
    const struct wl_metric *metrics;
    void *(*prepare)(const struct bench_params *p, unsigned variant,
                     uint64_t n);
    void (*run)(void *seq, const struct impl *im, struct wl_plan *plan,
                struct wl_result *out);
    void (*release)(void *seq);
};

/* .nmetrics and .metrics of a workload table, from one array. */
#define WL_METRICS(array)                                                      \
    .nmetrics = sizeof(array) / sizeof((array)[0]), .metrics = (array)

/* One table per workloads/wl_*.c, each named in workloads/wl_list.h. */
#define WORKLOAD(x) extern const struct workload wl_##x;
#include "wl_list.h"
#undef WORKLOAD

/* Every workload, in the order of the report. */
extern const struct workload *const bench_workloads[];
extern const unsigned bench_nworkloads;

const struct workload *workload_find(const char *name);

/* Helpers for the workloads (helpers.c). */

/* Record one repetition's value of metric m. */
void wl_add(struct wl_result *out, unsigned m, double value);
/* Add to metric m's note (printf format), unless it says that already. */
void wl_note(struct wl_result *out, unsigned m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Note on every metric of wl that can have a value here (printf format). */
void wl_note_all(struct wl_result *out, const struct workload *wl,
                 const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* im->create(), or NULL with the reason noted on metrics 0..nmetrics-1. */
void *wl_create(const struct impl *im, uint64_t n, unsigned nmetrics,
                struct wl_result *out);
/* The timers' worth of work one repetition of wl does at size n: n, or
 * whole cycles of n up to wl->rep_min. */
uint64_t wl_rep_work(const struct workload *wl, uint64_t n);
/* Whether repetition r (0-based, warm-up not counted) should start: the
 * first always does, a later one only if another repetition as long as the
 * last still ends within the budget. */
bool wl_more(struct wl_plan *plan, unsigned r);
/* Note on metric m that fired != expected (a bug somewhere). */
void wl_check_fired(struct wl_result *out, unsigned m, uint64_t fired,
                    uint64_t expected);

#endif /* BENCH_WORKLOAD_H */
