/*
 * The runner. For each (workload, variant, size) it builds the operation
 * sequence once and replays it on every implementation.
 *
 * Interleaved repetitions: the row runs round by round, the first
 * repetition of every implementation, then the second of every one, and so
 * on, every other round in reverse order. Each repetition is one call of
 * the workload's run() (plan.reps 1, plan.round its number), adding to the
 * cell's one result, so every implementation's median is taken over the
 * same stretches of time: this machine switches between two speeds (about
 * 1.5x apart) from outside, and a switch then moves every implementation
 * alike instead of making a false ratio between two of them. A workload
 * that keeps state between its repetitions (churn and rearm: the filled
 * context) keeps it in the plan, and the runner destroys that context
 * after the cell's last call.
 *
 * The budget: each cell (one implementation on one sequence) may take about
 * budget_s of wall time, counted over its own calls only. Before a row, the
 * time one repetition took at the previous size is scaled linearly to this
 * size (to the work a repetition does there, wl_rep_work(): expire repeats
 * its cycle below 10^5 timers); a cell whose single repetition would not fit is
 * skipped with a note saying so, and otherwise the repetitions are cut to what
 * fits (at least one); an untimed warm-up repetition comes first (in the first
 * round) only when it is known to be cheap. In the later rounds, a repetition
 * of at most a hundredth of the budget gets a warm-up of its own, since the
 * other implementations' repetitions in between leave the caches cold, which
 * weighs on a repetition of a few ms and not on a long one. After each
 * call, a cell gets another only if a repetition as long as its last (from
 * its wl_more() on: not what the first call does once before, such as a
 * fill or a warm-up), with its warm-up, still fits in what is left of its
 * budget.
 * The prediction is only a guide: costs that grow faster than n (a hashed
 * wheel whose buckets leave the cache) can exceed it, and a cell with no
 * smaller size before it has nothing to scale from. The bound is the hard
 * stop (stop.h), armed before each call with what is left of the cell's
 * budget: past it a cell gives up in the middle of a repetition, keeps the
 * repetitions it finished, gets no more calls, and notes what a whole one
 * would have taken, which then predicts the larger sizes. Nothing is ever
 * extrapolated into a result.
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

    /* One line rewritten in place on a terminal; nothing in a log. */
    if (pr->quiet || !pr->tty)
        return;
    fprintf(stderr, "\r[%3u/%u %4.0fs] %-9s %-4s n=%-9llu %-10s\033[K",
            pr->done, pr->total, el, wl->name,
            wl->nvariants > 1 ? wl->variants[variant] : "",
            (unsigned long long)n, what);
}

/* One implementation's cell of the row being run, between its calls. */
struct cell {
    struct wl_plan plan; /* what each call may do */
    unsigned reps;       /* repetitions planned */
    bool warmup;         /* an untimed repetition before the first */
    bool on;             /* another repetition is to come */
    unsigned warmups;    /* untimed repetitions done */
    double spent_s;      /* wall time of its calls so far */
    double rep_s;        /* the last repetition's wall time */
    struct wl_result out;
};

/* Plan one cell from the previous size's cost; off: skip it (noted). */
static void plan_cell(const struct run_config *cfg, const struct history *h,
                      uint64_t n, struct cell *c, const struct workload *wl)
{
    double budget = cfg->p.budget_s, pred = 0;

    /* No warm-up before the first size: its cost is unknown, and the
     * median of the repetitions absorbs one cold run. */
    memset(c, 0, sizeof(*c));
    c->plan.budget_s = budget;
    c->reps = cfg->p.reps;
    c->on = true;
    if (h->n)
        pred = h->rep_s * (double)wl_rep_work(wl, n) /
               (double)wl_rep_work(wl, h->n);
    if (pred > budget) {
        wl_note_all(&c->out, wl,
                    "not run: one repetition would take about "
                    "%.0f s (scaled from n=%llu), over the cell budget of "
                    "%g s (see --budget)",
                    pred, (unsigned long long)h->n, budget);
        c->on = false;
        return;
    }
    if (pred > 0) {
        unsigned fit = (unsigned)(budget / pred);

        c->reps = fit < c->reps ? (fit ? fit : 1) : c->reps;
        /* Warm up only when it costs little of the budget. */
        c->warmup = pred * (c->reps + 1) <= budget && pred <= budget / 4;
    }
}

static unsigned reps_done(const struct wl_result *out, unsigned nmetrics)
{
    unsigned most = 0;

    for (unsigned m = 0; m < nmetrics; m++)
        most = out->nrep[m] > most ? out->nrep[m] : most;
    return most;
}

/* Repetition r of one cell: one call of run(), within what is left of the
 * cell's budget. Turns the cell off when it got nothing from this call (not
 * run, failed, stopped), when r was its last planned repetition, or when
 * another repetition as long as this one (from its wl_more() to the end of
 * the call: what the cell's first call does once, the fill, the warm-up,
 * comes before), with its warm-up if it gets one, would not end within the
 * budget. */
static void run_rep(const struct workload *wl, const struct impl *im, void *seq,
                    struct cell *c, unsigned r)
{
    unsigned before = reps_done(&c->out, wl->nmetrics);
    uint64_t t0 = clock_now_ns();
    double next_s;

    c->plan.reps = 1;
    c->plan.round = r;
    /* After the first round, a short repetition gets its own warm-up:
     * other implementations ran since its last, and what that left in the
     * caches would weigh on a repetition of a few ms. */
    c->plan.warmup = r == 0 ? c->warmup : c->rep_s <= c->plan.budget_s / 100;
    c->warmups += c->plan.warmup;
    c->plan.stop_ns = t0 + (uint64_t)((c->plan.budget_s - c->spent_s) * 1e9);
    stop_arm(c->plan.stop_ns);
    wl->run(seq, im, &c->plan, &c->out);
    c->rep_s = (double)(clock_now_ns() - c->plan.rep_ns) / 1e9;
    c->spent_s += (double)(clock_now_ns() - t0) / 1e9;
    next_s = c->rep_s <= c->plan.budget_s / 100 ? 2 * c->rep_s : c->rep_s;
    c->on = !stop_hit() && reps_done(&c->out, wl->nmetrics) > before &&
            r + 1 < c->reps && c->spent_s + next_s <= c->plan.budget_s;
}

/* After a cell's last call: what one repetition cost, for the next size,
 * and the note of a cell stopped at its budget. */
static void end_cell(const struct workload *wl, const struct impl *im,
                     struct history *h, uint64_t n, struct cell *c)
{
    unsigned reps = reps_done(&c->out, wl->nmetrics);

    if (c->plan.ctx)
        im->destroy(c->plan.ctx);
    h->n = n;
    h->rep_s = c->spent_s / (reps + c->warmups > 0 ? reps + c->warmups : 1);
    if (stop_hit()) {
        h->rep_s = stop_estimate_s();
        wl_note_all(&c->out, wl,
                    "%s: stopped at the cell budget of %g s (see "
                    "--budget); one repetition would take about %.3g s",
                    reps ? "fewer repetitions" : "not run", c->plan.budget_s,
                    h->rep_s);
    }
    stop_arm(0);
}

/* One row: every implementation on the same sequence, repetition by
 * repetition: the first of each, then the second of each, and so on, every
 * other round in reverse order, so that a change of the machine's speed
 * falls on every implementation alike. */
static void run_row(const struct run_config *cfg, unsigned w, unsigned v,
                    uint64_t n, void *seq, struct results *rs,
                    struct progress *pr)
{
    static struct cell cell[RUNNER_MAX_IMPLS];
    const struct workload *wl = cfg->wl[w];
    unsigned rounds = 0;

    for (unsigned i = 0; i < cfg->nim; i++) {
        plan_cell(cfg, &hist[w][v][i], n, &cell[i], wl);
        rounds = cell[i].reps > rounds ? cell[i].reps : rounds;
    }
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned k = 0; k < cfg->nim; k++) {
            unsigned i = r % 2 ? cfg->nim - 1 - k : k;

            if (!cell[i].on)
                continue;
            show(pr, wl, v, n, cfg->im[i]->name);
            run_rep(wl, cfg->im[i], seq, &cell[i], r);
            if (!cell[i].on)
                end_cell(wl, cfg->im[i], &hist[w][v][i], n, &cell[i]);
        }
    for (unsigned i = 0; i < cfg->nim; i++) {
        results_add_cell(rs, wl, v, cfg->im[i], n, &cell[i].out);
        pr->done++;
    }
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

                run_row(cfg, w, v, n[k], seq, rs, &pr);
                wl->release(seq);
            }
    }
    if (pr.tty && !pr.quiet)
        fprintf(stderr, "\r[%u/%u %4.0fs] done\033[K\n", pr.done, pr.total,
                (double)(clock_now_ns() - pr.t0) / 1e9);
}
