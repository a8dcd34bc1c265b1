/*
 * report.md: the machine, this run's parameters (the method itself is in
 * docs/benchmarks.md, which the report names), the targets, then per
 * workload what it models, its tables (median, times the fastest, min-max),
 * its plots and notes, and last the threaded service's results.
 */
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "impl.h"
#include "output.h"
#include "perfcount.h"
#include "targets.h"
#include "timewheel.h"

/* The machine, then a version row for every implementation whose table
 * names one (the others are this repository's, under timewheel). */
static void machine_section(FILE *f, const struct machine *m)
{
    fprintf(f,
            "## Machine\n\n| | |\n|---|---|\n"
            "| CPU | %s |\n| cores | %u |\n| memory | %.1f GiB |\n"
            "| kernel | %s |\n| compiler | gcc %s |\n| flags | `%s` |\n"
            "| allocator | %s (twbench and libtimewheel) |\n"
            "| timewheel | %s |\n",
            m->cpu, m->cores, m->mem_gib, m->kernel, m->compiler, m->cflags,
            m->allocator, tw_version_string());
    for (unsigned i = 0; i < bench_nimpls; i++)
        if (bench_impls[i]->version)
            fprintf(f, "| %s | %s |\n", bench_impls[i]->name,
                    bench_impls[i]->version());
    fprintf(f, "| instructions counter | %s |\n| date | %s |\n\n", m->perf,
            m->date);
}

static void method_section(FILE *f, const struct run_config *cfg)
{
    const struct bench_params *p = &cfg->p;

    fprintf(
        f,
        "## Method\n\n"
        "How the implementations are driven, what a cell shows and how the "
        "budget works is written once, in the repository's "
        "`docs/benchmarks.md` (sections \"The implementations\" and "
        "\"Repetitions and budgets\"). This run:\n\n"
        "- Suite `%s` (%s), seed %llu, up to %u timed repetitions per cell, "
        "a budget of %g s of wall time per cell.\n"
        "- Cells: the median over the repetitions, `(xR)` the ratio to the "
        "fastest implementation at that size, `[min-max]` the spread; "
        "\"not run\" with the reason in the notes below the table.\n"
        "- Instructions per operation: %s%s%s.\n"
        "- Workload knobs: churn %llu pairs per repetition; rearm %llu "
        "messages per repetition at %llu per tick, idle timeout %.0f s; "
        "purgatory %.0f requests/s, latency p50 %.0f ms and p75 %.0f ms, "
        "timeout %.0f ms; burst at most %llu callbacks per bounded "
        "advance; longdelay %.0f s simulated; jump over %.0f days.\n\n",
        cfg->suite->name, cfg->suite->about, (unsigned long long)p->seed,
        p->reps, p->budget_s,
        perfcount_ok() ? "reported as instructions_per_* metrics"
                       : "not reported (",
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
        fprintf(f, " not run |");
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

/* One CSV line as Markdown table cells: commas outside double quotes
 * separate cells, quotes are dropped, a '|' is escaped. */
static void csv_row_cells(FILE *f, const char *line)
{
    bool quoted = false;

    for (const char *c = line; *c; c++) {
        if (*c == '"')
            quoted = !quoted;
        else if (*c == ',' && !quoted)
            fputs(" | ", f);
        else if (*c == '|')
            fputs("\\|", f);
        else
            fputc(*c, f);
    }
}

/* The service's benchmark (bench/service/, run by make bench before
 * twbench) writes dir/service.csv: its rows as one table, or why not. */
static void service_section(FILE *f, const char *dir)
{
    char path[512], line[512];
    FILE *in;
    bool header = true;

    snprintf(path, sizeof(path), "%s/service.csv", dir);
    fprintf(f, "## The threaded service\n\n");
    in = fopen(path, "r");
    if (!in) {
        fprintf(f, "Not measured in this run: there is no `service.csv` "
                   "beside this report (`make bench` runs `svcbench` first and "
                   "writes it; `make bench-service` alone does too).\n\n");
        return;
    }
    fprintf(f, "From `service.csv` (`svcbench`, see `docs/service.md`):\n\n");
    while (fgets(line, sizeof(line), in)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0])
            continue;
        fprintf(f, "| ");
        csv_row_cells(f, line);
        fprintf(f, " |\n");
        if (header) {
            fprintf(f, "|");
            for (const char *c = line; *c; c++)
                if (*c == ',')
                    fprintf(f, "---|");
            fprintf(f, "---|\n");
        }
        header = false;
    }
    fclose(in);
    fprintf(f, "\n");
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
    service_section(f, dir);
    return fclose(f) == 0;
}
