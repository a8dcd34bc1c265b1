/*
 * The failover harness (`make store-failover`, a short run in
 * `make store-failover-quick`): a store replicated through a 3-node NATS
 * JetStream cluster on 127.0.0.1, its leader lost again and again, a
 * follower promoted each time, and every guarantee checked at the end.
 *
 *   twfailover PROMOTIONS SEED
 *
 * The driver starts the cluster (jsnode.c) and two replica processes of
 * this binary (`twfailover node ...`): a leader producing (about 2,000
 * schedules/s, deadlines 0.1-1.5 s ahead, a cancel for one in ten, an ack
 * for nine deliveries in ten, the rest acked after the next failover's
 * redelivery or at the end) and a follower applying the stream. Each
 * round, 0.3-0.7 s in, the leader is lost:
 *   - SIGKILL of its process (most rounds);
 *   - SIGSTOP of its process, then SIGCONT once the new leader delivers
 *     (every 10th round from the 3rd): the stale leader must deliver
 *     nothing and get nothing into the log;
 *   - SIGKILL of its JetStream node (every 10th from the 7th), the process
 *     left running: it must be fenced once the follower is promoted;
 * and the follower is promoted (js_promote()), a new follower is started
 * from an empty directory and replays the stream. At the end the last
 * leader acks everything and drains.
 *
 * Every replica appends what its store reported to its own event file with
 * write(2) (which a SIGKILL cannot undo): S schedule replicated (done 0),
 * C cancel replicated, A ack replicated, D delivery, P promoted. The
 * checks, over all files:
 *   lost       a replicated schedule with no replicated cancel and no
 *              replicated ack by the end (the last leader acks all it
 *              delivers): 0
 *   early      a delivery before its deadline: 0
 *   after      a delivery after its cancel or ack was replicated: 0
 *   stale      a delivery by a stopped leader after the promotion, or an
 *              append of its to the stream after the new epoch: 0
 * and the figures: the time from each promotion to the new leader's first
 * delivery (target <= 1 s), duplicates (a timer delivered again) and how
 * long before the leader's loss their first delivery was.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jsnode.h"

#define MS UINT64_C(1000000)
#define RING 1024
#define MAX_SEQ (1u << 23)
#define LEASE_NS (300 * MS)
#define MARK_NS (50 * MS)

static uint64_t real_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- a replica (node mode) ----------------------------------------------- */

static struct {
    int ev;
    struct js_conn j;
    struct tw_store *s;
    pthread_mutex_t mu;
    struct tw_store_id ring[RING]; /* replicated schedules, for cancels */
    unsigned head, count;
    struct tw_store_id unacked[RING]; /* delivered, ack held back */
    unsigned nunacked;
    volatile bool ack_all;
    unsigned rnd;
} N;

static void ev(const char *fmt, ...)
{
    char line[128];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (write(N.ev, line, (size_t)n) != n)
        _exit(3);
}

static unsigned rnd(void)
{
    return (N.rnd = N.rnd * 1103515245u + 12345u) >> 8;
}

static void on_sched(struct tw_store_id id, int err, void *arg)
{
    (void)arg;
    if (err)
        return;
    ev("S %llu %llu\n", (unsigned long long)id.seq,
       (unsigned long long)id.deadline_ns);
    pthread_mutex_lock(&N.mu);
    N.ring[N.head++ % RING] = id;
    if (N.count < RING)
        N.count++;
    pthread_mutex_unlock(&N.mu);
}

static void on_removed(struct tw_store_id id, int err, void *arg)
{
    if (err == 0)
        ev("%c %llu %llu\n", (int)(intptr_t)arg, (unsigned long long)id.seq,
           (unsigned long long)real_ns());
}

static void on_deliver(struct tw_store *s, struct tw_store_id id, const void *p,
                       size_t len, void *arg)
{
    bool hold;

    (void)p;
    (void)len;
    (void)arg;
    ev("D %llu %llu %llu\n", (unsigned long long)id.seq,
       (unsigned long long)id.deadline_ns, (unsigned long long)real_ns());
    pthread_mutex_lock(&N.mu);
    hold = !N.ack_all && rnd() % 10 == 0 && N.nunacked < RING;
    if (hold)
        N.unacked[N.nunacked++] = id;
    pthread_mutex_unlock(&N.mu);
    if (hold)
        ev("H %llu\n", (unsigned long long)id.seq);
    else
        tw_store_ack(s, id, on_removed, (void *)(intptr_t)'A');
}

/* A line from the driver on stdin, if one is there. */
static bool command(char *buf, size_t n, int wait_ms)
{
    struct pollfd p = {.fd = 0, .events = POLLIN};
    ssize_t r;

    if (poll(&p, 1, wait_ms) <= 0)
        return false;
    r = read(0, buf, n - 1);
    if (r <= 0)
        exit(0); /* the driver is gone */
    buf[r] = 0;
    return true;
}

static void say(const char *fmt, ...)
{
    char line[128];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (write(1, line, (size_t)n) != n)
        _exit(3);
}

static int produce_some(void)
{
    struct tw_store_id victim = {0, 0};
    int rc = 0;

    for (int i = 0; i < 10 && rc == 0; i++) {
        uint64_t delay = (100 + rnd() % 1400) * MS;
        char p[8] = "payload";

        rc = tw_store_schedule_after(N.s, delay, p, sizeof p, on_sched, NULL,
                                     NULL);
    }
    pthread_mutex_lock(&N.mu);
    if (N.count > 0) {
        victim = N.ring[(N.head - 1 - rnd() % N.count) % RING];
        N.count--;
    }
    pthread_mutex_unlock(&N.mu);
    if (rc == 0 && victim.seq)
        rc = tw_store_cancel(N.s, victim, on_removed, (void *)(intptr_t)'C');
    return rc;
}

static void ack_held(void)
{
    pthread_mutex_lock(&N.mu);
    N.ack_all = true;
    for (unsigned i = 0; i < N.nunacked; i++)
        tw_store_ack(N.s, N.unacked[i], on_removed, (void *)(intptr_t)'A');
    N.nunacked = 0;
    pthread_mutex_unlock(&N.mu);
}

/* Lead until the store fails (fenced) or the driver says drain. */
static int lead(void)
{
    char cmd[64];
    bool producing = true;

    ack_held(); /* what was held back before is redelivered: ack it now */
    N.ack_all = false;
    for (;;) {
        int rc = producing ? produce_some() : 0;

        if (rc != 0) {
            say("fenced %d\n", rc);
            tw_store_close(N.s);
            return 0;
        }
        if (command(cmd, sizeof cmd, 5)) {
            if (!strncmp(cmd, "drain", 5)) {
                producing = false;
                ack_held();
            } else if (!strncmp(cmd, "snapshot ", 9)) {
                uint64_t from = 0;

                cmd[strcspn(cmd, "\n")] = 0;
                rc = js_snapshot(&N.j, N.s, cmd + 9, &from);
                say("snapshot %d %llu\n", rc, (unsigned long long)from);
            } else if (!strncmp(cmd, "count", 5)) {
                tw_store_sync(N.s);
                say("count %llu\n", (unsigned long long)tw_store_count(N.s));
            } else if (!strncmp(cmd, "quit", 4)) {
                tw_store_close(N.s);
                return 0;
            }
        }
    }
}

static int follow(void)
{
    char cmd[64];
    int idle = 0;

    if (js_follow(&N.j) != 0)
        return 2;
    say("ready\n");
    for (;;) {
        int n = js_apply_some(&N.j, N.s, 10);

        if (n < 0)
            return 2;
        /* Nothing for 3 s while a leader appends every 50 ms: the
         * consumer's server was lost; follow again. */
        idle = n ? 0 : idle + 1;
        if (idle >= 300 && js_refollow(&N.j) == 0)
            idle = 0;
        if (command(cmd, sizeof cmd, 0) && !strncmp(cmd, "promote", 7)) {
            int rc = js_promote(&N.j, N.s);

            if (rc != 0) {
                say("failed %d\n", rc);
                return 2;
            }
            ev("P %llu %llu %llu\n", (unsigned long long)real_ns(),
               (unsigned long long)N.j.last_seq,
               (unsigned long long)N.j.refused);
            say("promoted %llu\n", (unsigned long long)N.j.refused);
            return lead();
        }
    }
}

/* node leader|follower DIR EVENTS URLS FIRST_NODE SEED SNAPSHOT FROM_SEQ
 * (a follower restores SNAPSHOT, unless "-", and follows the stream after
 * FROM_SEQ). */
static int node_main(char **argv)
{
    bool leader = !strcmp(argv[0], "leader");
    struct tw_store_config cfg;
    int err = 0;

    N.ev = open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644);
    N.rnd = (unsigned)atoi(argv[5]);
    pthread_mutex_init(&N.mu, NULL);
    if (N.ev < 0 || js_connect(&N.j, argv[3], atoi(argv[4])) != 0) {
        fprintf(stderr, "node: no connection\n");
        return 2;
    }
    if (!leader && strcmp(argv[6], "-") != 0) {
        int rc = js_restore(argv[1], argv[6]);

        if (rc != 0) {
            fprintf(stderr, "node: restore %s: %d\n", argv[6], rc);
            return 2;
        }
        N.j.last_seq = strtoull(argv[7], NULL, 10);
    }
    tw_store_config_init(&cfg);
    cfg.deliver = on_deliver;
    cfg.log = js_log;
    cfg.log_arg = &N.j;
    cfg.log_sync = true;
    cfg.lease_ns = LEASE_NS;
    cfg.watermark_ns = MARK_NS;
    cfg.follower = !leader;
    if (leader) {
        /* The stream's last sequence: its first message. */
        N.j.last_seq = 1;
    }
    N.s = tw_store_open(argv[1], &cfg, &err);
    if (!N.s) {
        fprintf(stderr, "node: open %s: %d\n", argv[1], err);
        return 2;
    }
    if (leader) {
        say("ready\n");
        return lead();
    }
    return follow();
}

/* ---- the driver ---------------------------------------------------------- */

struct replica {
    pid_t pid;
    int in, out; /* its stdin (we write), its stdout (we read) */
    int idx;
};

static struct js_cluster C;
static char urls[128];

static int spawn(struct replica *r, int idx, bool leader, int first_node,
                 const char *snap, uint64_t from)
{
    int a[2], b[2];
    char dir[96], evf[96], first[8], seed[16], fromseq[24];
    char self[256];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

    if (n <= 0 || pipe(a) || pipe(b))
        return -1;
    self[n] = 0;
    snprintf(dir, sizeof dir, "%s/r%d", C.dir, idx);
    snprintf(evf, sizeof evf, "%s/ev%d", C.dir, idx);
    snprintf(first, sizeof first, "%d", first_node);
    snprintf(seed, sizeof seed, "%d", idx * 7 + 1);
    snprintf(fromseq, sizeof fromseq, "%llu", (unsigned long long)from);
    r->idx = idx;
    r->pid = fork();
    if (r->pid == 0) {
        dup2(a[0], 0);
        dup2(b[1], 1);
        close(a[1]);
        close(b[0]);
        execl(self, self, "node", leader ? "leader" : "follower", dir, evf,
              urls, first, seed, snap, fromseq, (char *)NULL);
        _exit(127);
    }
    close(a[0]);
    close(b[1]);
    r->in = a[1];
    r->out = b[0];
    return r->pid > 0 ? 0 : -1;
}

/* A line from r within ms, into buf; false on timeout or EOF. */
static bool hear(struct replica *r, char *buf, size_t n, int ms)
{
    struct pollfd p = {.fd = r->out, .events = POLLIN};
    size_t got = 0;

    while (got < n - 1 && poll(&p, 1, ms) > 0) {
        ssize_t k = read(r->out, buf + got, 1);

        if (k <= 0)
            break;
        if (buf[got++] == '\n')
            break;
    }
    buf[got] = 0;
    return got > 0 && buf[got - 1] == '\n';
}

static void tell(struct replica *r, const char *cmd)
{
    if (write(r->in, cmd, strlen(cmd)) < 0)
        perror("tell");
}

static void reap(struct replica *r)
{
    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
    }
    close(r->in);
    close(r->out);
    r->pid = 0;
}

enum loss { LOSS_KILL, LOSS_STOP, LOSS_NODE };

struct round {
    int old_idx, new_idx;
    enum loss loss;
    uint64_t lost_at, promoted_at, resumed_at, epoch_seq;
};

static struct round *R;
static int rounds;

/* One round: lose the leader, promote the follower, start a follower. */
static int one_round(struct replica *L, struct replica *F, int *next_idx, int k)
{
    struct round *rd = &R[k];
    struct replica nf;
    char line[128];
    int node = L->idx % JS_NODES, idx, src = -1;
    char snap[96];
    unsigned long long from = 0;

    rd->old_idx = L->idx;
    rd->new_idx = F->idx;
    rd->loss = k % 10 == 3 ? LOSS_STOP : k % 10 == 7 ? LOSS_NODE : LOSS_KILL;
    sleep_ms(300 + (unsigned)(rand() % 400));
    rd->lost_at = real_ns();
    if (rd->loss == LOSS_KILL)
        kill(L->pid, SIGKILL);
    else if (rd->loss == LOSS_STOP)
        kill(L->pid, SIGSTOP);
    else
        js_node_kill(&C, node);
    tell(F, "promote\n");
    if (!hear(F, line, sizeof line, 30000) || strncmp(line, "promoted", 8)) {
        fprintf(stderr, "failover: round %d (loss %d): no promotion (%s)\n", k,
                (int)rd->loss, line);
        return -1;
    }
    rd->promoted_at = real_ns();
    idx = (*next_idx)++;
    /* The new follower: from the new leader's snapshot, then the stream
     * after it (the first follower replayed the stream from its start). */
    snprintf(snap, sizeof snap, "%s/snap%d", C.dir, idx);
    snprintf(line, sizeof line, "snapshot %s\n", snap);
    tell(F, line);
    if (!hear(F, line, sizeof line, 30000) ||
        sscanf(line, "snapshot %d %llu", &src, &from) != 2 || src != 0) {
        fprintf(stderr, "failover: round %d: no snapshot (%s)\n", k, line);
        return -1;
    }
    if (spawn(&nf, idx, false, idx % JS_NODES, snap, from) != 0 ||
        !hear(&nf, line, sizeof line, 40000)) {
        fprintf(stderr, "failover: round %d: no new follower\n", k);
        return -1;
    }
    if (rd->loss == LOSS_STOP) {
        sleep_ms(400);
        rd->resumed_at = real_ns();
        kill(L->pid, SIGCONT);
        sleep_ms(900); /* it may deliver or append now, if it can */
    } else if (rd->loss == LOSS_NODE) {
        sleep_ms(900);
        if (js_node_start(&C, node) != 0) {
            fprintf(stderr, "failover: round %d: node %d not restarted\n", k,
                    node);
            return -1;
        }
    }
    reap(L);
    *L = *F;
    *F = nf;
    return 0;
}

/* ---- the checker --------------------------------------------------------- */

struct timer_rec {
    uint64_t deadline, s_at, c_at, a_at, first_d;
    uint32_t deliveries;
    int first_d_idx;
    bool scheduled, logged, cancel_logged, ack_logged, held;
};

struct totals {
    uint64_t scheduled, cancelled, acked, delivered, duplicates, dup_held;
    uint64_t stale_records;
    uint64_t lost, early, after, stale, late_first;
    uint64_t first_max, first_sum, dup_age_max;
    int first_n;
};

static struct timer_rec *T;

static int round_of_old(int idx)
{
    for (int k = 0; k < rounds; k++)
        if (R[k].old_idx == idx)
            return k;
    return -1;
}

static void read_events(int idx, struct totals *t)
{
    char path[96], line[160];
    FILE *f;
    int k = round_of_old(idx);

    snprintf(path, sizeof path, "%s/ev%d", C.dir, idx);
    f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a = 0, b = 0, c = 0;
        char kind = line[0];

        if (sscanf(line + 2, "%llu %llu %llu", &a, &b, &c) < 1 || a >= MAX_SEQ)
            continue;
        if (kind == 'H') {
            T[a].held = true;
        } else if (kind == 'S') {
            T[a].scheduled = true;
            T[a].deadline = b;
            t->scheduled++;
        } else if (kind == 'C') {
            T[a].c_at = b;
            t->cancelled++;
        } else if (kind == 'A') {
            T[a].a_at = b;
            t->acked++;
        } else if (kind == 'D') {
            struct timer_rec *x = &T[a];

            t->delivered++;
            if (c < b)
                t->early++;
            if (x->deliveries++ == 0 || c < x->first_d) {
                x->first_d = c;
                x->first_d_idx = idx;
            }
            if (k >= 0 && R[k].loss == LOSS_STOP && c > R[k].lost_at &&
                c > R[k].promoted_at)
                t->stale++;
        }
    }
    fclose(f);
}

/* A second pass: deliveries after a replicated cancel or ack, and each
 * new leader's first delivery after its promotion. */
static void check_after(int idx, struct totals *t)
{
    char path[96], line[160];
    FILE *f;
    uint64_t promoted = 0, first = 0;

    for (int k = 0; k < rounds; k++)
        if (R[k].new_idx == idx)
            promoted = R[k].promoted_at;
    snprintf(path, sizeof path, "%s/ev%d", C.dir, idx);
    f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a = 0, b = 0, c = 0;

        if (line[0] != 'D' ||
            sscanf(line + 2, "%llu %llu %llu", &a, &b, &c) != 3 || a >= MAX_SEQ)
            continue;
        if ((T[a].c_at && c > T[a].c_at) || (T[a].a_at && c > T[a].a_at))
            t->after++;
        if (promoted && c >= promoted && (!first || c < first))
            first = c;
    }
    fclose(f);
    if (promoted && first) {
        uint64_t d = first - promoted;

        t->first_n++;
        t->first_sum += d;
        t->first_max = d > t->first_max ? d : t->first_max;
        t->late_first += d > 1000 * MS;
    }
}

static int mark_logged(const struct tw_store_log_entry *e, void *ctx)
{
    (void)ctx;
    if (e->id.seq >= MAX_SEQ)
        return 0;
    if (e->kind == TW_STORE_LOG_SCHEDULE)
        T[e->id.seq].logged = true;
    else if (e->kind == TW_STORE_LOG_CANCEL)
        T[e->id.seq].cancel_logged = true;
    else if (e->kind == TW_STORE_LOG_ACK)
        T[e->id.seq].ack_logged = true;
    return 0;
}

/* The ground truth of what was replicated: every record in the stream. A
 * process killed after its append and before it wrote the event leaves
 * the log right and its event file short. */
static int read_stream(uint64_t *records, uint64_t *stale)
{
    struct js_conn j = {0};
    struct tw_store_log_rec h;
    natsMsg *m = NULL;
    uint64_t epoch = 0;
    int rc = 0;

    *records = 0;
    if (js_connect(&j, urls, 0) != 0 || js_follow(&j) != 0)
        return -1;
    for (;;) {
        natsStatus st = natsSubscription_NextMsg(&m, j.sub, 2000);

        if (st == NATS_TIMEOUT)
            break;
        if (st != NATS_OK) {
            rc = -1;
            break;
        }
        if (natsMsg_GetDataLength(m) > 7 &&
            tw_store_log_decode(natsMsg_GetData(m),
                                (size_t)natsMsg_GetDataLength(m), &h,
                                mark_logged, NULL) == 0) {
            (*records)++;
            *stale += h.epoch < epoch; /* a deposed leader's, after */
            epoch = h.epoch > epoch ? h.epoch : epoch;
        }
        natsMsg_Destroy(m);
    }
    js_disconnect(&j);
    return rc;
}

static void check_all(int replicas, struct totals *t)
{
    for (int i = 0; i < replicas; i++)
        read_events(i, t);
    for (int i = 0; i < replicas; i++)
        check_after(i, t);
    for (uint32_t s = 0; s < MAX_SEQ; s++) {
        struct timer_rec *x = &T[s];

        if (!x->scheduled && !x->logged)
            continue;
        /* Replicated and not cancelled in the log: delivered, at least
         * once, and acknowledged in the end. */
        if (!x->cancel_logged && (x->deliveries == 0 || !x->ack_logged))
            t->lost++;
        if (x->deliveries > 1) {
            int k = round_of_old(x->first_d_idx);

            t->duplicates += x->deliveries - 1;
            if (x->held) { /* the consumer held its ack back: by design */
                t->dup_held += x->deliveries - 1;
                continue;
            }
            if (k >= 0 && R[k].lost_at > x->first_d &&
                R[k].lost_at - x->first_d > t->dup_age_max)
                t->dup_age_max = R[k].lost_at - x->first_d;
        }
    }
}

static int drain(struct replica *L)
{
    char line[128];
    unsigned long long left = 1;

    tell(L, "drain\n");
    for (int i = 0; i < 40 && left; i++) {
        sleep_ms(250);
        tell(L, "count\n");
        if (!hear(L, line, sizeof line, 10000) ||
            sscanf(line, "count %llu", &left) != 1)
            return -1;
    }
    tell(L, "quit\n");
    waitpid(L->pid, NULL, 0);
    L->pid = 0;
    return left == 0 ? 0 : -1;
}

/* docs/examples/replicated_store.c against this cluster (TW_EXAMPLE names
 * the binary): its own stream, its own leader and follower. */
static int run_example(void)
{
    const char *ex = getenv("TW_EXAMPLE");
    char cmd[512];
    int rc;

    if (!ex)
        return 0;
    snprintf(cmd, sizeof cmd, "%s %s", ex, urls);
    rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "failover: the example failed (%d)\n", rc);
    return rc;
}

static int driver(int n, unsigned seed)
{
    struct replica L, F;
    struct totals t = {0};
    char line[128];
    int next_idx = 2, rc = 0;
    uint64_t t0 = real_ns(), records = 0;

    srand(seed);
    R = calloc((size_t)n, sizeof *R);
    T = calloc(MAX_SEQ, sizeof *T);
    if (!R || !T || js_cluster_start(&C, seed) != 0) {
        js_cluster_stop(&C);
        return 2;
    }
    snprintf(urls, sizeof urls, "%s,%s,%s", C.urls[0], C.urls[1], C.urls[2]);
    if (run_example() != 0) {
        js_cluster_stop(&C);
        return 1;
    }
    if (spawn(&L, 0, true, 0, "-", 0) || !hear(&L, line, sizeof line, 30000) ||
        spawn(&F, 1, false, 1, "-", 0) || !hear(&F, line, sizeof line, 30000)) {
        fprintf(stderr, "failover: replicas did not start\n");
        js_cluster_stop(&C);
        return 2;
    }
    for (rounds = 0; rounds < n && rc == 0; rounds++)
        rc = one_round(&L, &F, &next_idx, rounds);
    if (rc == 0 && drain(&L) != 0) {
        fprintf(stderr, "failover: the last leader did not drain\n");
        rc = -1;
    }
    reap(&F);
    if (L.pid)
        reap(&L);
    if (read_stream(&records, &t.stale_records) != 0) {
        fprintf(stderr, "failover: could not read the stream back\n");
        rc = -1;
    }
    check_all(next_idx, &t);
    printf(
        "storefailover: %d promotions in %.0f s (SIGKILL of the leader, "
        "SIGSTOP/SIGCONT, its JetStream node killed), %llu records in "
        "the stream, %llu schedules, "
        "%llu cancels, %llu acks replicated, %llu deliveries, "
        "%llu duplicates (%llu of deliveries whose ack the consumer held "
        "back; the others first delivered at most %.0f ms before the "
        "leader's loss); first delivery after a promotion: mean %.0f ms, max "
        "%.0f ms, %llu over 1 s; lost %llu, early %llu, after a cancel or "
        "ack %llu, stale leader %llu deliveries and %llu records\n",
        rounds, (double)(real_ns() - t0) / 1e9, (unsigned long long)records,
        (unsigned long long)t.scheduled, (unsigned long long)t.cancelled,
        (unsigned long long)t.acked, (unsigned long long)t.delivered,
        (unsigned long long)t.duplicates, (unsigned long long)t.dup_held,
        (double)t.dup_age_max / 1e6,
        t.first_n ? (double)t.first_sum / t.first_n / 1e6 : 0.0,
        (double)t.first_max / 1e6, (unsigned long long)t.late_first,
        (unsigned long long)t.lost, (unsigned long long)t.early,
        (unsigned long long)t.after, (unsigned long long)t.stale,
        (unsigned long long)t.stale_records);
    if (rc != 0 || t.lost || t.early || t.after || t.stale || t.stale_records)
        rc = 1;
    if (rc == 0 || getenv("TW_KEEP") == NULL)
        js_cluster_stop(&C);
    else
        fprintf(stderr, "failover: kept %s\n", C.dir);
    return rc;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 10 && !strcmp(argv[1], "node"))
        return node_main(argv + 2);
    if (argc == 3)
        return driver(atoi(argv[1]), (unsigned)strtoul(argv[2], NULL, 10));
    fprintf(stderr, "usage: %s PROMOTIONS SEED\n", argv[0]);
    return 2;
}
