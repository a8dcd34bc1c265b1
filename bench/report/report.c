/*
 * report.md: the machine, the method, the targets, then per workload what
 * it models, its tables (median, times the fastest, min-max) and its plot.
 */
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "output.h"
#include "perfcount.h"
#include "targets.h"
#include "timewheel.h"

static void machine_section(FILE *f, const struct machine *m)
{
    fprintf(f,
            "## Machine\n\n| | |\n|---|---|\n"
            "| CPU | %s |\n| cores | %u |\n| memory | %.1f GiB |\n"
            "| kernel | %s |\n| compiler | gcc %s |\n| flags | `%s` |\n"
            "| allocator | %s (twbench and libtimewheel) |\n"
            "| timewheel | %s |\n| libuv | %s (Debian) |\n"
            "| libevent | %s (Debian) |\n| instructions counter | %s |\n"
            "| date | %s |\n\n",
            m->cpu, m->cores, m->mem_gib, m->kernel, m->compiler, m->cflags,
            m->allocator, tw_version_string(), m->libuv, m->libevent, m->perf,
            m->date);
}

static void method_section(FILE *f, const struct run_config *cfg)
{
    const struct bench_params *p = &cfg->p;

    fprintf(
        f,
        "## Method\n\n"
        "- Suite `%s` (%s), seed %llu, up to %u timed repetitions per cell, "
        "after one untimed warm-up repetition when the previous size shows "
        "that it costs less than a quarter of the cell's budget of %g s of "
        "wall time.\n"
        "- Every workload generates its operation sequence once, from the "
        "seed, before any timing; every implementation replays exactly that "
        "sequence through one table of operations (create, schedule, cancel, "
        "rearm, advance, next deadline, destroy). Each callback only counts "
        "itself. All implementations use a 1 ms tick, and every timer fires "
        "at the first 1 ms boundary at or after its deadline; the number "
        "fired is checked against the sequence, and a mismatch would be "
        "written in the cell's note.\n"
        "- Cells show the median over the repetitions, `(xR)` the ratio to "
        "the fastest implementation at that size, and `[min-max]` the "
        "spread. The machine is a shared virtual machine: a wide spread "
        "means interference, and the minimum is then the better guide. Times "
        "are wall-clock (CLOCK_MONOTONIC) around the timed "
        "part only, except longdelay, which is the thread's CPU time.\n"
        "- A cell whose one repetition, scaled linearly from the previous "
        "size, would exceed the budget is not run, and its note says so; "
        "otherwise the repetitions are cut to what fits (at least one). "
        "Nothing is extrapolated into a value.\n"
        "- libuv and libevent read CLOCK_MONOTONIC themselves. twbench "
        "defines `clock_gettime()` itself, and while their code runs it "
        "answers their monotonic clocks with the benchmark's virtual time; "
        "their code is the unmodified Debian build. So they run the same "
        "sequence on the same virtual clock as the others: schedule is "
        "`uv_timer_start` / `event_add` with the deadline as a timeout from "
        "the virtual now, cancel `uv_timer_stop` / `event_del`, re-arm the "
        "same start/add on an active timer, advance `uv_run(UV_RUN_NOWAIT)` "
        "/ `event_base_loop(EVLOOP_NONBLOCK)`. Consequences: each of their "
        "advances makes one `epoll_wait` system call with a zero timeout "
        "(about 0.2 us here, see longdelay), which is part of their figures "
        "where a workload advances often, as it is part of a real loop's "
        "cost; libevent no longer pays for reading the real clock in "
        "`event_add`; neither can bound the callbacks of one run, and "
        "libevent has no call telling its next timeout.\n"
        "- The same compiler flags for twbench and libtimewheel (above); "
        "libuv and libevent are Debian's builds (-O2).\n"
        "- Instructions per operation: %s%s%s.\n"
        "- Workload knobs: churn %llu pairs per repetition; rearm %llu "
        "messages per repetition at %llu per tick, idle timeout %.0f s; "
        "purgatory %.0f requests/s, latency p50 %.0f ms and p75 %.0f ms, "
        "timeout %.0f ms; burst at most %llu callbacks per bounded "
        "advance; longdelay %.0f s simulated; jump over %.0f days.\n\n",
        cfg->suite->name, cfg->suite->about, (unsigned long long)p->seed,
        p->reps, p->budget_s,
        perfcount_ok() ? "reported as instructions_per_* metrics"
                       : "not reported, because the counter is not "
                         "available here (",
        perfcount_why(), perfcount_ok() ? "" : ")",
        (unsigned long long)p->churn_pairs, (unsigned long long)p->rearm_msgs,
        (unsigned long long)p->rearm_per_tick, p->rearm_idle_ns / 1e9,
        p->purg_rate, p->purg_p50_ms, p->purg_p75_ms, p->purg_timeout_ms,
        (unsigned long long)p->burst_max_run, p->longdelay_span_ns / 1e9,
        p->jump_span_ns / 86400e9);
}

static void cell(FILE *f, const struct results *rs, const struct result *r)
{
    char v[32], lo[32], hi[32];

    if (!r) {
        fprintf(f, " |");
        return;
    }
    if (!r->reps) {
        fprintf(f, " (empty) |");
        return;
    }
    format_value(r->median, v, sizeof(v));
    format_value(r->min, lo, sizeof(lo));
    format_value(r->max, hi, sizeof(hi));
    fprintf(f, " %s (x%.2f) [%s-%s] |", v,
            format_ratio(r->median, results_best(rs, r),
                         r->wl->metrics[r->metric].higher_better),
            lo, hi);
}

static void metric_table(FILE *f, const struct results *rs,
                         const struct run_config *cfg, const struct result *r0)
{
    uint64_t sizes[32];
    size_t ns = results_sizes(rs, r0->wl->name, r0->name, sizes, 32);
    const struct wl_metric *m = &r0->wl->metrics[r0->metric];

    fprintf(f, "**%s** (%s, %s is better)\n\n| impl |", r0->name, m->unit,
            m->higher_better ? "higher" : "lower");
    for (size_t k = 0; k < ns; k++) {
        char sz[32];

        format_size(sizes[k], sz, sizeof(sz));
        fprintf(f, " n=%s |", sz);
    }
    fprintf(f, "\n|---|");
    for (size_t k = 0; k < ns; k++)
        fprintf(f, "---|");
    fprintf(f, "\n");
    for (unsigned i = 0; i < cfg->nim; i++) {
        fprintf(f, "| %s |", cfg->im[i]->name);
        for (size_t k = 0; k < ns; k++)
            cell(f, rs,
                 results_find(rs, r0->wl->name, r0->name, cfg->im[i]->name,
                              sizes[k]));
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

/* Notes of one workload, each (metric, implementation, note) once. */
static void notes(FILE *f, const struct results *rs, const struct workload *wl)
{
    bool any = false;

    for (size_t i = 0; i < rs->n; i++) {
        const struct result *r = &rs->r[i];
        bool seen = false;

        if (r->wl != wl || !r->note[0])
            continue;
        for (size_t j = 0; j < i && !seen; j++)
            seen = rs->r[j].wl == wl && rs->r[j].im == r->im &&
                   !strcmp(rs->r[j].name, r->name) &&
                   !strcmp(rs->r[j].note, r->note);
        if (seen)
            continue;
        if (!any)
            fprintf(f, "Notes:\n\n");
        any = true;
        fprintf(f, "- %s, %s: %s\n", r->im->name, r->name, r->note);
    }
    if (any)
        fprintf(f, "\n");
}

static void workload_section(FILE *f, const struct results *rs,
                             const struct run_config *cfg,
                             const struct workload *wl, const struct plots *pl)
{
    fprintf(f, "## %s\n\n%s\n\n", wl->name, wl->about);
    for (size_t i = 0; i < rs->n; i++) {
        const struct result *r = &rs->r[i];
        bool first = r->wl == wl;

        for (size_t j = 0; j < i && first; j++)
            first = rs->r[j].wl != wl || strcmp(rs->r[j].name, r->name);
        if (first)
            metric_table(f, rs, cfg, r);
    }
    for (unsigned k = 0; k < pl->n; k++)
        if (pl->wl[k] == wl)
            fprintf(f, "![%s](%s)\n\n", pl->file[k], pl->file[k]);
    notes(f, rs, wl);
}

bool output_report(const struct results *rs, const struct run_config *cfg,
                   const struct machine *m, const struct plots *pl,
                   const char *dir)
{
    FILE *f = output_open(dir, "report.md");

    if (!f)
        return false;
    fprintf(f,
            "# timewheel benchmark report\n\nGenerated by `%s` on %s. "
            "The data is in `results.csv` beside this file.\n\n",
            cfg->cmdline, m->date);
    machine_section(f, m);
    method_section(f, cfg);
    fprintf(f, "## Targets\n\n");
    targets_report(f, rs);
    fprintf(f, "\n");
    if (pl->why_not[0])
        fprintf(f, "Plots: %s.\n\n", pl->why_not);
    for (unsigned w = 0; w < cfg->nwl; w++)
        workload_section(f, rs, cfg, cfg->wl[w], pl);
    return fclose(f) == 0;
}
