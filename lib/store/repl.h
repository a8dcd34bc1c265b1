/*
 * repl.h: the store's replication state and the hooks the rest of the
 * store calls (private; included by store.h). The files:
 *   changelog.c  the record format (encode, tw_store_log_decode()), the
 *                'R' record on disk, the leader's side: LSNs of a batch,
 *                its records handed to cfg.log, the watermark heartbeat,
 *                the lease, fencing.
 *   follower.c   tw_store_apply() and tw_store_promote().
 *   snapshot.c   tw_store_snapshot() and tw_store_restore().
 *
 * On disk, one more record beside 'M', 'R' (its codec: key.h), written in
 * the same atomic batch as the entries it counts. A store never
 * replicated has none, and pays nothing.
 *
 * A record of the change log (the bytes handed to cfg.log, applied by a
 * follower), big-endian:
 *   header  "TWL1" set(8) epoch(8) first_lsn(8) count(4) sum(8)
 *   entry   kind(1) deadline(8) seq(8) [len(2) payload: a schedule only]
 * sum is FNV-1a over the entries, so a damaged record is refused whole.
 */
#ifndef TW_STORE_REPL_H
#define TW_STORE_REPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "key.h"
#include "timewheel/store.h"

#define TW__LOG_HDR 40
#define TW__LOG_MAGIC "TWL1"

struct tw__op;
struct tw__db_batch;

struct tw__repl {
    bool init;             /* mutexes made (a partial open may not) */
    bool on;               /* a replica set's member: LSNs, 'R' */
    _Atomic bool follower; /* cleared by a promotion */
    uint64_t lease_ns, watermark_ns;
    size_t max_bytes;
    /* Under mu: read by tw_store_replica_info() from any thread. */
    pthread_mutex_t mu;
    uint64_t set, epoch, lsn, watermark;
    bool fenced;
    /* The worker's (leader) or apply_mu's (follower). */
    pthread_mutex_t apply_mu;
    uint64_t batch_entries;        /* of the batch being committed */
    uint64_t last_mark;            /* CLOCK_MONOTONIC of the last watermark */
    struct tw__db_batch *abatch;   /* apply's and promote's write batch */
    _Atomic uint64_t lease_until;  /* CLOCK_MONOTONIC */
    _Atomic uint64_t deliver_from; /* a promoted leader waits a lease */
    unsigned char *buf;            /* the record being built */
    size_t cap;
};

/* store.c: after the 'M' record is read. */
int tw__repl_open(struct tw_store *s);
void tw__repl_close(struct tw_store *s);

/* ops.c: 0, or why s takes no operation now (-EPERM on a follower). */
int tw__repl_refuse(const struct tw_store *s);

/* commit.c: LSNs for the batch's operations that took effect and the 'R'
 * record into the write batch; after the write, the records to cfg.log. */
void tw__repl_resolve(struct tw_store *s, const struct tw__op *ops, size_t n);
int tw__repl_commit(struct tw_store *s, const struct tw__op *ops, size_t n);

/* store.c, the worker's turn: nothing on a follower; the heartbeat, then
 * the window (tw__window_step()). The ns it may sleep. */
uint64_t tw__repl_step(struct tw_store *s);

/* window.c: may the leader deliver now (its lease holds)? */
bool tw__repl_may_deliver(struct tw_store *s);

/* changelog.c, for follower.c and snapshot.c: 'R' into s->repl. */
int tw__repl_read(struct tw_store *s, bool *found, bool *leader);
/* Append one entry at p; its size. */
size_t tw__log_put_entry(unsigned char *p, enum tw_store_log_kind kind,
                         struct tw_store_id id, const void *payload,
                         size_t len);
/* Hand the record of `count` entries in buf[TW__LOG_HDR..end) to cfg.log
 * (none: 0); renews the lease under log_sync, fences on -ESTALE. */
int tw__log_hand(struct tw_store *s, size_t end, uint64_t first_lsn,
                 uint32_t count);
/* Visit the entries of a record tw_store_log_decode() accepted (rec is
 * its header), without checking it again. */
int tw__log_visit(const struct tw_store_log_rec *rec, tw_store_log_visit_fn *fn,
                  void *ctx);
/* FNV-1a, 64 bits. */
uint64_t tw__fnv(uint64_t h, const void *p, size_t n);
#define TW__FNV_INIT UINT64_C(0xcbf29ce484222325)

/* 'R' of this state into v. */
static inline void tw__repl_put(uint64_t set, uint64_t epoch, uint64_t lsn,
                                uint64_t mark, bool leader,
                                unsigned char v[TW__REPL_LEN])
{
    struct tw__repl_rec r = {set, epoch, lsn, mark, leader};

    tw__repl_encode(&r, v);
}

#endif /* TW_STORE_REPL_H */
