/*
 * storebench: the durable timer store's figures (issue 19), on this
 * machine's disk. `make bench` runs it with --n 1000000 (about 15 s);
 * `make bench-store-scale` with --n 10000000.
 *
 *   storebench [--n N] [--dir DIR] [--csv FILE]
 *
 * In one run, in a fresh directory:
 *  1. schedules: one producer schedules N timers (16-byte payloads,
 *     deadlines spread over the next 7 days) with a done callback; the
 *     figure is N over the time until the last is reported durable;
 *  2. bytes on disk per pending timer, after a close (RocksDB's files);
 *  3. restart: reopen and time the open alone; then RSS of the process
 *     (VmRSS, with N pending);
 *  4. deliveries: reschedule min(N, 10^6) of the timers... no: a second
 *     store gets min(N, 10^6) timers due 1 s from now, closed, reopened
 *     after they fell due; the figure is the count over the time from
 *     the open to the last delivery (each acked in the callback), and the
 *     time to the first delivery.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "timewheel/store.h"

#define MS UINT64_C(1000000)
#define S UINT64_C(1000000000)

static atomic_ulong done_n, done_err, delivered;
static atomic_ullong first_delivery_ns;

static uint64_t mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

static uint64_t real(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

static void on_done(struct tw_store_id id, int err, void *arg)
{
    (void)id;
    (void)arg;
    if (err)
        atomic_fetch_add(&done_err, 1);
    atomic_fetch_add(&done_n, 1);
}

static void on_deliver(struct tw_store *s, struct tw_store_id id,
                       const void *p, size_t len, void *arg)
{
    (void)p;
    (void)len;
    (void)arg;
    if (atomic_fetch_add(&delivered, 1) == 0)
        atomic_store(&first_delivery_ns, mono());
    tw_store_ack(s, id, NULL, NULL);
}

static void on_nothing(struct tw_store *s, struct tw_store_id id,
                       const void *p, size_t len, void *arg)
{
    (void)s;
    (void)id;
    (void)p;
    (void)len;
    (void)arg;
}

static struct tw_store *open_store(const char *dir, tw_store_deliver_fn *fn)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    int err;

    tw_store_config_init(&cfg);
    cfg.deliver = fn;
    cfg.deliver_rate = 0; /* measure the store, not the bound */
    s = tw_store_open(dir, &cfg, &err);
    if (!s) {
        fprintf(stderr, "storebench: open %s: %s\n", dir, strerror(-err));
        exit(1);
    }
    return s;
}

static uint64_t disk_bytes(const char *path)
{
    char p[4200];
    struct dirent *e;
    struct stat st;
    uint64_t sum = 0;
    DIR *d = opendir(path);

    if (!d)
        return 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        if (lstat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            sum += disk_bytes(p);
        else if (S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_blocks * 512;
    }
    closedir(d);
    return sum;
}

static long rss_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

static void wait_count(atomic_ulong *c, unsigned long want)
{
    struct timespec ts = {0, 200000};

    while (atomic_load(c) < want)
        nanosleep(&ts, NULL);
}

static uint64_t rng_state = 88172645463325252u;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

int main(int argc, char **argv)
{
    long n = 1000000;
    const char *base = "/tmp/storebench", *csv = NULL;
    char dir[4096], cmd[4200];
    unsigned char payload[16] = {0};
    struct tw_store *s;
    uint64_t t0, t_sched, t_open, now;
    double per_rec;
    long nd, rss;
    FILE *out;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            n = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir"))
            base = argv[i + 1];
        else if (!strcmp(argv[i], "--csv"))
            csv = argv[i + 1];
    }
    nd = n < 1000000 ? n : 1000000;
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", base, base);
    if (n <= 0 || system(cmd) != 0)
        return 1;

    /* 1. durable schedules from one producer */
    snprintf(dir, sizeof dir, "%s/pending", base);
    s = open_store(dir, on_nothing);
    now = real();
    t0 = mono();
    for (long i = 0; i < n; i++) {
        memcpy(payload, &i, sizeof i);
        tw_store_schedule_at(s, now + 60 * S + rng() % (7 * 86400 * S),
                             payload, sizeof payload, on_done, NULL, NULL);
    }
    wait_count(&done_n, (unsigned long)n);
    t_sched = mono() - t0;
    tw_store_close(s);
    /* 2. bytes on disk */
    per_rec = (double)disk_bytes(dir) / (double)n;
    /* 3. restart with n pending */
    t0 = mono();
    s = open_store(dir, on_nothing);
    t_open = mono() - t0;
    rss = rss_kib();
    tw_store_close(s);

    /* 4. deliveries: nd due at once after a restart */
    snprintf(dir, sizeof dir, "%s/due", base);
    s = open_store(dir, on_nothing);
    now = real() + S;
    atomic_store(&done_n, 0);
    for (long i = 0; i < nd; i++)
        tw_store_schedule_at(s, now + rng() % (100 * MS), payload,
                             sizeof payload, on_done, NULL, NULL);
    wait_count(&done_n, (unsigned long)nd);
    tw_store_close(s);
    while (real() < now + 100 * MS + MS)
        usleep(1000);
    t0 = mono();
    s = open_store(dir, on_deliver);
    wait_count(&delivered, (unsigned long)nd);
    {
        uint64_t t_del = mono() - t0, t_first = first_delivery_ns - t0;

        tw_store_close(s);
        printf("store: %ld durable schedules, one producer: %.0f /s "
               "(%lu failed)\n",
               n, n / (t_sched / 1e9), (unsigned long)done_err);
        printf("store: bytes on disk per pending timer (16-byte payload): "
               "%.1f\n", per_rec);
        printf("store: restart (open) with %ld pending: %.1f ms, RSS then "
               "%.1f MiB\n", n, t_open / 1e6, rss / 1024.0);
        printf("store: %ld due at once after a restart: %.0f deliveries/s "
               "(acked), first after %.1f ms\n",
               nd, nd / (t_del / 1e9), t_first / 1e6);
        out = csv ? fopen(csv, "w") : NULL;
        if (out) {
            fprintf(out, "figure,n,value\n");
            fprintf(out, "schedules_per_s,%ld,%.0f\n", n, n / (t_sched / 1e9));
            fprintf(out, "disk_bytes_per_timer,%ld,%.1f\n", n, per_rec);
            fprintf(out, "open_ms,%ld,%.1f\n", n, t_open / 1e6);
            fprintf(out, "rss_mib,%ld,%.1f\n", n, rss / 1024.0);
            fprintf(out, "deliveries_per_s,%ld,%.0f\n", nd, nd / (t_del / 1e9));
            fprintf(out, "first_delivery_ms,%ld,%.1f\n", nd, t_first / 1e6);
            fclose(out);
        }
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    return system(cmd) == 0 && done_err == 0 ? 0 : 1;
}
