/*
 * The plots, for a person: for each workload (and each expire range), a
 * data file and a gnuplot script in <out>/plots/, then gnuplot run on the
 * script. The title says what was measured in words, its unit and which way
 * is better; each axis says what it counts, in which unit, and "log scale"
 * when it is one. A workload measured at several sizes gets cost against
 * size, one line per implementation; one measured at a single size gets the
 * implementations side by side, N in the title, bars on a linear axis and
 * points on a log one. Every mark is the median with min-max error bars; a
 * cell not run is labelled "not run" on the plot instead of left out.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format.h"
#include "output.h"

/* One implementation's colour and point type, the same in every plot. */
static const char *const colours[] = {"#0b5394", "#6fa8dc", "#7570b3",
                                      "#444444", "#d95f02", "#e7298a",
                                      "#1b9e77", "#e6ab02"};
#define NCOLOURS (sizeof(colours) / sizeof(colours[0]))

/* Median, min and max, or "? ? ?" for a cell not run. */
static void put_value(FILE *f, const struct result *r)
{
    if (r && r->reps)
        fprintf(f, " %.6g %.6g %.6g", r->median, r->min, r->max);
    else
        fprintf(f, " ? ? ?");
}

/* The axis label of a metric: its title after the last comma. */
static const char *axis_of(const struct wl_metric *m)
{
    const char *comma = m->title ? strrchr(m->title, ',') : NULL;

    return comma ? comma + 2 : m->unit;
}

/* Its title before the last comma. */
static void what_of(const struct wl_metric *m, char *buf, size_t len)
{
    const char *t = m->title ? m->title : m->name;
    const char *comma = strrchr(t, ',');

    snprintf(buf, len, "%.*s", (int)(comma ? comma - t : (long)strlen(t)), t);
}

/* A size as a person writes it: 10^k, or the number. */
static void plot_size(uint64_t n, char *buf, size_t len)
{
    format_size(n, buf, len);
    if (buf[0] == '1' && buf[1] == 'e')
        snprintf(buf, len, "10^%llu",
                 (unsigned long long)strtoull(buf + 2, NULL, 10));
}

/* Whether the values of the given rows spread over more than 20x: then
 * the value axis is logarithmic. */
static bool wide(double lo, double hi)
{
    return lo > 0 && hi / lo > 20;
}

static void track(const struct result *r, double *lo, double *hi)
{
    if (!r || !r->reps)
        return;
    *lo = r->min < *lo ? r->min : *lo;
    *hi = r->max > *hi ? r->max : *hi;
}

/* The value axis: linear from 0, or log when the values spread over more
 * than 20x or the workload asks for it (log_values: its cost curves are
 * read as slopes); its top leaves a band of `band` (a fraction of the
 * height) for the "not run" marks. */
static void value_axis(FILE *gp, const struct wl_metric *m, double lo,
                       double hi, double band, bool log)
{
    if (hi >= 1e5) /* 60M, not 6e+07 */
        fprintf(gp, "set format y '%%.0s%%c'\n");
    if (!(hi > 0)) { /* nothing measured: an axis all the same */
        fprintf(gp, "set yrange [0:1]\nset ylabel '%s'\n", axis_of(m));
    } else if (wide(lo, hi) || (log && lo > 0)) {
        double l = log10(lo / 1.3), h = log10(hi * 1.3);

        fprintf(gp,
                "set logscale y\nset yrange [%g:%g]\n"
                "set ylabel '%s (log scale)'\n",
                pow(10, l), pow(10, l + (h - l) / (1 - band)), axis_of(m));
    } else {
        fprintf(gp, "set yrange [0:%g]\nset ylabel '%s'\n",
                hi * 1.05 / (1 - band), axis_of(m));
    }
}

/* Cost against size: one row per size, three columns (median, min, max)
 * per implementation; points joined by lines with min-max error bars; a
 * cell not run is an open circle labelled "<impl>: not run" in a band at
 * the top of the plot, above its size. */
static void write_lines(FILE *dat, FILE *gp, const struct results *rs,
                        const struct run_config *cfg, const struct result *r0,
                        const char *base)
{
    uint64_t sizes[32];
    size_t ns = results_sizes(rs, r0->wl->name, r0->name, sizes, 32);
    double lo = INFINITY, hi = 0;
    unsigned most = 0; /* cells not run at one size, at most */

    for (size_t k = 0; k < ns; k++) {
        unsigned missing = 0;

        for (unsigned i = 0; i < cfg->nim; i++) {
            const struct result *r = results_find(rs, r0->wl->name, r0->name,
                                                  cfg->im[i]->name, sizes[k]);

            track(r, &lo, &hi);
            missing += r && !r->reps;
        }
        most = missing > most ? missing : most;
    }
    fprintf(dat, "# n, then median min max of:");
    for (unsigned i = 0; i < cfg->nim; i++)
        fprintf(dat, " %s", cfg->im[i]->name);
    fprintf(dat, "\n");
    for (size_t k = 0; k < ns; k++) {
        unsigned missing = 0;

        fprintf(dat, "%llu", (unsigned long long)sizes[k]);
        for (unsigned i = 0; i < cfg->nim; i++) {
            const struct result *r = results_find(rs, r0->wl->name, r0->name,
                                                  cfg->im[i]->name, sizes[k]);

            put_value(dat, r);
            if (r && !r->reps)
                fprintf(gp,
                        "set label '%s: not run' at first %llu, graph %.3f "
                        "center front tc rgb '%s' font ',8' point pt 6 "
                        "ps 1.2 lc rgb '%s' offset 0,0.7\n",
                        cfg->im[i]->name, (unsigned long long)sizes[k],
                        0.93 - 0.065 * missing++, colours[i % NCOLOURS],
                        colours[i % NCOLOURS]);
        }
        fprintf(dat, "\n");
    }
    if (ns)
        fprintf(gp, "set xrange [%g:%g]\n", (double)sizes[0] / 2,
                (double)sizes[ns - 1] * 2);
    fprintf(gp,
            "set logscale x\nset format x '10^%%T'\n"
            "set xlabel '%s (log scale)'\n",
            r0->wl->x_label);
    value_axis(gp, &r0->wl->metrics[r0->metric], lo, hi,
               most ? 0.065 * most + 0.04 : 0, r0->wl->log_values);
    fprintf(gp, "set key outside right top\nplot ");
    for (unsigned i = 0; i < cfg->nim; i++)
        fprintf(gp,
                "%s'%s.dat' using 1:%u:%u:%u with yerrorlines lw 2 pt 7 "
                "ps 0.8 lc rgb '%s' title '%s'",
                i ? ", " : "", base, 3 * i + 2, 3 * i + 3, 3 * i + 4,
                colours[i % NCOLOURS], cfg->im[i]->name);
    fprintf(gp, "\n");
}

/* One size: the implementations along x, one series per metric of the
 * first metric's unit (median with min-max error bars). Bars on a linear
 * axis; points on a log axis (a bar's length means nothing there). A cell
 * not run is labelled "not run" where its mark would be. */
static void write_one_size(FILE *dat, FILE *gp, const struct results *rs,
                           const struct run_config *cfg,
                           const struct result *r0, const char *base)
{
    const struct workload *wl = r0->wl;
    const char *unit = wl->metrics[r0->metric].unit;
    unsigned ms[WL_MAX_METRICS], nm = 0;
    char names[WL_MAX_METRICS][64], sz[32];
    double lo = INFINITY, hi = 0, w;
    bool log;

    for (unsigned m = 0; m < wl->nmetrics; m++)
        if (strcmp(wl->metrics[m].unit, unit) == 0) {
            results_metric_name(wl, r0->variant, m, names[nm], 64);
            ms[nm++] = m;
        }
    w = 0.8 / nm;
    for (unsigned i = 0; i < cfg->nim; i++) {
        fprintf(dat, "%s", cfg->im[i]->name);
        for (unsigned k = 0; k < nm; k++) {
            const struct result *r =
                results_find(rs, wl->name, names[k], cfg->im[i]->name, r0->n);

            put_value(dat, r);
            track(r, &lo, &hi);
            if (r && !r->reps)
                fprintf(gp,
                        "set label 'not run' at first %g, graph 0.04 "
                        "left rotate by 90 front font ',8'\n",
                        i + (k - (nm - 1) / 2.0) * w);
        }
        fprintf(dat, "\n");
    }
    log = wide(lo, hi);
    plot_size(r0->n, sz, sizeof(sz));
    fprintf(gp,
            "set xlabel 'implementation (N = %s %s)'\n"
            "set xrange [-0.6:%u.6]\nset xtics rotate by -30\n"
            "set key below\n",
            sz, wl->x_label, cfg->nim - 1);
    value_axis(gp, &wl->metrics[r0->metric], lo, hi, 0, false);
    if (!log)
        fprintf(gp, "set boxwidth %g\nset style fill solid 0.7 border -1\n",
                w * 0.9);
    fprintf(gp, "plot ");
    for (unsigned k = 0; k < nm; k++) {
        char what[96];
        double off = (k - (nm - 1) / 2.0) * w;

        what_of(&wl->metrics[ms[k]], what, sizeof(what));
        if (!log)
            fprintf(gp,
                    "%s'%s.dat' using ($0+%g):%u%s with boxes lc rgb '%s' "
                    "title '%s', '' using ($0+%g):%u:%u:%u with yerrorbars "
                    "lc rgb 'black' pt 7 ps 0.3 notitle",
                    k ? ", " : "", base, off, 3 * k + 2, k ? "" : ":xtic(1)",
                    colours[k % NCOLOURS], what, off, 3 * k + 2, 3 * k + 3,
                    3 * k + 4);
        else
            fprintf(gp,
                    "%s'%s.dat' using ($0+%g):%u:%u:%u%s with yerrorbars "
                    "pt 7 ps 1.2 lc rgb '%s' title '%s'",
                    k ? ", " : "", base, off, 3 * k + 2, 3 * k + 3, 3 * k + 4,
                    k ? "" : ":xtic(1)", colours[k % NCOLOURS], what);
    }
    fprintf(gp, "\n");
}

static bool one_plot(const struct results *rs, const struct run_config *cfg,
                     const struct result *r0, const char *pdir,
                     const char *base)
{
    char path[600], title[256], what[128], sz[32];
    uint64_t sizes[32];
    size_t ns = results_sizes(rs, r0->wl->name, r0->name, sizes, 32);
    const struct wl_metric *m = &r0->wl->metrics[r0->metric];
    FILE *dat, *gp;

    snprintf(path, sizeof(path), "%s/%s.dat", pdir, base);
    dat = fopen(path, "w");
    snprintf(path, sizeof(path), "%s/%s.gp", pdir, base);
    gp = fopen(path, "w");
    if (!dat || !gp) {
        if (dat)
            fclose(dat);
        if (gp)
            fclose(gp);
        return false;
    }
    what_of(m, what, sizeof(what));
    plot_size(r0->n, sz, sizeof(sz));
    snprintf(title, sizeof(title), "%s%s%s, %s, %s is better%s%s", what,
             r0->wl->nvariants > 1 ? ", delays within " : "",
             r0->wl->nvariants > 1 ? r0->wl->variants[r0->variant] : "",
             axis_of(m), m->higher_better ? "higher" : "lower",
             ns > 1 ? "" : ", N = ", ns > 1 ? "" : sz);
    fprintf(gp,
            "set terminal pngcairo noenhanced size 800,480 "
            "font 'DejaVu Sans,10'\nset output '%s.png'\n"
            "set title '%s' font ',12'\nset grid\n"
            "set format y '%%g'\nset datafile missing '?'\n"
            "set bars small\n",
            base, title);
    if (ns > 1)
        write_lines(dat, gp, rs, cfg, r0, base);
    else
        write_one_size(dat, gp, rs, cfg, r0, base);
    fclose(dat);
    return fclose(gp) == 0;
}

static bool run_gnuplot(const char *pdir, const char *base)
{
    char cmd[800];

    snprintf(cmd, sizeof(cmd), "cd '%s' && gnuplot '%s.gp' 2>'%s.err'", pdir,
             base, base);
    return system(cmd) == 0;
}

/* The plot of metric m of one workload variant, recorded in pl when
 * gnuplot made it; named after the variant, and the metric too when the
 * workload plots each of its metrics. */
static void variant_plot(const struct results *rs, const struct run_config *cfg,
                         const struct workload *wl, unsigned v, unsigned m,
                         const char *pdir, struct plots *pl)
{
    const struct result *r0 = NULL;
    char base[80];

    for (size_t i = 0; i < rs->n && !r0; i++)
        if (rs->r[i].wl == wl && rs->r[i].variant == v && rs->r[i].metric == m)
            r0 = &rs->r[i];
    if (!r0 || pl->n == OUTPUT_MAX_PLOTS)
        return;
    snprintf(base, sizeof(base), "%s%s%s%s%s", wl->name,
             wl->nvariants > 1 ? "-" : "",
             wl->nvariants > 1 ? wl->variants[v] : "",
             wl->plot_each_metric ? "-" : "",
             wl->plot_each_metric ? wl->metrics[m].name : "");
    if (!one_plot(rs, cfg, r0, pdir, base) || !run_gnuplot(pdir, base)) {
        snprintf(pl->why_not, sizeof(pl->why_not),
                 "gnuplot failed on %s/%s.gp (see %s.err)", pdir, base, base);
        return;
    }
    snprintf(pl->file[pl->n], sizeof(pl->file[0]), "plots/%s.png", base);
    pl->wl[pl->n] = wl;
    pl->variant[pl->n++] = v;
}

void output_plots(const struct results *rs, const struct run_config *cfg,
                  const char *dir, struct plots *pl)
{
    char pdir[512];

    memset(pl, 0, sizeof(*pl));
    if (system("gnuplot --version >/dev/null 2>&1") != 0) {
        snprintf(pl->why_not, sizeof(pl->why_not),
                 "gnuplot not found (Debian: gnuplot-nox)");
        return;
    }
    snprintf(pdir, sizeof(pdir), "%s/plots", dir);
    if (mkdir(pdir, 0777) && errno != EEXIST) {
        snprintf(pl->why_not, sizeof(pl->why_not), "%s: %s", pdir,
                 strerror(errno));
        return;
    }
    for (unsigned w = 0; w < cfg->nwl; w++)
        for (unsigned v = 0; v < cfg->wl[w]->nvariants; v++)
            for (unsigned m = 0;
                 m < (cfg->wl[w]->plot_each_metric ? cfg->wl[w]->nmetrics : 1);
                 m++)
                variant_plot(rs, cfg, cfg->wl[w], v, m, pdir, pl);
}
