/*
 * Everything twbench writes from the results: the terminal tables
 * (table.c, summary.c), results.csv (csv.c), the gnuplot plots (plot.c) and
 * report.md (report.c).
 */
#ifndef BENCH_OUTPUT_H
#define BENCH_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "impl.h"
#include "machine.h"
#include "results.h"
#include "runner.h"

#define OUTPUT_MAX_PLOTS 32

/* The plots made, for the report to link. */
struct plots {
    unsigned n;
    char file[OUTPUT_MAX_PLOTS][96]; /* relative to the output folder */
    const struct workload *wl[OUTPUT_MAX_PLOTS];
    unsigned variant[OUTPUT_MAX_PLOTS];
    char why_not[800]; /* set when a plot could not be made */
};

/* Open dir/name for writing; NULL after printing why. */
FILE *output_open(const char *dir, const char *name);

/* Every table: one per workload metric (and variant), sizes as columns. */
void output_tables(const struct results *rs, const struct impl *const *impls,
                   unsigned nimpls);
/* One table: each workload's main metric (and variant) at its largest size
 * measured, the implementations as columns. */
void output_summary(const struct results *rs, const struct impl *const *impls,
                    unsigned nimpls);
/* Write dir/results.csv; false on error (printed). */
bool output_csv(const struct results *rs, const char *dir);
/* Write the data and gnuplot scripts under dir/plots, run gnuplot. */
void output_plots(const struct results *rs, const struct run_config *cfg,
                  const char *dir, struct plots *pl);
/* Write dir/report.md; false on error (printed). */
bool output_report(const struct results *rs, const struct run_config *cfg,
                   const struct machine *m, const struct plots *pl,
                   const char *dir);

#endif /* BENCH_OUTPUT_H */
