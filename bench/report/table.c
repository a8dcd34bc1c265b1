/*
 * The terminal tables: one per workload metric (and variant), the
 * implementations as rows, the sizes as columns, each cell the median and
 * how many times slower than the fastest implementation at that size.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "output.h"

#define CELL_W 18

static void print_header(const struct result *r, const uint64_t *sizes,
                         size_t ns)
{
    const struct wl_metric *m = &r->wl->metrics[r->metric];

    printf("\n%s: %s (%s, %s is better; median of repetitions, "
           "x = times the fastest)\n",
           r->wl->name, r->name, m->unit,
           m->higher_better ? "higher" : "lower");
    printf("%-10s", "impl");
    for (size_t k = 0; k < ns; k++) {
        char sz[32], col[40];

        format_size(sizes[k], sz, sizeof(sz));
        snprintf(col, sizeof(col), "n=%s", sz);
        printf(" %*s", CELL_W, col);
    }
    printf("\n");
}

static void print_cell(const struct results *rs, const struct result *r)
{
    char v[32], cell[64];
    double ratio;

    if (!r || r->reps == 0) {
        printf(" %*s", CELL_W, r ? "not run" : "");
        return;
    }
    format_value(r->median, v, sizeof(v));
    ratio = format_ratio(r->median, results_best(rs, r),
                         r->wl->metrics[r->metric].higher_better);
    snprintf(cell, sizeof(cell), "%s (x%.2f)", v, ratio);
    printf(" %*s", CELL_W, cell);
}

/* Notes of the table's rows, each (implementation, note) once. */
static void print_notes(const struct results *rs, const struct result *first)
{
    for (size_t i = 0; i < rs->n; i++) {
        const struct result *r = &rs->r[i];
        bool seen = false;

        if (r->wl != first->wl || strcmp(r->name, first->name) || !r->note[0])
            continue;
        for (size_t j = 0; j < i && !seen; j++)
            seen = rs->r[j].wl == r->wl && rs->r[j].im == r->im &&
                   !strcmp(rs->r[j].name, r->name) &&
                   !strcmp(rs->r[j].note, r->note);
        if (!seen)
            printf("  note: %s: %s\n", r->im->name, r->note);
    }
}

static void print_table(const struct results *rs, const struct result *first,
                        const struct impl *const *impls, unsigned nimpls)
{
    uint64_t sizes[32];
    size_t ns = results_sizes(rs, first->wl->name, first->name, sizes, 32);

    print_header(first, sizes, ns);
    for (unsigned i = 0; i < nimpls; i++) {
        printf("%-10s", impls[i]->name);
        for (size_t k = 0; k < ns; k++)
            print_cell(rs, results_find(rs, first->wl->name, first->name,
                                        impls[i]->name, sizes[k]));
        printf("\n");
    }
    print_notes(rs, first);
}

void output_tables(const struct results *rs, const struct impl *const *impls,
                   unsigned nimpls)
{
    for (size_t i = 0; i < rs->n; i++) {
        bool first = true;

        for (size_t j = 0; j < i && first; j++)
            first = rs->r[j].wl != rs->r[i].wl ||
                    strcmp(rs->r[j].name, rs->r[i].name) != 0;
        if (first)
            print_table(rs, &rs->r[i], impls, nimpls);
    }
}
