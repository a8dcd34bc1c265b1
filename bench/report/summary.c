/*
 * The table twbench prints at the end of a run: one row per workload (and
 * variant), its main metric (the workload's first; its name says its unit)
 * at the largest size the first implementation measured: that one's median,
 * then every other's as a ratio to it, oriented so that above 1 is always
 * worse (its time over ours, or our rate over its). Every metric at every size
 * is in report.md and results.csv, and `twbench --tables` prints them all.
 */
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "output.h"

#define LABEL_W 34
#define FIRST_W 12
#define RATIO_W 10

static void print_header(const struct impl *const *impls, unsigned nimpls)
{
    printf("\nThe main figure of each workload at its largest size (median "
           "of the repetitions);\n%s's value, then each other's cost as a "
           "multiple of %s's (above 1: worse).\nEvery metric and size: "
           "report.md, or twbench --tables.\n\n",
           impls[0]->name, impls[0]->name);
    printf("%-*s %*s", LABEL_W, "workload: metric at n", FIRST_W,
           impls[0]->name);
    for (unsigned i = 1; i < nimpls; i++)
        printf(" %*s", RATIO_W, impls[i]->name);
    printf("\n");
}

/* The largest size at which the first implementation has a value; 0 when
 * it has none. */
static uint64_t largest_size(const struct results *rs, const char *wl,
                             const char *metric, const char *first)
{
    uint64_t sizes[32];
    size_t ns = results_sizes(rs, wl, metric, sizes, 32);

    for (size_t k = ns; k > 0; k--) {
        const struct result *r =
            results_find(rs, wl, metric, first, sizes[k - 1]);

        if (r && r->reps)
            return sizes[k - 1];
    }
    return 0;
}

static void print_ratio(const struct result *ours, const struct result *r)
{
    char cell[32];
    bool higher = ours->wl->metrics[ours->metric].higher_better;

    if (!r || !r->reps || r->median <= 0 || ours->median <= 0) {
        printf(" %*s", RATIO_W, "-");
        return;
    }
    snprintf(cell, sizeof(cell), "%.2f",
             higher ? ours->median / r->median : r->median / ours->median);
    printf(" %*s", RATIO_W, cell);
}

static void print_row(const struct results *rs, const struct result *first,
                      const struct impl *const *impls, unsigned nimpls)
{
    uint64_t n = largest_size(rs, first->wl->name, first->name, impls[0]->name);
    const struct result *ours;
    char label[160], sz[32], v[32];

    if (n == 0)
        return;
    ours = results_find(rs, first->wl->name, first->name, impls[0]->name, n);
    format_size(n, sz, sizeof(sz));
    format_value(ours->median, v, sizeof(v));
    snprintf(label, sizeof(label), "%s: %s at %s", first->wl->name, first->name,
             sz);
    printf("%-*s %*s", LABEL_W, label, FIRST_W, v);
    for (unsigned i = 1; i < nimpls; i++)
        print_ratio(ours, results_find(rs, first->wl->name, first->name,
                                       impls[i]->name, n));
    printf("\n");
}

void output_summary(const struct results *rs, const struct impl *const *impls,
                    unsigned nimpls)
{
    if (nimpls == 0)
        return;
    print_header(impls, nimpls);
    for (size_t i = 0; i < rs->n; i++) {
        const struct result *r = &rs->r[i];
        bool first = r->metric == 0;

        for (size_t j = 0; j < i && first; j++)
            first = rs->r[j].wl != r->wl || strcmp(rs->r[j].name, r->name);
        if (first)
            print_row(rs, r, impls, nimpls);
    }
}
