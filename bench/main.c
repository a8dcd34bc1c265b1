/*
 * twbench: the comparative benchmark of timewheel's two designs against a
 * binary heap, libuv, libevent and libev. Parses the options, runs the suite,
 * writes the tables, results.csv, the plots and report.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "machine.h"
#include "output.h"
#include "perfcount.h"
#include "runner.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: twbench [options]\n"
        "\n"
        "Runs timer workloads on several timer implementations, every one\n"
        "replaying the same operation sequence generated from a fixed seed,\n"
        "prints one table per workload metric and writes results.csv,\n"
        "report.md and PNG plots (gnuplot) to the output folder.\n"
        "\n"
        "  -s, --suite NAME      quick (default), full or smoke:\n");
    for (unsigned i = 0; i < bench_nsuites; i++)
        fprintf(f, "                          %-6s %s\n", bench_suites[i]->name,
                bench_suites[i]->about);
    fprintf(
        f,
        "  -w, --workloads LIST  comma-separated workloads (default: all):\n");
    for (unsigned i = 0; i < bench_nworkloads; i++)
        fprintf(f, "                          %s\n", bench_workloads[i]->name);
    fprintf(f,
            "  -i, --impls LIST      comma-separated implementations (default: "
            "all):\n");
    for (unsigned i = 0; i < bench_nimpls; i++)
        fprintf(f, "                          %-9s %s\n", bench_impls[i]->name,
                bench_impls[i]->about);
    fprintf(f,
            "  -n, --sizes LIST      comma-separated sizes N replacing the "
            "suite's\n"
            "                        for every workload except jump (which is "
            "10\n"
            "                        timers); 1e6 and 1000000 both work\n"
            "  -r, --reps N          timed repetitions per cell (median "
            "reported)\n"
            "  -S, --seed N          seed of every operation sequence "
            "(default 20261122)\n"
            "  -o, --out DIR         output folder (default build/bench)\n"
            "  -b, --budget SEC      wall-time budget of one cell (one "
            "implementation,\n"
            "                        one size); repetitions are cut to fit, a "
            "cell\n"
            "                        predicted not to fit is skipped, and one "
            "that\n"
            "                        overruns is stopped; each with a note and "
            "the\n"
            "                        estimate\n"
            "      --rate R          purgatory: request arrivals per second\n"
            "      --p50 MS          purgatory: median completion latency\n"
            "      --p75 MS          purgatory: 75th-percentile latency\n"
            "      --timeout MS      purgatory: request timeout\n"
            "      --max-run N       burst: callbacks per bounded advance\n"
            "      --slice-work N    stall: work units per sliced advance "
            "(128)\n"
            "      --no-plots        do not run gnuplot\n"
            "      --tables          every table, not one of the main "
            "figures\n"
            "  -q, --quiet           no progress line on stderr (none is "
            "shown\n"
            "                        when stderr is not a terminal)\n"
            "  -h, --help            this text\n"
            "\n"
            "Example: twbench -s quick -w churn,expire -i hier,heap -n 1e4,1e6 "
            "-r 3\n");
}

/* A count written as 1000000, 1e6 or 2.5e5. */
static bool parse_count(const char *s, uint64_t *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || v < 1 || v > 4e9)
        return false;
    *out = (uint64_t)(v + 0.5);
    return true;
}

/* Append one list item to cfg; false when it is unknown or one too many. */
typedef bool add_fn(struct run_config *cfg, const char *item);

static bool add_size(struct run_config *cfg, const char *item)
{
    return cfg->nsizes < RUNNER_MAX_SIZES &&
           parse_count(item, &cfg->sizes[cfg->nsizes++]);
}

static bool add_workload(struct run_config *cfg, const char *item)
{
    const struct workload *wl = workload_find(item);

    if (!wl || cfg->nwl == RUNNER_MAX_WORKLOADS)
        return false;
    cfg->wl[cfg->nwl++] = wl;
    return true;
}

static bool add_impl(struct run_config *cfg, const char *item)
{
    const struct impl *im = impl_find(item);

    if (!im || cfg->nim == RUNNER_MAX_IMPLS)
        return false;
    cfg->im[cfg->nim++] = im;
    return true;
}

/* A comma-separated list of at least one item, each added by add; says
 * which item is wrong (what names the list) and returns false. */
static bool parse_list(const char *arg, const char *what, add_fn *add,
                       struct run_config *cfg)
{
    char buf[512], *save, *tok;
    bool any = false;

    snprintf(buf, sizeof(buf), "%s", arg);
    for (tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save), any = true)
        if (!add(cfg, tok)) {
            fprintf(stderr, "twbench: bad %s '%s' (see --help)\n", what, tok);
            return false;
        }
    if (!any)
        fprintf(stderr, "twbench: empty %s list\n", what);
    return any;
}

struct cli {
    const char *out;
    const char *wl, *im, *sizes;
    bool no_plots;
    bool tables; /* every table, not the summary */
};

enum {
    OPT_RATE = 256,
    OPT_P50,
    OPT_P75,
    OPT_TIMEOUT,
    OPT_MAXRUN,
    OPT_NOPLOT,
    OPT_TABLES,
    OPT_SLICE
};

static const struct option longopts[] = {
    {"suite", required_argument, NULL, 's'},
    {"workloads", required_argument, NULL, 'w'},
    {"impls", required_argument, NULL, 'i'},
    {"sizes", required_argument, NULL, 'n'},
    {"reps", required_argument, NULL, 'r'},
    {"seed", required_argument, NULL, 'S'},
    {"out", required_argument, NULL, 'o'},
    {"budget", required_argument, NULL, 'b'},
    {"rate", required_argument, NULL, OPT_RATE},
    {"p50", required_argument, NULL, OPT_P50},
    {"p75", required_argument, NULL, OPT_P75},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"max-run", required_argument, NULL, OPT_MAXRUN},
    {"slice-work", required_argument, NULL, OPT_SLICE},
    {"no-plots", no_argument, NULL, OPT_NOPLOT},
    {"tables", no_argument, NULL, OPT_TABLES},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Options that change the parameters; false on a bad value. */
static bool param_option(int c, const char *arg, struct bench_params *p)
{
    uint64_t v;
    double d = atof(arg);

    switch (c) {
    case 'r':
        if (!parse_count(arg, &v) || v > WL_MAX_REPS)
            return false;
        p->reps = (unsigned)v;
        return true;
    case 'S':
        p->seed = strtoull(arg, NULL, 0);
        return true;
    case 'b':
        p->budget_s = d;
        return d > 0;
    case OPT_RATE:
        p->purg_rate = d;
        return d > 0;
    case OPT_P50:
        p->purg_p50_ms = d;
        return d > 0;
    case OPT_P75:
        p->purg_p75_ms = d;
        return d > 0;
    case OPT_TIMEOUT:
        p->purg_timeout_ms = d;
        return d > 0;
    case OPT_SLICE:
        return parse_count(arg, &p->slice_work) && p->slice_work > 0;
    default: /* OPT_MAXRUN */
        return parse_count(arg, &p->burst_max_run);
    }
}

/* One option of the second pass; exits on a bad value. */
static void apply_option(int c, struct run_config *cfg, struct cli *cli)
{
    if (c == 'w')
        cli->wl = optarg;
    else if (c == 'i')
        cli->im = optarg;
    else if (c == 'n')
        cli->sizes = optarg;
    else if (c == 'o')
        cli->out = optarg;
    else if (c == 'q')
        cfg->quiet = true;
    else if (c == OPT_NOPLOT)
        cli->no_plots = true;
    else if (c == OPT_TABLES)
        cli->tables = true;
    else if (c != 's' && !param_option(c, optarg, &cfg->p)) {
        fprintf(stderr, "twbench: bad value '%s'\n", optarg);
        exit(2);
    }
}

/* One scan of argv: pass 0 only picks the suite, pass 1 applies the rest
 * (so options override the suite wherever they stand). */
static const char *scan(int argc, char **argv, int pass, struct run_config *cfg,
                        struct cli *cli)
{
    const char *suite = "quick";
    int c;

    optind = 0; /* glibc: start a fresh scan */
    while ((c = getopt_long(argc, argv, "s:w:i:n:r:S:o:b:qh", longopts,
                            NULL)) != -1) {
        if (c == 'h' || c == '?') {
            usage(c == 'h' ? stdout : stderr);
            exit(c == 'h' ? 0 : 2);
        }
        if (pass == 0 && c == 's')
            suite = optarg;
        else if (pass == 1)
            apply_option(c, cfg, cli);
    }
    return suite;
}

/* Parse argv into cfg and cli; exits on --help or a bad option. */
static void parse(int argc, char **argv, struct run_config *cfg,
                  struct cli *cli)
{
    const char *suite = scan(argc, argv, 0, cfg, cli);

    cfg->suite = suite_find(suite);
    if (!cfg->suite) {
        fprintf(stderr, "twbench: unknown suite '%s'\n", suite);
        exit(2);
    }
    cfg->p = cfg->suite->p;
    scan(argc, argv, 1, cfg, cli);
    if (optind < argc) {
        fprintf(stderr, "twbench: unexpected argument '%s'\n", argv[optind]);
        exit(2);
    }
}

static void select_all(struct run_config *cfg, const struct cli *cli)
{
    bool ok = true;

    if (cli->wl)
        ok = parse_list(cli->wl, "workload", add_workload, cfg);
    else
        for (unsigned i = 0; i < bench_nworkloads; i++)
            cfg->wl[cfg->nwl++] = bench_workloads[i];
    if (ok && cli->im)
        ok = parse_list(cli->im, "implementation", add_impl, cfg);
    else if (ok)
        for (unsigned i = 0; i < bench_nimpls; i++)
            cfg->im[cfg->nim++] = bench_impls[i];
    if (ok && cli->sizes)
        ok = parse_list(cli->sizes, "size", add_size, cfg);
    if (!ok)
        exit(2);
}

static void record_cmdline(int argc, char **argv, struct run_config *cfg)
{
    size_t at = 0;

    for (int i = 0; i < argc && at < sizeof(cfg->cmdline); i++)
        at += (size_t)snprintf(cfg->cmdline + at, sizeof(cfg->cmdline) - at,
                               "%s%s", i ? " " : "", argv[i]);
}

int main(int argc, char **argv)
{
    static struct run_config cfg;
    struct cli cli = {.out = "build/bench"};
    struct results rs = {0};
    struct machine m;
    struct plots pl = {.why_not = "not made (--no-plots)"};

    parse(argc, argv, &cfg, &cli);
    select_all(&cfg, &cli);
    record_cmdline(argc, argv, &cfg);
    if (mkdir(cli.out, 0777) && errno != EEXIST) {
        fprintf(stderr, "twbench: %s: %s\n", cli.out, strerror(errno));
        return 1;
    }
    perfcount_open();
    machine_probe(&m);
    printf("twbench: suite %s, seed %llu, %u workloads x %u implementations; "
           "instructions counter: %s\n",
           cfg.suite->name, (unsigned long long)cfg.p.seed, cfg.nwl, cfg.nim,
           m.perf);
    fflush(stdout);
    runner_run(&cfg, &rs);
    if (cli.tables)
        output_tables(&rs, cfg.im, cfg.nim);
    else
        output_summary(&rs, cfg.im, cfg.nim);
    if (!cli.no_plots)
        output_plots(&rs, &cfg, cli.out, &pl);
    if (!output_csv(&rs, cli.out) ||
        !output_report(&rs, &cfg, &m, &pl, cli.out))
        return 1;
    printf("\nwrote %s/results.csv, %s/report.md and %u plots in %s/plots\n",
           cli.out, cli.out, pl.n, cli.out);
    results_free(&rs);
    return 0;
}
