/*
 * replbench: the durable store replicated through a real log, beside the
 * store alone, in the same run (`make bench-store` runs it after
 * storebench). A 3-node NATS JetStream cluster on 127.0.0.1 (R3 stream,
 * file storage) is started and stopped by the benchmark itself
 * (tests/store/replica/jsnode.c).
 *
 *   replbench [--n N] [--reps R] [--dir DIR]
 *
 * Each repetition runs, one after the other (so that a change in the
 * machine's speed falls on all rows):
 *   single      durable schedules/s, one producer, a done callback each,
 *               deadlines over 7 days, 16-byte payloads: storebench's
 *               figure, on a fresh directory;
 *   replicated  the same through cfg.log with log_sync: each batch the
 *               store commits goes to the stream as one record, published
 *               on the stream's last sequence, and done runs once
 *               JetStream has it (the figure a broker acknowledging its
 *               producer after replication gets);
 *   apply       a new follower applying that leader's records from the
 *               stream (ordered consumer): entries/s, to set beside the
 *               leader's commit rate.
 * Prints the median and range of each row over the repetitions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "benchclock.h"
#include "jsnode.h"
#include "timewheel/store.h"

static uint32_t record_bytes = 256u << 10; /* --record */
static unsigned long rng_state = 88172645463325252ul;

static unsigned long rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void on_deliver(struct tw_store *s, struct tw_store_id id, const void *p,
                       size_t len, void *arg)
{
    (void)p;
    (void)len;
    (void)arg;
    tw_store_ack(s, id, NULL, NULL);
}

static void rm_dir(const char *d)
{
    char cmd[512];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "replbench: could not remove %s\n", d);
}

/* N schedules from one producer; schedules/s, or -1. */
static double schedules(const char *dir, struct js_conn *j, unsigned long n)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    unsigned char payload[16] = {0};
    uint64_t now = real(), t0;
    int err = 0;

    rm_dir(dir);
    tw_store_config_init(&cfg);
    cfg.deliver = on_deliver;
    if (j) {
        cfg.log = js_log;
        cfg.log_arg = j;
        cfg.log_sync = true;
        cfg.log_max_bytes = record_bytes;
    }
    s = tw_store_open(dir, &cfg, &err);
    if (!s) {
        fprintf(stderr, "replbench: open: %d\n", err);
        return -1;
    }
    atomic_store(&done_n, 0);
    t0 = mono();
    for (unsigned long i = 0; i < n; i++)
        tw_store_schedule_at(s, now + 60 * S + rng() % (7 * 86400 * S), payload,
                             sizeof payload, on_done, NULL, NULL);
    while (atomic_load(&done_n) < n) {
        struct timespec ts = {0, 200000};

        nanosleep(&ts, NULL);
    }
    t0 = mono() - t0;
    tw_store_close(s);
    return done_err ? -1 : (double)n / ((double)t0 / 1e9);
}

/* A new follower applies the stream's records after seq from; entries/s. */
static double apply_rate(const char *dir, const char *urls, uint64_t from,
                         uint64_t to, uint64_t *entries)
{
    struct tw_store_config cfg;
    struct tw_store *f;
    struct js_conn j = {0};
    struct tw_store_replica ri;
    uint64_t t0, lsn0;
    int err = 0;

    rm_dir(dir);
    tw_store_config_init(&cfg);
    cfg.deliver = on_deliver;
    cfg.follower = true;
    f = tw_store_open(dir, &cfg, &err);
    if (!f || js_connect(&j, urls, 1) != 0)
        return -1;
    j.last_seq = from;
    if (js_follow(&j) != 0)
        return -1;
    tw_store_replica_info(f, &ri);
    lsn0 = ri.lsn;
    t0 = mono();
    while (j.last_seq < to)
        if (js_apply_some(&j, f, 1000) < 0)
            return -1;
    t0 = mono() - t0;
    tw_store_replica_info(f, &ri);
    *entries = ri.lsn - lsn0;
    js_disconnect(&j);
    tw_store_close(f);
    if (j.refused)
        fprintf(stderr, "replbench: %llu records refused\n",
                (unsigned long long)j.refused);
    return (double)*entries / ((double)t0 / 1e9);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static void row(const char *name, double *v, int reps, const char *unit)
{
    qsort(v, (size_t)reps, sizeof *v, cmp);
    printf("| %s | %.0f k | %.0f-%.0f k | %s |\n", name, v[reps / 2] / 1e3,
           v[0] / 1e3, v[reps - 1] / 1e3, unit);
}

int main(int argc, char **argv)
{
    unsigned long n = 1000000;
    int reps = 3;
    const char *dir = "/tmp/twstore-replbench";
    char ldir[256], fdir[256], urls[128];
    double single[16], repl[16], apply[16];
    struct js_cluster c;
    struct js_conn j = {0};

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            n = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--record"))
            record_bytes = (uint32_t)strtoul(argv[i + 1], NULL, 10);
    }
    reps = reps < 1 ? 1 : reps > 16 ? 16 : reps;
    snprintf(ldir, sizeof ldir, "%s-leader", dir);
    snprintf(fdir, sizeof fdir, "%s-follower", dir);
    if (js_cluster_start(&c, (unsigned)getpid()) != 0) {
        js_cluster_stop(&c);
        return 2;
    }
    snprintf(urls, sizeof urls, "%s,%s,%s", c.urls[0], c.urls[1], c.urls[2]);
    if (js_connect(&j, urls, 0) != 0)
        return 2;
    for (int r = 0; r < reps; r++) {
        uint64_t from, to, entries = 0, t0;

        single[r] = schedules(ldir, NULL, n);
        js_stream_last(&j, &from);
        j.last_seq = from;
        j.log_ns = j.log_bytes = 0;
        t0 = mono();
        repl[r] = schedules(ldir, &j, n);
        t0 = mono() - t0;
        js_stream_last(&j, &to);
        apply[r] = apply_rate(fdir, urls, from, to, &entries);
        fprintf(stderr,
                "replbench: rep %d: single %.0f/s, replicated %.0f/s "
                "(%llu records, %.1f MB, %.0f%% of the row's time in log()), "
                "apply %.0f entries/s (%llu)\n",
                r, single[r], repl[r], (unsigned long long)(to - from),
                (double)j.log_bytes / 1e6,
                100.0 * (double)j.log_ns / (double)t0, apply[r],
                (unsigned long long)entries);
        if (single[r] < 0 || repl[r] < 0 || apply[r] < 0)
            return 1;
    }
    js_disconnect(&j);
    js_cluster_stop(&c);
    rm_dir(ldir);
    rm_dir(fdir);
    printf("\nreplbench: %lu schedules per row, %d repetitions "
           "interleaved, 3-node JetStream R3 on 127.0.0.1\n\n",
           n, reps);
    printf("| row | median | range | unit |\n|---|---:|---:|---|\n");
    row("durable schedules/s, one producer, store alone", single, reps,
        "schedules/s");
    row("durable schedules/s, one producer, replicated (done after "
        "JetStream has the batch)",
        repl, reps, "schedules/s");
    row("a follower applying the stream", apply, reps, "entries/s");
    return 0;
}
