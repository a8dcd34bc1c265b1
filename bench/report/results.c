/*
 * The result rows and the summary of repetitions.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Median, min and max of v[0..n), n > 0. */
static void summarise(const double *v, unsigned n, struct result *row)
{
    double s[WL_MAX_REPS];

    memcpy(s, v, n * sizeof(*s));
    qsort(s, n, sizeof(*s), by_value);
    row->median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    row->min = s[0];
    row->max = s[n - 1];
    row->reps = n;
}

void results_metric_name(const struct workload *wl, unsigned variant,
                         unsigned metric, char *buf, size_t len)
{
    if (wl->nvariants > 1)
        snprintf(buf, len, "%s_%s", wl->metrics[metric].name,
                 wl->variants[variant]);
    else
        snprintf(buf, len, "%s", wl->metrics[metric].name);
}

static struct result *new_row(struct results *rs)
{
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? 2 * rs->cap : 256;
        struct result *r = realloc(rs->r, cap * sizeof(*r));

        if (!r) {
            fprintf(stderr, "twbench: out of memory for results\n");
            exit(1);
        }
        rs->r = r;
        rs->cap = cap;
    }
    memset(&rs->r[rs->n], 0, sizeof(rs->r[0]));
    return &rs->r[rs->n++];
}

void results_add_cell(struct results *rs, const struct workload *wl,
                      unsigned variant, const struct impl *im, uint64_t n,
                      const struct wl_result *out)
{
    for (unsigned m = 0; m < wl->nmetrics; m++) {
        struct result *row;

        if (out->nrep[m] == 0 && out->note[m][0] == '\0')
            continue; /* not applicable here (no perf counter, ...) */
        row = new_row(rs);
        row->wl = wl;
        row->variant = variant;
        row->metric = m;
        results_metric_name(wl, variant, m, row->name, sizeof(row->name));
        row->im = im;
        row->n = n;
        row->median = row->min = row->max = NAN;
        if (out->nrep[m])
            summarise(out->rep[m], out->nrep[m], row);
        snprintf(row->note, sizeof(row->note), "%s", out->note[m]);
    }
}

const struct result *results_find(const struct results *rs, const char *wl,
                                  const char *metric, const char *impl,
                                  uint64_t n)
{
    for (size_t i = 0; i < rs->n; i++) {
        const struct result *r = &rs->r[i];

        if (r->n == n && strcmp(r->wl->name, wl) == 0 &&
            strcmp(r->name, metric) == 0 && strcmp(r->im->name, impl) == 0)
            return r;
    }
    return NULL;
}

static int by_size(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

size_t results_sizes(const struct results *rs, const char *wl,
                     const char *metric, uint64_t *sizes, size_t max)
{
    size_t k = 0;

    for (size_t i = 0; i < rs->n; i++) {
        const struct result *r = &rs->r[i];
        size_t j = 0;

        if (strcmp(r->wl->name, wl) || strcmp(r->name, metric))
            continue;
        while (j < k && sizes[j] != r->n)
            j++;
        if (j == k && k < max)
            sizes[k++] = r->n;
    }
    qsort(sizes, k, sizeof(*sizes), by_size);
    return k;
}

double results_best(const struct results *rs, const struct result *row)
{
    bool higher = row->wl->metrics[row->metric].higher_better;
    double best = NAN;

    for (size_t i = 0; i < rs->n; i++) {
        const struct result *r = &rs->r[i];

        if (r->wl != row->wl || r->n != row->n || r->reps == 0 ||
            strcmp(r->name, row->name) != 0)
            continue;
        if (isnan(best) || (higher ? r->median > best : r->median < best))
            best = r->median;
    }
    return best;
}

void results_free(struct results *rs)
{
    free(rs->r);
    *rs = (struct results){0};
}
