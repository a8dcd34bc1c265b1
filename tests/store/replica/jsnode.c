/*
 * jsnode.c: the NATS JetStream side of the replication harness (see
 * jsnode.h): the cluster's processes, the stream, and a replica's log,
 * consumer and promotion.
 */
#include "jsnode.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_WAIT_MS 30000 /* a cluster's first election, on a busy VM */
#define PUB_WAIT_MS 3000

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    nanosleep(&ts, NULL);
}

static bool port_free(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

    if (fd < 0)
        return false;
    ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

/* Six free ports from a random base in 20000-59999. */
static int pick_ports(struct js_cluster *c, unsigned seed)
{
    for (int tries = 0; tries < 100; tries++) {
        int base = 20000 + (int)((seed + (unsigned)tries * 7919u) % 4000u) * 10;
        bool ok = true;

        for (int i = 0; i < JS_NODES && ok; i++) {
            c->port[i] = base + i;
            c->cport[i] = base + 5 + i;
            ok = port_free(c->port[i]) && port_free(c->cport[i]);
        }
        if (ok)
            return 0;
    }
    return -1;
}

static int write_conf(const struct js_cluster *c, int i)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof path, "%s/n%d.conf", c->dir, i);
    f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "server_name: n%d\nlisten: 127.0.0.1:%d\nmax_payload: 8MB\n"
            "jetstream { store_dir: \"%s/n%d\", max_mem: 64MB, "
            "max_file: 2GB }\n"
            "cluster { name: tw, listen: 127.0.0.1:%d, routes: [",
            i, c->port[i], c->dir, i, c->cport[i]);
    for (int k = 0, n = 0; k < JS_NODES; k++)
        if (k != i)
            fprintf(f, "%s\"nats-route://127.0.0.1:%d\"", n++ ? ", " : " ",
                    c->cport[k]);
    fprintf(f, " ] }\n");
    return fclose(f);
}

int js_node_start(struct js_cluster *c, int i)
{
    char conf[128], log[128];
    pid_t pid;

    snprintf(conf, sizeof conf, "%s/n%d.conf", c->dir, i);
    snprintf(log, sizeof log, "%s/n%d.log", c->dir, i);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

        dup2(fd, 1);
        dup2(fd, 2);
        execlp("nats-server", "nats-server", "-c", conf, (char *)NULL);
        _exit(127);
    }
    c->pid[i] = pid;
    return 0;
}

void js_node_kill(struct js_cluster *c, int i)
{
    if (c->pid[i] > 0) {
        kill(c->pid[i], SIGKILL);
        waitpid(c->pid[i], NULL, 0);
        c->pid[i] = 0;
    }
}

static char *all_urls(const struct js_cluster *c, char *buf, size_t n)
{
    snprintf(buf, n, "%s,%s,%s", c->urls[0], c->urls[1], c->urls[2]);
    return buf;
}

/* The stream, R3, and its first message; retried until the cluster has
 * elected its meta leader. */
static int make_stream(const struct js_cluster *c)
{
    struct js_conn j = {0};
    jsStreamConfig sc;
    jsStreamInfo *si = NULL;
    jsPubAck *pa = NULL;
    jsErrCode je = 0;
    const char *subj[] = {JS_SUBJECT};
    char urls[128];
    natsStatus st = NATS_ERR;

    for (int waited = 0; waited < START_WAIT_MS; waited += 200) {
        if (!j.nc && js_connect(&j, all_urls(c, urls, sizeof urls), 0) != 0) {
            sleep_ms(200);
            continue;
        }
        jsStreamConfig_Init(&sc);
        sc.Name = JS_STREAM;
        sc.Subjects = subj;
        sc.SubjectsLen = 1;
        sc.Storage = js_FileStorage;
        sc.Replicas = JS_NODES;
        st = js_AddStream(&si, j.js, &sc, NULL, &je);
        if (st == NATS_OK)
            break;
        sleep_ms(200);
    }
    if (st == NATS_OK) {
        jsStreamInfo_Destroy(si);
        for (int k = 0; k < 50; k++) {
            st = js_Publish(&pa, j.js, JS_SUBJECT, "genesis", 7, NULL, &je);
            if (st == NATS_OK)
                break;
            sleep_ms(100);
        }
        jsPubAck_Destroy(pa);
    }
    js_disconnect(&j);
    if (st != NATS_OK)
        fprintf(stderr, "jetstream: no stream: %s (%d)\n",
                natsStatus_GetText(st), (int)je);
    return st == NATS_OK ? 0 : -1;
}

int js_cluster_start(struct js_cluster *c, unsigned seed)
{
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "/tmp/twrepl-XXXXXX");
    if (!mkdtemp(c->dir) || pick_ports(c, seed) != 0) {
        fprintf(stderr, "jetstream: no directory or no free ports\n");
        return -1;
    }
    for (int i = 0; i < JS_NODES; i++) {
        snprintf(c->urls[i], sizeof c->urls[i], "nats://127.0.0.1:%d",
                 c->port[i]);
        if (write_conf(c, i) != 0 || js_node_start(c, i) != 0)
            return -1;
    }
    return make_stream(c);
}

void js_cluster_stop(struct js_cluster *c)
{
    char cmd[128];

    for (int i = 0; i < JS_NODES; i++)
        js_node_kill(c, i);
    if (c->dir[0] && getenv("TW_KEEP") == NULL) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "jetstream: could not remove %s\n", c->dir);
    }
}

/* ---- a replica's connection ---------------------------------------------- */

int js_connect(struct js_conn *j, const char *urls, int first_node)
{
    char buf[128], *list[JS_NODES], *save = NULL;
    const char *order[JS_NODES];
    natsOptions *o = NULL;
    jsOptions jo;
    int n = 0;

    snprintf(buf, sizeof buf, "%s", urls);
    for (char *t = strtok_r(buf, ",", &save); t && n < JS_NODES;
         t = strtok_r(NULL, ",", &save))
        list[n++] = t;
    for (int k = 0; k < n; k++)
        order[k] = list[(first_node + k) % n];
    if (natsOptions_Create(&o) != NATS_OK)
        return -1;
    natsOptions_SetServers(o, order, n);
    natsOptions_SetNoRandomize(o, true);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 50);
    natsOptions_SetTimeout(o, 1000);
    if (natsConnection_Connect(&j->nc, o) != NATS_OK) {
        natsOptions_Destroy(o);
        j->nc = NULL;
        return -1;
    }
    natsOptions_Destroy(o);
    jsOptions_Init(&jo);
    jo.Wait = PUB_WAIT_MS;
    if (natsConnection_JetStream(&j->js, j->nc, &jo) != NATS_OK) {
        natsConnection_Destroy(j->nc);
        j->nc = NULL;
        return -1;
    }
    return 0;
}

void js_disconnect(struct js_conn *j)
{
    if (j->sub)
        natsSubscription_Destroy(j->sub);
    if (j->js)
        jsCtx_Destroy(j->js);
    if (j->nc)
        natsConnection_Destroy(j->nc);
    j->sub = NULL;
    j->js = NULL;
    j->nc = NULL;
}

int js_log(struct tw_store *s, const struct tw_store_log_rec *rec, void *arg)
{
    struct js_conn *j = arg;
    jsPubOptions po;
    jsPubAck *pa = NULL;
    jsErrCode je = 0;
    natsStatus st;

    struct timespec t0, t1;

    (void)s;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    jsPubOptions_Init(&po);
    po.ExpectLastSeq = j->last_seq;
    po.MaxWait = PUB_WAIT_MS;
    st = js_Publish(&pa, j->js, JS_SUBJECT, rec->data, (int)rec->len, &po, &je);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    j->log_ns += (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
                 (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
    if (st == NATS_OK) {
        j->log_bytes += rec->len;
        /* Read by a snapshot on another thread (js_snapshot()). */
        __atomic_store_n(&j->last_seq, pa->Sequence, __ATOMIC_RELEASE);
        j->appends++;
        jsPubAck_Destroy(pa);
        return 0;
    }
    return je == JSStreamWrongLastSequenceErr ? -ESTALE : -EIO;
}

/* Retried for a while: a node just killed may have led the stream, and
 * the cluster takes a few seconds to elect another. */
int js_follow(struct js_conn *j)
{
    jsSubOptions so;
    jsErrCode je = 0;
    natsStatus st = NATS_ERR;

    for (int waited = 0; waited < START_WAIT_MS; waited += 100) {
        jsSubOptions_Init(&so);
        so.Ordered = true;
        so.Config.DeliverPolicy = js_DeliverByStartSequence;
        so.Config.OptStartSeq = j->last_seq + 1;
        st = js_SubscribeSync(&j->sub, j->js, JS_SUBJECT, NULL, &so, &je);
        if (st == NATS_OK)
            return 0;
        sleep_ms(100);
    }
    fprintf(stderr, "jetstream: subscribe: %s (%d)\n", natsStatus_GetText(st),
            (int)je);
    return -1;
}

/* A consumer that stopped (its server was lost): a new one from the
 * sequence after the last applied. */
int js_refollow(struct js_conn *j)
{
    if (j->sub)
        natsSubscription_Destroy(j->sub);
    j->sub = NULL;
    return js_follow(j);
}

/* One message: applied (1), skipped (0: the stream's first), or -1. */
static int apply_msg(struct js_conn *j, struct tw_store *s, natsMsg *m)
{
    jsMsgMetaData *meta = NULL;
    uint64_t seq;
    int64_t rc;

    if (natsMsg_GetMetaData(&meta, m) != NATS_OK)
        return -1;
    seq = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
    if (seq <= j->last_seq)
        return 0;
    j->last_seq = seq;
    if (seq == 1)
        return 0; /* "genesis" */
    rc =
        tw_store_apply(s, natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m));
    if (rc < 0)
        j->refused++;
    return 1;
}

int js_apply_some(struct js_conn *j, struct tw_store *s, int wait_ms)
{
    int n = 0;

    for (;;) {
        natsMsg *m = NULL;
        natsStatus st = natsSubscription_NextMsg(&m, j->sub, n ? 0 : wait_ms);
        int rc;

        if (st == NATS_TIMEOUT)
            return n;
        if (st != NATS_OK) /* the consumer was lost with its server */
            return js_refollow(j) == 0 ? n : -1;
        rc = apply_msg(j, s, m);
        natsMsg_Destroy(m);
        if (rc < 0)
            return -1;
        n += rc;
    }
}

int js_stream_last(struct js_conn *j, uint64_t *last)
{
    jsStreamInfo *si = NULL;
    jsErrCode je = 0;

    if (js_GetStreamInfo(&si, j->js, JS_STREAM, NULL, &je) != NATS_OK)
        return -1;
    *last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return 0;
}

static int write_file(const void *buf, size_t len, void *ctx)
{
    return fwrite(buf, 1, len, ctx) == len ? 0 : -EIO;
}

int js_promote(struct js_conn *j, struct tw_store *s)
{
    int rc = -EIO;

    for (int tries = 0; tries < 200; tries++) {
        uint64_t last;

        if (js_stream_last(j, &last) != 0) {
            sleep_ms(20);
            continue;
        }
        for (int idle = 0; j->last_seq < last;) {
            int n = js_apply_some(j, s, 200);

            if (n < 0)
                return -EIO;
            idle = n ? 0 : idle + 1;
            if (idle == 10 && js_refollow(j) != 0) /* 2 s without one */
                return -EIO;
        }
        rc = tw_store_promote(s, 0);
        if (rc == 0) {
            natsSubscription_Destroy(j->sub);
            j->sub = NULL;
            return 0;
        }
        if (rc != -ESTALE && rc != -EIO)
            return rc;
    }
    return rc;
}

/* The store's snapshot into path, and the stream sequence to follow it
 * from: read before the snapshot, every record up to it holds LSNs the
 * snapshot has, and those after it that it has too are replays. */
int js_snapshot(struct js_conn *j, struct tw_store *s, const char *path,
                uint64_t *from_seq)
{
    FILE *f = fopen(path, "w");
    int rc;

    if (!f)
        return -errno;
    *from_seq = __atomic_load_n(&j->last_seq, __ATOMIC_ACQUIRE);
    rc = tw_store_snapshot(s, write_file, f, NULL);
    if (fclose(f) != 0 && rc == 0)
        rc = -EIO;
    return rc;
}

static long read_file(void *buf, size_t len, void *ctx)
{
    size_t n = fread(buf, 1, len, ctx);

    return n == 0 && ferror((FILE *)ctx) ? -EIO : (long)n;
}

int js_restore(const char *dir, const char *path)
{
    FILE *f = fopen(path, "r");
    int rc;

    if (!f)
        return -errno;
    rc = tw_store_restore(dir, 0, read_file, f, NULL);
    fclose(f);
    return rc;
}
