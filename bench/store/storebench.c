/*
 * storebench: the durable timer store's figures (issue 19), on this
 * machine's disk. `make bench` runs it with --n 1000000 (about 15 s);
 * `make bench-store-scale` with --n 10000000.
 *
 *   storebench [--n N] [--dir DIR] [--csv FILE]
 *
 * In one run, in a fresh directory:
 *  1. schedules: one producer schedules N timers (16-byte payloads; the
 *     first 1,000 long overdue, the rest spread over the next 7 days) with
 *     a done callback; the figure is N over the time until the last is
 *     reported durable;
 *  2. bytes on disk per pending timer, after a close (RocksDB's files);
 *  3. restart, in a new process (--restart): the time from the open to the
 *     first delivery (an overdue timer), the open alone, and the process's
 *     resident memory 2 s later and at its peak (VmRSS, VmHWM), with N
 *     pending;
 *     Then a process (--crash) schedules 200,000 more and dies by SIGKILL,
 *     and the restart is measured again: RocksDB replays its log.
 *  4. deliveries, in a new process (--deliver): a second store got
 *     min(N, 10^6) timers due within 100 ms of each other and was closed
 *     until all fell due; the figure is their count over the time from the
 *     open to the last delivery (each acked in the callback), and the
 *     process's peak resident memory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchclock.h"
#include "diskbytes.h"
#include "timewheel/store.h"

#define MS UINT64_C(1000000)
#define CRASH_EXTRA 200000

static atomic_ulong delivered;
static atomic_ullong first_delivery_ns;

static void on_deliver(struct tw_store *s, struct tw_store_id id, const void *p,
                       size_t len, void *arg)
{
    (void)p;
    (void)len;
    (void)arg;
    if (atomic_fetch_add(&delivered, 1) == 0)
        atomic_store(&first_delivery_ns, mono());
    tw_store_ack(s, id, NULL, NULL);
}

static void on_deliver_noack(struct tw_store *s, struct tw_store_id id,
                             const void *p, size_t len, void *arg)
{
    (void)s;
    (void)id;
    (void)p;
    (void)len;
    (void)arg;
    if (atomic_fetch_add(&delivered, 1) == 0)
        atomic_store(&first_delivery_ns, mono());
}

static void on_nothing(struct tw_store *s, struct tw_store_id id, const void *p,
                       size_t len, void *arg)
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

/* A line of /proc/self/status in KiB: "VmRSS:" or "VmHWM:". */
static long status_kib(const char *key)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key)))
            kib = atol(line + strlen(key));
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

static FILE *csv_open(const char *csv)
{
    return csv ? fopen(csv, "a") : NULL;
}

static void csv_row(FILE *f, const char *figure, long n, double v)
{
    if (f)
        fprintf(f, "%s,%ld,%.1f\n", figure, n, v);
}

/* --restart DIR N: reopen a store of N pending, some overdue. */
static int restart(const char *dir, long n, const char *csv)
{
    uint64_t t0 = mono(), t_open, t_first;
    struct tw_store *s = open_store(dir, on_deliver_noack);
    long rss, hwm;
    FILE *f;

    t_open = mono() - t0;
    wait_count(&delivered, 1);
    t_first = first_delivery_ns - t0;
    sleep(2); /* the window loaded, deliveries done */
    rss = status_kib("VmRSS:");
    hwm = status_kib("VmHWM:");
    tw_store_close(s);
    printf("store: restart with %ld pending: first delivery %.1f ms after "
           "the open began (the open %.1f ms); RSS %.1f MiB, peak %.1f MiB\n",
           n, t_first / 1e6, t_open / 1e6, rss / 1024.0, hwm / 1024.0);
    f = csv_open(csv);
    csv_row(f, "restart_first_delivery_ms", n, t_first / 1e6);
    csv_row(f, "restart_open_ms", n, t_open / 1e6);
    csv_row(f, "rss_mib", n, rss / 1024.0);
    csv_row(f, "rss_peak_mib", n, hwm / 1024.0);
    if (f)
        fclose(f);
    return 0;
}

/* --crash DIR N: schedule N more (durable), then die by SIGKILL, so that
 * the next open replays RocksDB's log as after a crash. */
static int crash(const char *dir, long n)
{
    unsigned char payload[16] = {0};
    struct tw_store *s = open_store(dir, on_nothing);
    uint64_t now = real();

    for (long i = 0; i < n; i++)
        tw_store_schedule_at(s, now + 60 * S + rng() % (7 * 86400 * S), payload,
                             sizeof payload, on_done, NULL, NULL);
    wait_count(&done_n, (unsigned long)n);
    kill(getpid(), SIGKILL);
    return 1;
}

/* --deliver DIR N: reopen a store of N overdue timers, deliver and ack. */
static int deliver_all(const char *dir, long n, const char *csv)
{
    uint64_t t0 = mono(), t_del, t_first;
    struct tw_store *s = open_store(dir, on_deliver);
    long hwm;
    FILE *f;

    wait_count(&delivered, (unsigned long)n);
    t_del = mono() - t0;
    t_first = first_delivery_ns - t0;
    tw_store_close(s);
    hwm = status_kib("VmHWM:");
    printf("store: %ld due at once after a restart: %.0f deliveries/s "
           "(acked), first after %.1f ms, peak RSS %.1f MiB\n",
           n, n / (t_del / 1e9), t_first / 1e6, hwm / 1024.0);
    f = csv_open(csv);
    csv_row(f, "deliveries_per_s", n, n / (t_del / 1e9));
    csv_row(f, "deliver_rss_peak_mib", n, hwm / 1024.0);
    if (f)
        fclose(f);
    return 0;
}

/* Run this program again as mode on dir: a fresh process, as a restart. */
static int child(const char *mode, const char *dir, long n, const char *csv)
{
    char nbuf[32];
    char *argv[] = {
        "storebench", (char *)mode, (char *)dir, nbuf, (char *)(csv ? csv : ""),
        NULL};
    extern char **environ;
    int status;
    pid_t pid;

    snprintf(nbuf, sizeof nbuf, "%ld", n);
    fflush(stdout);
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) ||
        waitpid(pid, &status, 0) != pid)
        return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* 1. and 2.: N pending in dir, the first 1,000 long overdue. */
static int fill(const char *dir, long n, const char *csv)
{
    unsigned char payload[16] = {0};
    struct tw_store *s = open_store(dir, on_nothing);
    uint64_t now = real(), t0 = mono(), t;
    double per;
    FILE *f;

    for (long i = 0; i < n; i++) {
        uint64_t at =
            i < 1000 ? (uint64_t)i + 1 : now + 60 * S + rng() % (7 * 86400 * S);

        memcpy(payload, &i, sizeof i);
        tw_store_schedule_at(s, at, payload, sizeof payload, on_done, NULL,
                             NULL);
    }
    wait_count(&done_n, (unsigned long)n);
    t = mono() - t0;
    tw_store_close(s);
    per = (double)disk_bytes(dir) / (double)n;
    printf("store: %ld durable schedules, one producer: %.0f /s (%lu "
           "failed)\n",
           n, n / (t / 1e9), (unsigned long)done_err);
    printf("store: bytes on disk per pending timer (16-byte payload): "
           "%.1f\n",
           per);
    f = csv_open(csv);
    csv_row(f, "schedules_per_s", n, n / (t / 1e9));
    csv_row(f, "disk_bytes_per_timer", n, per);
    if (f)
        fclose(f);
    return done_err ? 1 : 0;
}

/* 4.'s store: n timers due within 100 ms, closed until all are due. */
static void fill_due(const char *dir, long n)
{
    unsigned char payload[16] = {0};
    struct tw_store *s = open_store(dir, on_nothing);
    uint64_t at = real() + S;

    atomic_store(&done_n, 0);
    for (long i = 0; i < n; i++)
        tw_store_schedule_at(s, at + rng() % (100 * MS), payload,
                             sizeof payload, on_done, NULL, NULL);
    wait_count(&done_n, (unsigned long)n);
    tw_store_close(s);
    while (real() < at + 100 * MS + MS)
        usleep(1000);
}

int main(int argc, char **argv)
{
    long n = 1000000, nd;
    const char *base = "/tmp/storebench", *csv = NULL;
    char dir[4096], cmd[4200];
    int rc;

    if (argc == 5 && !strcmp(argv[1], "--restart"))
        return restart(argv[2], atol(argv[3]), *argv[4] ? argv[4] : NULL);
    if (argc == 5 && !strcmp(argv[1], "--crash"))
        return crash(argv[2], atol(argv[3]));
    if (argc == 5 && !strcmp(argv[1], "--deliver"))
        return deliver_all(argv[2], atol(argv[3]), *argv[4] ? argv[4] : NULL);
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
    if (n <= 1000 || system(cmd) != 0)
        return 1;
    if (csv) {
        FILE *f = fopen(csv, "w");

        if (f) {
            fprintf(f, "figure,n,value\n");
            fclose(f);
        }
    }
    snprintf(dir, sizeof dir, "%s/pending", base);
    rc = fill(dir, n, csv);
    rc |= child("--restart", dir, n, csv);
    /* Again after a crash: 200,000 more schedules left in the log. */
    child("--crash", dir, CRASH_EXTRA, csv);
    rc |= child("--restart", dir, n + CRASH_EXTRA, csv);
    snprintf(dir, sizeof dir, "%s/due", base);
    fill_due(dir, nd);
    rc |= child("--deliver", dir, nd, csv);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    return system(cmd) == 0 ? rc : 1;
}
