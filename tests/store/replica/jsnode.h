/*
 * What the JetStream harness (failover.c) and its benchmark (replbench.c)
 * share: a 3-node NATS JetStream cluster on 127.0.0.1 started and stopped
 * by the caller (nats-server processes, data under a mktemp directory,
 * ports chosen free), the R3 stream that carries a store's change log, and
 * a replica's side of it: the leader's log() publishing each record on the
 * stream's last sequence (JetStream's expected-last-sequence: a deposed
 * leader's append is refused, -ESTALE), the follower's ordered consumer
 * applying records in stream order, and the promotion on the stream's last
 * sequence.
 */
#ifndef TESTS_STORE_REPLICA_JSNODE_H
#define TESTS_STORE_REPLICA_JSNODE_H

#include <nats/nats.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "timewheel/store.h"

#define JS_NODES 3
#define JS_STREAM "TWLOG"
#define JS_SUBJECT "twlog"
/* The servers take messages of up to 8 MB (NATS's default is 1 MB), so
 * that a batch of 65,536 schedules goes as one record (log_max_bytes). */
#define JS_MAX_RECORD (8u << 20)

struct js_cluster {
    char dir[64];
    int port[JS_NODES], cport[JS_NODES];
    pid_t pid[JS_NODES];
    char urls[JS_NODES][32];
};

/* Start the three servers under a new mktemp dir and create the stream
 * (R3, file storage) with one first message, so that every append of a
 * leader names a last sequence >= 1. 0 or -1 (a message on stderr). */
int js_cluster_start(struct js_cluster *c, unsigned seed);
/* Stop node i (SIGKILL) and start it again on its data. */
void js_node_kill(struct js_cluster *c, int i);
int js_node_start(struct js_cluster *c, int i);
/* Stop every server and remove the directory. */
void js_cluster_stop(struct js_cluster *c);

/* A replica's connection: first_node is the server it connects to first
 * (no randomising: the harness knows whose node it stops). */
struct js_conn {
    natsConnection *nc;
    jsCtx *js;
    natsSubscription *sub;
    uint64_t last_seq; /* the stream sequence applied or appended last */
    uint64_t appends, refused;
    uint64_t log_ns, log_bytes; /* in js_log(), and what it appended */
};

int js_connect(struct js_conn *j, const char *urls, int first_node);
void js_disconnect(struct js_conn *j);

/* cfg.log of a replica: publish rec on j->last_seq; -ESTALE when the
 * stream has moved on, -EIO on any other failure. */
int js_log(struct tw_store *s, const struct tw_store_log_rec *rec, void *arg);

/* Follow the stream from j->last_seq + 1 (an ordered consumer). */
int js_follow(struct js_conn *j);
/* Drop the consumer and follow again after j->last_seq. */
int js_refollow(struct js_conn *j);
/* Apply what comes within wait_ms to s; the records applied, or -1. A
 * record refused by the store is counted in j->refused. */
int js_apply_some(struct js_conn *j, struct tw_store *s, int wait_ms);
/* The stream's last sequence into *last: 0 or -1. */
int js_stream_last(struct js_conn *j, uint64_t *last);
/* Catch up with the stream's last sequence, then tw_store_promote();
 * retried while another append gets in first. 0 or a negative errno. */
int js_promote(struct js_conn *j, struct tw_store *s);

/* A new replica: the leader's snapshot into a file, with the stream
 * sequence a follower restored from it follows after; the restore. */
int js_snapshot(struct js_conn *j, struct tw_store *s, const char *path,
                uint64_t *from_seq);
int js_restore(const char *dir, const char *path);

#endif
