/*
 * The plots: for each workload (and each expire range), a data file and a
 * gnuplot script in <out>/plots/, then gnuplot run on the script. A
 * workload measured at several sizes gets cost against size, log-log, one
 * line per implementation; one measured at a single size gets log-scale
 * bars per implementation, one bar per metric sharing the first metric's
 * unit. Empty cells are "?", which gnuplot leaves out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format.h"
#include "output.h"

static void put_value(FILE *f, const struct result *r)
{
    if (r && r->reps)
        fprintf(f, " %.6g", r->median);
    else
        fprintf(f, " ?");
}

/* Lines: one row per size, one column per implementation. */
static void write_lines(FILE *dat, FILE *gp, const struct results *rs,
                        const struct run_config *cfg, const char *metric,
                        const char *wl, const char *base)
{
    uint64_t sizes[32];
    size_t ns = results_sizes(rs, wl, metric, sizes, 32);

    fprintf(dat, "# n");
    for (unsigned i = 0; i < cfg->nim; i++)
        fprintf(dat, " %s", cfg->im[i]->name);
    fprintf(dat, "\n");
    for (size_t k = 0; k < ns; k++) {
        fprintf(dat, "%llu", (unsigned long long)sizes[k]);
        for (unsigned i = 0; i < cfg->nim; i++)
            put_value(dat,
                      results_find(rs, wl, metric, cfg->im[i]->name, sizes[k]));
        fprintf(dat, "\n");
    }
    if (ns)
        fprintf(gp, "set xrange [%g:%g]\n", (double)sizes[0] / 1.5,
                (double)sizes[ns - 1] * 1.5);
    fprintf(gp, "set logscale xy\nset format x '1e%%T'\n"
                "set key outside right top\nplot ");
    for (unsigned i = 0; i < cfg->nim; i++)
        fprintf(gp,
                "%s'%s.dat' using 1:%u with linespoints lw 2 pt %u "
                "title '%s'",
                i ? ", " : "", base, i + 2, i + 4, cfg->im[i]->name);
    fprintf(gp, "\n");
}

/* Bars: one row per implementation, one column per metric of the unit. */
static void write_bars(FILE *dat, FILE *gp, const struct results *rs,
                       const struct run_config *cfg, const struct result *r0,
                       const char *base)
{
    const struct workload *wl = r0->wl;
    const char *unit = wl->metrics[r0->metric].unit;
    char names[WL_MAX_METRICS][64];
    unsigned nm = 0;

    for (unsigned m = 0; m < wl->nmetrics; m++)
        if (strcmp(wl->metrics[m].unit, unit) == 0)
            results_metric_name(wl, r0->variant, m, names[nm++], 64);
    for (unsigned i = 0; i < cfg->nim; i++) {
        fprintf(dat, "%s", cfg->im[i]->name);
        for (unsigned m = 0; m < nm; m++)
            put_value(dat, results_find(rs, wl->name, names[m],
                                        cfg->im[i]->name, r0->n));
        fprintf(dat, "\n");
    }
    fprintf(gp, "set logscale y\nset style data histograms\n"
                "set style histogram clustered gap 1\n"
                "set style fill solid 0.8 border -1\nset boxwidth 0.9\n"
                "plot ");
    for (unsigned m = 0; m < nm; m++)
        fprintf(gp, "%s'%s.dat' using %u%s title '%s'", m ? ", " : "", base,
                m + 2, m ? "" : ":xtic(1)", names[m]);
    fprintf(gp, "\n");
}

static bool one_plot(const struct results *rs, const struct run_config *cfg,
                     const struct result *r0, const char *pdir,
                     const char *base)
{
    char path[600];
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
    fprintf(gp,
            "set terminal pngcairo noenhanced size 720,440 "
            "font 'DejaVu Sans,10'\nset output '%s.png'\n"
            "set title '%s: %s (%s is better)'\nset ylabel '%s'\n"
            "set xlabel '%s'\nset grid\nset key top left\n"
            "set format y '%%g'\n"
            "set datafile missing '?'\n",
            base, r0->wl->name, r0->name, m->higher_better ? "higher" : "lower",
            m->unit, ns > 1 ? r0->wl->x_label : "implementation");
    if (ns > 1)
        write_lines(dat, gp, rs, cfg, r0->name, r0->wl->name, base);
    else
        write_bars(dat, gp, rs, cfg, r0, base);
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

/* The plot of one workload variant, recorded in pl when gnuplot made it. */
static void variant_plot(const struct results *rs, const struct run_config *cfg,
                         const struct workload *wl, unsigned v,
                         const char *pdir, struct plots *pl)
{
    const struct result *r0 = NULL;
    char base[80];

    for (size_t i = 0; i < rs->n && !r0; i++)
        if (rs->r[i].wl == wl && rs->r[i].variant == v && rs->r[i].metric == 0)
            r0 = &rs->r[i];
    if (!r0 || pl->n == OUTPUT_MAX_PLOTS)
        return;
    snprintf(base, sizeof(base), "%s%s%s", wl->name,
             wl->nvariants > 1 ? "-" : "",
             wl->nvariants > 1 ? wl->variants[v] : "");
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
            variant_plot(rs, cfg, cfg->wl[w], v, pdir, pl);
}
