/*
 * storecrash: the store's crash harness (issue 19). One program, three
 * roles:
 *
 *   storecrash DIR KILLS SEED [MIN]
 *       the driver: KILLS times, start a writer on DIR, SIGKILL it MIN (20)
 *       to MIN + 230 ms after its start, and check the guarantees; then a
 *       last writer drains the store and the final check runs. Prints the
 *       counts; exits 1 on any violation.
 *   storecrash --writer DIR LOG SEED [polled]
 *       schedules 3,000 timers (deadlines from 100 ms ago to 300 ms ahead)
 *       in bursts of 100 at full speed 10 ms apart, cancels and acks, and
 *       appends to LOG what the store reported, with write(2) so that a
 *       SIGKILL loses nothing already written. Every other writer opens
 *       its store polled: an event loop thread (epoll on tw_store_fd())
 *       takes a few deliveries every 2 ms, so that many wait in the
 *       store's queue while the main thread cancels recent timers, the
 *       overdue ones among them already queued.
 *   storecrash --drain DIR LOG
 *       schedules nothing; acks every delivery for DRAIN_MS, then closes.
 *
 * The log's records (struct rec): 'D' schedule durable, 'c' cancel
 * submitted, 'C' cancel durable, 'a' ack submitted, 'A' ack durable, 'V'
 * delivered (with the wall clock then). All records are written by the
 * writer's worker thread, but for 'c', which is written before the cancel
 * is submitted, so each record precedes everything it could cause. In a
 * polled writer the loop holds a lock around each tw_store_poll() (taking
 * a copy and running its callback), and the worker takes it to log 'C' and
 * 'A': a delivery logged after a durable cancel was then taken after the
 * cancel was durable, which the store must not allow.
 *
 * What the checker proves after every kill (and restart):
 *  1. nothing early: each 'V' has now >= deadline;
 *  2. nothing after a durable cancel or ack: no 'V' of an id after its 'C'
 *     or 'A';
 *  3. nothing durable lost: every id with 'D' and neither 'c' nor 'a' is on
 *     disk (tw_store_scan() of the killed store), and no id with 'C' or 'A'
 *     is;
 * and at the end, after the drain: every id with 'D' and no 'c' was
 * delivered, and the store is empty.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timewheel/store.h"

#define MS UINT64_C(1000000)
#define RUN_SCHEDULES 3000    /* a writer's schedules */
#define BURST 100             /* at full speed, then a pause of BURST_GAP_NS, */
#define BURST_GAP_NS 10000000 /* so a kill finds the writer scheduling */
#define DRAIN_MS 3000
#define KILL_SPAN_MS 230

struct rec {
    uint64_t seq, deadline, t;
    uint64_t kind; /* a char, padded: records are 32 bytes */
};

static int log_fd = -1;

static uint64_t real_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void log_rec(char kind, struct tw_store_id id, uint64_t t)
{
    struct rec r = {id.seq, id.deadline_ns, t, (uint64_t)kind};

    if (write(log_fd, &r, sizeof r) != (ssize_t)sizeof r)
        abort();
}

/* One generator per thread: the writer's main thread and the store's
 * worker (the delivery callback) each draw from their own. */
static _Thread_local uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t x = rng_state ? rng_state : UINT64_C(0x2545f4914f6cdd1d);

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* ---- the writer ---------------------------------------------------------- */

/* A polled writer's loop holds it while it polls (see the top). */
static pthread_mutex_t poll_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_done(struct tw_store_id id, int err, void *arg)
{
    char kind = (char)(uintptr_t)arg;

    if (err != 0)
        return;
    if (kind == 'D') {
        log_rec(kind, id, 0);
        return;
    }
    pthread_mutex_lock(&poll_lock);
    log_rec(kind, id, 0);
    pthread_mutex_unlock(&poll_lock);
}

static void on_deliver(struct tw_store *s, struct tw_store_id id,
                       const void *payload, size_t len, void *arg)
{
    (void)payload;
    (void)len;
    log_rec('V', id, real_ns());
    /* Nine in ten are acked: the tenth comes again after a restart. */
    if (arg || rng() % 10) {
        log_rec('a', id, 0);
        if (tw_store_ack(s, id, on_done, (void *)(uintptr_t)'A') != 0)
            abort();
    }
}

static struct tw_store *open_store(const char *dir, bool drain, bool polled)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    int err;

    tw_store_config_init(&cfg);
    cfg.deliver = polled ? NULL : on_deliver;
    cfg.deliver_arg = drain ? (void *)1 : NULL;
    cfg.polled = polled;
    cfg.commit_ns = 2 * MS; /* many commits per run: more places to die */
    s = tw_store_open(dir, &cfg, &err);
    if (!s) {
        fprintf(stderr, "storecrash: open %s: %s\n", dir, strerror(-err));
        exit(3);
    }
    return s;
}

/* A polled writer's event loop: wake on the store's fd, take a few
 * deliveries, and leave the rest waiting in the store's queue a while. */
static void *event_loop(void *arg)
{
    struct tw_store *s = arg;
    struct epoll_event ev = {.events = EPOLLIN}, out;
    int ep = epoll_create1(EPOLL_CLOEXEC);

    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tw_store_fd(s), &ev) != 0)
        abort();
    for (;;) {
        if (epoll_wait(ep, &out, 1, 100) == 1) {
            pthread_mutex_lock(&poll_lock);
            if (tw_store_poll(s, on_deliver, NULL, 8) < 0)
                abort();
            pthread_mutex_unlock(&poll_lock);
        }
        nanosleep(&(struct timespec){0, 2 * (long)MS}, NULL);
    }
    return NULL;
}

static int writer(const char *dir, const char *log, uint64_t seed, bool polled)
{
    struct tw_store_id recent[64];
    struct tw_store *s;
    pthread_t loop;
    int n = 0;

    rng_state = seed | 1;
    log_fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0)
        return 3;
    s = open_store(dir, false, polled);
    if (polled && pthread_create(&loop, NULL, event_loop, s) != 0)
        abort();
    for (int i = 0; i < RUN_SCHEDULES; i++) {
        uint64_t at = real_ns() + rng() % (400 * MS) - 100 * MS;
        struct tw_store_id id;

        if (tw_store_schedule_at(s, at, &i, sizeof i, on_done,
                                 (void *)(uintptr_t)'D', &id) != 0)
            abort();
        recent[n++ % 64] = id;
        if (i % BURST == BURST - 1)
            nanosleep(&(struct timespec){0, BURST_GAP_NS}, NULL);
        if (rng() % 4 == 0) {
            id = recent[rng() % (n < 64 ? n : 64)];
            log_rec('c', id, 0);
            if (tw_store_cancel(s, id, on_done, (void *)(uintptr_t)'C'))
                abort();
        }
    }
    /* Idle until killed: deliveries and acks go on. */
    for (;;)
        pause();
}

static int drain(const char *dir, const char *log)
{
    struct tw_store *s;
    struct timespec ts = {DRAIN_MS / 1000, 0};

    log_fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0)
        return 3;
    s = open_store(dir, true, false);
    nanosleep(&ts, NULL);
    if (tw_store_close(s) != 0)
        return 3;
    close(log_fd);
    return 0;
}

/* ---- the checker ----------------------------------------------------------
 */

enum { F_D = 1, F_c = 2, F_C = 4, F_a = 8, F_A = 16, F_DISK = 32 };

struct id_state {
    uint64_t seq; /* 0: empty slot */
    uint32_t flags;
    uint32_t delivered;
};

static struct id_state *map;
static size_t map_mask, map_used;
static uint64_t *live; /* seqs with D, without c and a: must be on disk */
static size_t live_n, live_cap;
static long violations, n_kills, n_durable, n_cancels, n_acks, n_deliveries,
    n_redeliveries;

static struct id_state *find(uint64_t seq);

static void grow(void)
{
    struct id_state *old = map;
    size_t cap = map ? (map_mask + 1) * 2 : 1 << 16;

    map = calloc(cap, sizeof *map);
    if (!map)
        abort();
    map_mask = cap - 1;
    map_used = 0;
    for (size_t i = 0; old && i < cap / 2; i++)
        if (old[i].seq)
            *find(old[i].seq) = old[i];
    free(old);
}

static struct id_state *find(uint64_t seq)
{
    size_t i;

    if (!map || map_used * 2 >= map_mask)
        grow();
    for (i = (seq * UINT64_C(0x9e3779b97f4a7c15)) >> 20 & map_mask;
         map[i].seq && map[i].seq != seq; i = (i + 1) & map_mask)
        ;
    if (!map[i].seq) {
        map[i].seq = seq;
        map_used++;
    }
    return &map[i];
}

static void violation(const char *what, const struct rec *r)
{
    violations++;
    if (violations <= 10)
        fprintf(stderr,
                "storecrash: VIOLATION %s: seq %llu deadline %llu "
                "t %llu\n",
                what, (unsigned long long)r->seq,
                (unsigned long long)r->deadline, (unsigned long long)r->t);
}

static void take(const struct rec *r)
{
    struct id_state *st = find(r->seq);

    switch ((char)r->kind) {
    case 'D':
        st->flags |= F_D;
        n_durable++;
        if (!(st->flags & (F_c | F_a))) {
            if (live_n == live_cap) {
                live_cap = live_cap ? live_cap * 2 : 4096;
                live = realloc(live, live_cap * sizeof *live);
            }
            live[live_n++] = r->seq;
        }
        break;
    case 'V':
        if (r->t < r->deadline)
            violation("delivered before its deadline", r);
        if (st->flags & (F_C | F_A))
            violation("delivered after a durable cancel or ack", r);
        n_deliveries++;
        n_redeliveries += st->delivered > 0;
        st->delivered++;
        break;
    case 'c':
        st->flags |= F_c;
        break;
    case 'a':
        st->flags |= F_a;
        break;
    case 'C':
        st->flags |= F_C;
        n_cancels++;
        break;
    case 'A':
        st->flags |= F_A;
        n_acks++;
        break;
    default:
        violation("unknown record", r);
    }
}

static off_t log_read(const char *log, off_t from)
{
    struct rec buf[1024];
    int fd = open(log, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return from;
    lseek(fd, from, SEEK_SET);
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (size_t i = 0; i < (size_t)n / sizeof *buf; i++)
            take(&buf[i]);
        from += n - n % (ssize_t)sizeof *buf;
        lseek(fd, from, SEEK_SET);
    }
    close(fd);
    return from;
}

static int on_disk(struct tw_store_id id, const void *p, size_t len, void *c)
{
    struct id_state *st = find(id.seq);
    struct rec r = {id.seq, id.deadline_ns, 0, 'S'};

    (void)p;
    (void)len;
    (*(long *)c)++;
    st->flags |= F_DISK;
    if (st->flags & (F_C | F_A))
        violation("on disk after a durable cancel or ack", &r);
    return 0;
}

/* After a kill: what is on disk against what was reported durable. */
static long check_disk(const char *dir)
{
    long n = 0;
    size_t keep = 0;
    int64_t rc = tw_store_scan(dir, on_disk, &n);

    /* A writer killed before it made the directory left nothing. */
    if (rc < 0 && rc != -ENOENT) {
        fprintf(stderr, "storecrash: scan: %s\n", strerror((int)-rc));
        exit(2);
    }
    for (size_t i = 0; i < live_n; i++) {
        struct id_state *st = find(live[i]);
        struct rec r = {live[i], 0, 0, 'L'};

        if (st->flags & (F_c | F_a))
            continue; /* may leave: no longer checked */
        if (!(st->flags & F_DISK))
            violation("reported durable, not cancelled, lost", &r);
        st->flags &= ~(uint32_t)F_DISK;
        live[keep++] = live[i];
    }
    live_n = keep;
    for (size_t i = 0; i <= map_mask; i++)
        map[i].flags &= ~(uint32_t)F_DISK;
    return n;
}

static pid_t spawn(char *const argv[])
{
    pid_t pid = fork();

    if (pid == 0) {
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    return pid;
}

static void final_check(void)
{
    for (size_t i = 0; i <= map_mask; i++) {
        struct rec r = {map[i].seq, 0, 0, 'F'};

        if (map[i].seq && (map[i].flags & F_D) && !(map[i].flags & F_c) &&
            !map[i].delivered)
            violation("reported durable, never delivered", &r);
    }
}

static int driver(const char *dir, long kills, uint64_t seed,
                  uint64_t kill_min_ms)
{
    char log[4200], seedbuf[32];
    off_t off = 0;
    long left = 0;

    snprintf(log, sizeof log, "%s.log", dir);
    unlink(log);
    grow(); /* the map exists before the first record */
    rng_state = seed | 1;
    for (long k = 0; k < kills; k++) {
        struct timespec ts;
        uint64_t ms = kill_min_ms + rng() % KILL_SPAN_MS;
        char *argv[] = {"storecrash", "--writer", (char *)dir,
                        log,          seedbuf,    k % 2 ? "polled" : NULL,
                        NULL};
        int status;
        pid_t pid;

        snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)rng());
        pid = spawn(argv);
        ts =
            (struct timespec){(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        if (!WIFSIGNALED(status)) {
            fprintf(stderr, "storecrash: writer exited (%d) before the kill\n",
                    WEXITSTATUS(status));
            return 2;
        }
        n_kills++;
        off = log_read(log, off);
        left = check_disk(dir);
    }
    {
        char *argv[] = {"storecrash", "--drain", (char *)dir, log, NULL};
        int status;
        pid_t pid = spawn(argv);

        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "storecrash: the drain failed\n");
            return 2;
        }
    }
    log_read(log, off);
    left = check_disk(dir);
    final_check();
    if (left != 0) {
        struct rec r = {0, 0, (uint64_t)left, 'E'};

        violation("timers left on disk after the drain", &r);
    }
    printf("storecrash: %ld kills (SIGKILL at random moments, a check after "
           "each; every other writer polled), %ld schedules reported durable, "
           "%ld cancels and %ld acks "
           "durable, %ld deliveries (%ld again after a restart), %ld "
           "violations\n",
           n_kills, n_durable, n_cancels, n_acks, n_deliveries, n_redeliveries,
           violations);
    free(map);
    free(live);
    return violations ? 1 : 0;
}

int main(int argc, char **argv)
{
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "--writer"))
        return writer(argv[2], argv[3], strtoull(argv[4], NULL, 10),
                      argc == 6 && !strcmp(argv[5], "polled"));
    if (argc == 4 && !strcmp(argv[1], "--drain"))
        return drain(argv[2], argv[3]);
    if (argc == 4 || argc == 5)
        return driver(argv[1], atol(argv[2]), strtoull(argv[3], NULL, 10),
                      argc == 5 ? strtoull(argv[4], NULL, 10) : 20);
    fprintf(stderr, "usage: storecrash DIR KILLS SEED [KILL_MIN_MS]\n");
    return 2;
}
