/*
 * The runner. For each (workload, variant, size) it builds the operation
 * sequence once and replays it on every implementation in turn.
 *
 * The budget: each cell (one implementation on one sequence) may take about
 * budget_s of wall time. Before a cell, the time one repetition took at the
 * previous size is scaled linearly to this size; a cell whose single
 * repetition would not fit is skipped with a note saying so, and otherwise
 * the repetitions are cut to what fits (at least one); an untimed warm-up
 * repetition comes first only when it is known to be cheap. The prediction
 * is only a guide: costs that grow faster than n (a hashed wheel whose
 * buckets leave the cache) can exceed it, and a cell with no smaller size
 * before it has nothing to scale from. The bound is the hard stop
 * (stop.h): past its budget a cell gives up in the middle of a repetition,
 * keeps the repetitions it finished, and notes what a whole one would have
 * taken, which then predicts the larger sizes. Nothing is ever extrapolated
 * into a result.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "runner.h"
#include "stop.h"

/* What the last size cost, per (workload, variant, implementation). */
struct history {
    uint64_t n;
    double rep_s; /* wall seconds per repetition, warm-up included */
};

#define MAX_VARIANTS 4
static struct history hist[RUNNER_MAX_WORKLOADS][MAX_VARIANTS]
                          [RUNNER_MAX_IMPLS];

struct progress {
    unsigned done, total;
    uint64_t t0;
    bool tty, quiet;
};

static size_t sizes_of(const struct run_config *cfg, const struct workload *wl,
                       uint64_t *n)
{
    if (cfg->nsizes && !wl->fixed_size) {
        memcpy(n, cfg->sizes, cfg->nsizes * sizeof(*n));
        return cfg->nsizes;
    }
    return suite_sizes(cfg->suite, wl, n, RUNNER_MAX_SIZES);
}

static void show(struct progress *pr, const struct workload *wl,
                 unsigned variant, uint64_t n, const char *what)
{
    double el = (double)(clock_now_ns() - pr->t0) / 1e9;

    if (pr->quiet)
        return;
    fprintf(stderr, "%s[%3u/%u %4.0fs] %-9s %-4s n=%-9llu %-10s%s",
            pr->tty ? "\r" : "", pr->done, pr->total, el, wl->name,
            wl->nvariants > 1 ? wl->variants[variant] : "",
            (unsigned long long)n, what, pr->tty ? "\033[K" : "\n");
}

/* Plan one cell from the previous size's cost; false: skip it (noted). */
static bool plan_cell(const struct run_config *cfg, const struct history *h,
                      uint64_t n, struct wl_plan *plan, struct wl_result *out,
                      const struct workload *wl)
{
    double budget = cfg->p.budget_s, pred = 0;

    /* No warm-up before the first size: its cost is unknown, and the
     * median of the repetitions absorbs one cold run. */
    *plan = (struct wl_plan){
        .reps = cfg->p.reps, .warmup = false, .budget_s = budget};
    if (h->n)
        pred = h->rep_s * (double)n / (double)h->n;
    if (pred > budget) {
        wl_note_all(out, wl,
                    "not run: one repetition would take about "
                    "%.0f s (scaled from n=%llu), over the cell budget of "
                    "%g s (see --budget)",
                    pred, (unsigned long long)h->n, budget);
        return false;
    }
    if (pred > 0) {
        unsigned fit = (unsigned)(budget / pred);

        plan->reps = fit < plan->reps ? (fit ? fit : 1) : plan->reps;
        /* Warm up only when it costs little of the budget. */
        plan->warmup = pred * (plan->reps + 1) <= budget && pred <= budget / 4;
    }
    plan->stop_ns = clock_now_ns() + (uint64_t)(budget * 1e9);
    stop_arm(plan->stop_ns);
    return true;
}

static unsigned reps_done(const struct wl_result *out, unsigned nmetrics)
{
    unsigned most = 0;

    for (unsigned m = 0; m < nmetrics; m++)
        most = out->nrep[m] > most ? out->nrep[m] : most;
    return most;
}

static void run_cell(const struct run_config *cfg, unsigned w, unsigned v,
                     unsigned i, uint64_t n, void *seq, struct results *rs)
{
    const struct workload *wl = cfg->wl[w];
    struct history *h = &hist[w][v][i];
    struct wl_result out;
    struct wl_plan plan;

    memset(&out, 0, sizeof(out));
    if (plan_cell(cfg, h, n, &plan, &out, wl)) {
        uint64_t t0 = clock_now_ns();
        unsigned reps;

        wl->run(seq, cfg->im[i], &plan, &out);
        reps = reps_done(&out, wl->nmetrics) + plan.warmup;
        h->n = n;
        h->rep_s = (double)(clock_now_ns() - t0) / 1e9 / (reps ? reps : 1);
        if (stop_hit()) {
            h->rep_s = stop_estimate_s();
            wl_note_all(&out, wl,
                        "%s: stopped at the cell budget of %g s (see "
                        "--budget); one repetition would take about %.3g s",
                        reps_done(&out, wl->nmetrics) ? "fewer repetitions"
                                                      : "not run",
                        plan.budget_s, h->rep_s);
        }
        stop_arm(0);
    }
    results_add_cell(rs, wl, v, cfg->im[i], n, &out);
}

static unsigned count_cells(const struct run_config *cfg)
{
    unsigned total = 0;
    uint64_t n[RUNNER_MAX_SIZES];

    for (unsigned w = 0; w < cfg->nwl; w++)
        total +=
            cfg->wl[w]->nvariants * sizes_of(cfg, cfg->wl[w], n) * cfg->nim;
    return total;
}

void runner_run(const struct run_config *cfg, struct results *rs)
{
    struct progress pr = {.total = count_cells(cfg),
                          .t0 = clock_now_ns(),
                          .tty = isatty(2),
                          .quiet = cfg->quiet};
    uint64_t n[RUNNER_MAX_SIZES];

    for (unsigned w = 0; w < cfg->nwl; w++) {
        const struct workload *wl = cfg->wl[w];
        size_t ns = sizes_of(cfg, wl, n);

        for (unsigned v = 0; v < wl->nvariants && v < MAX_VARIANTS; v++)
            for (size_t k = 0; k < ns; k++) {
                show(&pr, wl, v, n[k], "(generating)");
                void *seq = wl->prepare(&cfg->p, v, n[k]);

                for (unsigned i = 0; i < cfg->nim; i++) {
                    show(&pr, wl, v, n[k], cfg->im[i]->name);
                    run_cell(cfg, w, v, i, n[k], seq, rs);
                    pr.done++;
                }
                wl->release(seq);
            }
    }
    if (pr.tty && !pr.quiet)
        fprintf(stderr, "\r[%u/%u %4.0fs] done\033[K\n", pr.done, pr.total,
                (double)(clock_now_ns() - pr.t0) / 1e9);
}
