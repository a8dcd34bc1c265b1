#define _DEFAULT_SOURCE /* mkdtemp */
/*
 * replicated_store: a broker's delayed messages that outlive the machine,
 * the durable timer store (timewheel/store.h) replicated through NATS
 * JetStream, as a user builds it:
 *
 *   cc replicated_store.c $(pkg-config --cflags --libs timewheel-store) -lnats
 *   replicated_store nats://127.0.0.1:4222[,nats://...]
 *
 * The flow, in one process for the example (two brokers on two machines in
 * life): the leader's store hands every committed batch to log(), which
 * publishes it to an R3 stream on the stream's last sequence (JetStream's
 * expected-last-sequence); the producer is acknowledged (done) once
 * JetStream has it. A follower's store applies the stream's records in
 * order, delivering nothing. Then the leader is lost: the follower catches
 * up with the stream's last sequence and promotes itself, its epoch record
 * appended on that sequence (so a deposed leader's next append is
 * refused), and delivers every message, each after its deadline.
 *
 * Exits 0 when every message was delivered by the new leader after its
 * deadline, 1 if not, 2 if JetStream could not be reached.
 */
#include <errno.h>
#include <nats/nats.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <timewheel/store.h>

#define STREAM "TWEXAMPLE"
#define SUBJECT "twexample"
#define MESSAGES 8

static atomic_int acked_producers, published, early;

static uint64_t wall_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A broker's side of the log: its JetStream context and the stream's
 * last sequence it knows (appended or applied). */
struct log {
    jsCtx *js;
    natsSubscription *sub;
    uint64_t last_seq;
};

/* cfg.log: append the record on the last sequence; -ESTALE when another
 * leader appended first (this one is deposed). */
static int append(struct tw_store *s, const struct tw_store_log_rec *rec,
                  void *arg)
{
    struct log *l = arg;
    jsPubOptions po;
    jsPubAck *pa = NULL;
    jsErrCode je = 0;

    (void)s;
    jsPubOptions_Init(&po);
    po.ExpectLastSeq = l->last_seq;
    if (js_Publish(&pa, l->js, SUBJECT, rec->data, (int)rec->len, &po, &je) !=
        NATS_OK)
        return je == JSStreamWrongLastSequenceErr ? -ESTALE : -EIO;
    l->last_seq = pa->Sequence;
    jsPubAck_Destroy(pa);
    return 0;
}

/* The follower: apply what the stream holds after last_seq. */
static void apply_stream(struct log *l, struct tw_store *f, uint64_t upto)
{
    while (l->last_seq < upto) {
        natsMsg *m = NULL;
        jsMsgMetaData *meta = NULL;

        if (natsSubscription_NextMsg(&m, l->sub, 5000) != NATS_OK)
            return;
        if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
            l->last_seq = meta->Sequence.Stream;
            jsMsgMetaData_Destroy(meta);
        }
        /* A record applied twice, or an older one, changes nothing. */
        if (tw_store_apply(f, natsMsg_GetData(m),
                           (size_t)natsMsg_GetDataLength(m)) < 0)
            fprintf(stderr, "a record refused\n");
        natsMsg_Destroy(m);
    }
}

static uint64_t stream_last(jsCtx *js)
{
    jsStreamInfo *si = NULL;
    uint64_t last = 0;

    if (js_GetStreamInfo(&si, js, STREAM, NULL, NULL) == NATS_OK) {
        last = si->State.LastSeq;
        jsStreamInfo_Destroy(si);
    }
    return last;
}

static void producer_acked(struct tw_store_id id, int err, void *arg)
{
    (void)id;
    (void)arg;
    if (err == 0) /* in the leader's disk and in JetStream: tell the producer */
        atomic_fetch_add(&acked_producers, 1);
}

static void deliver(struct tw_store *s, struct tw_store_id id,
                    const void *payload, size_t len, void *arg)
{
    (void)arg;
    if (wall_ns() < id.deadline_ns)
        atomic_fetch_add(&early, 1);
    printf("published %.*s\n", (int)len, (const char *)payload);
    atomic_fetch_add(&published, 1);
    tw_store_ack(s, id, NULL, NULL);
}

static struct tw_store *open_store(const char *dir, bool follower,
                                   struct log *l)
{
    struct tw_store_config cfg;
    int err = 0;
    struct tw_store *s;

    tw_store_config_init(&cfg);
    cfg.deliver = deliver;
    cfg.log = append; /* a follower's serves once it is promoted */
    cfg.log_arg = l;
    cfg.log_sync = true; /* done once JetStream has the batch */
    cfg.follower = follower;
    s = tw_store_open(dir, &cfg, &err);
    if (!s)
        fprintf(stderr, "open %s: %s\n", dir, strerror(-err));
    return s;
}

static int connect_js(const char *urls, natsConnection **nc, jsCtx **js)
{
    jsStreamConfig sc;
    const char *subjects[] = {SUBJECT};
    jsPubAck *pa = NULL;

    if (natsConnection_ConnectTo(nc, urls) != NATS_OK ||
        natsConnection_JetStream(js, *nc, NULL) != NATS_OK)
        return -1;
    jsStreamConfig_Init(&sc);
    sc.Name = STREAM;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Replicas = 3;
    js_AddStream(NULL, *js, &sc, NULL, NULL); /* there already: fine */
    /* A first message, so that every append names a last sequence. */
    if (stream_last(*js) == 0 &&
        js_Publish(&pa, *js, SUBJECT, "start", 5, NULL, NULL) == NATS_OK)
        jsPubAck_Destroy(pa);
    return stream_last(*js) ? 0 : -1;
}

int main(int argc, char **argv)
{
    char ldir[] = "/tmp/replicated-leader-XXXXXX";
    char fdir[] = "/tmp/replicated-follower-XXXXXX";
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    struct log leader_log = {0}, follower_log = {0};
    struct tw_store *leader, *follower;
    jsSubOptions so;
    uint64_t start = wall_ns();
    char cmd[128];
    int rc;

    if (argc != 2 || connect_js(argv[1], &nc, &js) != 0) {
        fprintf(stderr, "usage: %s NATS_URLS (a JetStream cluster)\n", argv[0]);
        return 2;
    }
    if (!mkdtemp(ldir) || !mkdtemp(fdir))
        return 2;
    leader_log.js = follower_log.js = js;
    leader_log.last_seq = stream_last(js);
    follower_log.last_seq = leader_log.last_seq;

    /* The follower reads the stream from where the leader starts. */
    jsSubOptions_Init(&so);
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = follower_log.last_seq + 1;
    if (js_SubscribeSync(&follower_log.sub, js, SUBJECT, NULL, &so, NULL) !=
        NATS_OK)
        return 2;
    leader = open_store(ldir, false, &leader_log);
    follower = open_store(fdir, true, &follower_log);
    if (!leader || !follower)
        return 2;

    /* Producers: messages due 0.5-1.2 s from now, acknowledged once
     * replicated. */
    for (int i = 0; i < MESSAGES; i++) {
        char msg[32];
        int n = snprintf(msg, sizeof msg, "message-%d", i);

        tw_store_schedule_after(leader, (500 + 100 * (uint64_t)i) * 1000000,
                                msg, (size_t)n, producer_acked, NULL, NULL);
    }
    tw_store_sync(leader);
    printf("%d producers acknowledged after replication\n",
           atomic_load(&acked_producers));

    /* The leader's machine is lost before anything is due. */
    tw_store_fence(leader);
    tw_store_close(leader);

    /* Failover: catch up with the stream, then promote on its last
     * sequence: the epoch record is the next append. */
    apply_stream(&follower_log, follower, stream_last(js));
    rc = tw_store_promote(follower, 0);
    printf("follower promoted (%s) %.0f ms after the start\n",
           rc ? strerror(-rc) : "ok", (double)(wall_ns() - start) / 1e6);
    while (rc == 0 && atomic_load(&published) < MESSAGES &&
           wall_ns() - start < 10000000000u)
        usleep(10000);
    tw_store_close(follower);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", ldir, fdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s and %s\n", ldir, fdir);
    natsSubscription_Destroy(follower_log.sub);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    printf("%d of %d published by the new leader, %d early\n",
           atomic_load(&published), MESSAGES, atomic_load(&early));
    return atomic_load(&published) == MESSAGES && !atomic_load(&early) &&
                   atomic_load(&acked_producers) == MESSAGES
               ? 0
               : 1;
}
