/*
 * timewheel/store.h: delayed messages that survive a crash, a durable timer
 * store (libtimewheel-store, pkg-config timewheel-store). A layer over the
 * core (timewheel/core.h) and RocksDB; design, guarantees and the measured
 * choice of database: docs/store.md.
 *
 * A store is a directory. Each timer holds a small payload (a broker keeps
 * the message itself and stores a reference here) and an absolute deadline
 * on the wall clock, CLOCK_REALTIME in ns, so that it means the same after a
 * restart or a reboot. Operations are accepted at once and become durable
 * in groups: a batch is written and synced to disk once it holds
 * commit_max_ops operations or once commit_max_ns has passed since its
 * first one (10 ms by default), whichever comes first. A broker acknowledges
 * its producer when the operation is durable: a completion callback says so
 * (done, below), and tw_store_sync() blocks until it is.
 *
 * Guarantees, after any crash of the process (kill -9 included) and a
 * reopen of the directory:
 *  - A schedule reported durable (its done callback ran with 0, or a later
 *    tw_store_sync() returned 0) and not durably cancelled is delivered at
 *    least once, and never before its deadline on the wall clock: the store
 *    reads CLOCK_REALTIME before each delivery.
 *  - A delivery acknowledged durably (tw_store_ack(), then done with 0) is
 *    not delivered again, nor is a schedule durably cancelled.
 *  - Timers that fell due while the process was down are delivered at once
 *    after the reopen, oldest deadline first, at no more than deliver_rate
 *    deliveries per second.
 *  - Any deadline up to UINT64_MAX ns (year 2554) is held as written: a
 *    record is written once when scheduled and deleted once when cancelled
 *    or acknowledged; nothing is re-written as time passes.
 *  - A delivery not acknowledged is delivered again after a reopen (at
 *    least once, not exactly once).
 *
 * Memory does not grow with the backlog: only timers due within window_ns
 * of now live in memory (in a core wheel on the store's worker), at most
 * window_max of them counting the delivered ones not yet acknowledged; the
 * rest stay on disk and are loaded in deadline order as the window moves.
 * So the memory is bounded by window_max x (about 128 bytes + the payload),
 * plus the operations not yet committed (at most queue_max), plus
 * RocksDB's memtables and block cache (2 x 4 MiB and 8 MiB here). When
 * window_max timers are delivered and not acknowledged, loading stops until
 * acks come: deliveries wait, nothing is lost.
 *
 * Memory: every block the store allocates for itself (the store, its
 * queues, the id table, the timers in memory, the polled copies) comes
 * from the library's allocator, as every layer's does (tw_alloc(),
 * tw_set_allocator() in timewheel/core.h). RocksDB's allocations inside
 * the database are RocksDB's own (C++ operator new and malloc) and do not
 * go through it.
 *
 * Threads: every function may be called from any thread, the delivery
 * callback included (it may ack, cancel and schedule). Delivery and done
 * callbacks run on the store's worker thread, one at a time, so a slow
 * callback delays commits: keep them short. An event loop that wants its
 * deliveries on its own thread opens the store polled (cfg.polled): the
 * worker then queues them, tw_store_fd() is readable while any wait, and
 * the loop runs them with tw_store_poll().
 *
 * fork(): a child may do nothing with a store its parent opened but let
 * go of it. The store's threads are not in the child and its files and
 * lock are the parent's, so there every function on the inherited store
 * answers -ECHILD at once (tw_store_count() reads what it held at the
 * fork), and tw_store_close() returns -ECHILD without joining, flushing
 * or closing anything (exec() or _exit() reclaims the memory). The parent's
 * store goes on untouched. A child that needs a store opens its own, in
 * another directory (this one's lock is the parent's: -EBUSY).
 *
 * Errors are negative errno codes (strerror(-err) names them):
 *   -EINVAL     bad argument (NULL, payload too long, unknown config value)
 *   -EBUSY      the directory is open by another store (this process or
 *               another: a lock file, dir/LOCK)
 *   -ENOTEMPTY  the directory holds files but is not a store (foreign)
 *   -EBADMSG    the directory is a store but its data is damaged (a
 *               table or the write-ahead log garbled, the log cut short
 *               or deleted: timers reported durable are missing), or of
 *               another format version
 *   -ENOSPC     the disk is full;  -EIO  an I/O error
 *   -ENOENT     cancel or ack of an id the store does not hold
 *   -EAGAIN     ack of a timer not delivered yet
 *   -ESHUTDOWN  the store is closing
 *   -ECHILD     a child of fork() calling on its parent's store
 * and, for a replicated store (below): -EPERM (an operation of the other
 * role: schedule on a follower, apply on a leader), -ERANGE (an LSN gap),
 * -ESTALE (a deposed leader's record, or a fenced leader), -EXDEV (a record
 * or snapshot of another replica set), -EEXIST (a deposed leader's
 * directory opened as a follower, a restore over a store).
 * After a write or sync error the store fails every later operation with the
 * same code (it cannot know what reached the disk): close it and open the
 * directory again, which recovers every operation that had been reported
 * durable. A full or failing disk never aborts the process: the store
 * keeps RocksDB's info log (dir/db/LOG) off, whose writer in RocksDB 7.8.3
 * asserts when written after a failed write (docs/store.md).
 */
#ifndef TIMEWHEEL_STORE_H
#define TIMEWHEEL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "timewheel/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest payload, in bytes: a broker stores a reference to its message
 * (a log offset, a message id), not the message; the in-memory window
 * copies payloads, so this bounds its memory per timer. */
#define TW_STORE_PAYLOAD_MAX 1024u

/* Defaults of struct tw_store_config (tw_store_config_init()). */
#define TW_STORE_DEFAULT_COMMIT_NS UINT64_C(10000000) /* 10 ms */
#define TW_STORE_DEFAULT_COMMIT_OPS 65536u
#define TW_STORE_DEFAULT_WINDOW_NS UINT64_C(60000000000) /* 1 min */
#define TW_STORE_DEFAULT_WINDOW_MAX 65536u
#define TW_STORE_DEFAULT_RATE 1000000u /* deliveries per second */
#define TW_STORE_DEFAULT_QUEUE_MAX 65536u
#define TW_STORE_DEFAULT_LEASE_NS UINT64_C(500000000)     /* 0.5 s */
#define TW_STORE_DEFAULT_WATERMARK_NS UINT64_C(100000000) /* 0.1 s */
#define TW_STORE_DEFAULT_LOG_BYTES (900u * 1024u) /* under NATS's 1 MB */

struct tw_store; /* opaque */

/* A timer's identity, handed back by the schedule functions: its deadline
 * (CLOCK_REALTIME ns) and a sequence number unique within the directory.
 * Keep both to cancel or ack; the pair is the record's key on disk, so a
 * cancel finds the record without an index. */
struct tw_store_id {
    uint64_t deadline_ns;
    uint64_t seq;
};

/* A due timer: runs on the store's worker. payload is valid during the call
 * only. Call tw_store_ack(s, id, ...) (here or later, from any thread) once
 * the message has been handed on; until then the timer is delivered again
 * after a restart. */
typedef void tw_store_deliver_fn(struct tw_store *s, struct tw_store_id id,
                                 const void *payload, size_t len, void *arg);

/* An operation's outcome: err is 0 once it is durable, or a negative errno
 * (the operation did not take effect, or the store failed: see above).
 * Runs on the store's worker, exactly once per accepted operation. */
typedef void tw_store_done_fn(struct tw_store_id id, int err, void *arg);

struct tw_store_log_rec;

/* The change log's hand-off (see "Replication" below). */
typedef int tw_store_log_fn(struct tw_store *s,
                            const struct tw_store_log_rec *rec, void *arg);

/*
 * How to open a store. Fill it with tw_store_config_init(), then change
 * fields.
 *  deliver, deliver_arg  the delivery callback, run on the worker;
 *                 required unless polled, NULL if polled.
 *  polled         queue deliveries for tw_store_poll() on the caller's
 *                 thread instead (default false).
 *  commit_ns      a batch is synced at most this long after its first
 *                 operation (> 0).
 *  commit_ops     ... or as soon as it holds this many operations (> 0).
 *  window_ns      how far ahead of now timers are held in memory (> 0).
 *  window_max     most timers in memory, delivered and not yet acknowledged
 *                 included (>= 16).
 *  deliver_rate   most deliveries per second (0: no bound).
 *  queue_max      most operations accepted and not yet committed; a caller
 *                 beyond it waits (the worker itself never waits) (> 0).
 *  log, log_arg   the change log's hand-off (below); NULL: not replicated.
 *  log_sync       log() returns once the host's log has the record, and the
 *                 store renews its lease itself (else tw_store_renew()).
 *  follower       open as a follower: apply, never deliver (below).
 *  lease_ns       a replicated leader delivers only within lease_ns of the
 *                 start of its last append the log confirmed (0: always;
 *                 default TW_STORE_DEFAULT_LEASE_NS once log is set).
 *  watermark_ns   how often a replicated leader appends its fired-through
 *                 watermark, also its heartbeat (0: the default; at most
 *                 lease_ns / 2, so that it renews the lease in time).
 *  log_max_bytes  largest record handed to log() (0: the default; >= 4096).
 */
struct tw_store_config {
    tw_store_deliver_fn *deliver;
    void *deliver_arg;
    uint64_t commit_ns;
    uint32_t commit_ops;
    uint64_t window_ns;
    uint32_t window_max;
    uint32_t deliver_rate;
    uint32_t queue_max;
    bool polled;
    /* Replication (below, "Replication"); all zero: a store of its own. */
    tw_store_log_fn *log;
    void *log_arg;
    bool log_sync;
    bool follower;
    uint64_t lease_ns;
    uint64_t watermark_ns;
    uint32_t log_max_bytes;
    uint64_t reserved[TW_RESERVED_WORDS]; /* zero; see TW_RESERVED_WORDS */
};

/* Fill cfg with the defaults above and no callback. NULL is a no-op. */
TW_PUBLIC void tw_store_config_init(struct tw_store_config *cfg);

/*
 * Open the store in directory dir, creating the directory (one level) and
 * the store if they do not exist, recover it, and start its worker.
 * Returns the store, or NULL and stores a negative errno in *err (when err
 * is not NULL): -EINVAL (NULL dir or cfg, no deliver and not polled, a
 * deliver and polled, a zero bound), -EBUSY,
 * -ENOTEMPTY, -EBADMSG, -ENOSPC, -EIO, -ENOMEM, or the errno of mkdir or
 * open (-EACCES, -ENOTDIR...).
 */
TW_PUBLIC struct tw_store *
tw_store_open(const char *dir, const struct tw_store_config *cfg, int *err);

/*
 * Schedule a delivery of payload (len bytes, 0..TW_STORE_PAYLOAD_MAX; copied)
 * at deadline_ns on CLOCK_REALTIME; a deadline in the past is due at once.
 * Stores the timer's id in *id (when id is not NULL) and returns 0: the
 * operation is accepted, and done(id, err, arg) runs once it is durable or
 * has failed (done may be NULL). Returns -EINVAL (NULL s, NULL payload with
 * len > 0, len too long), -ESHUTDOWN, or the store's failure code; then
 * done never runs.
 */
TW_PUBLIC int tw_store_schedule_at(struct tw_store *s, uint64_t deadline_ns,
                                   const void *payload, size_t len,
                                   tw_store_done_fn *done, void *arg,
                                   struct tw_store_id *id);

/* tw_store_schedule_at() at CLOCK_REALTIME now + delay_ns, saturating. */
TW_PUBLIC int tw_store_schedule_after(struct tw_store *s, uint64_t delay_ns,
                                      const void *payload, size_t len,
                                      tw_store_done_fn *done, void *arg,
                                      struct tw_store_id *id);

/*
 * Cancel the timer id: pending or delivered and not yet acknowledged, it is
 * removed from the store and not delivered (again). Returns 0 when
 * accepted; done then gets 0 once the removal is durable, or -ENOENT (no
 * such timer: never scheduled, already cancelled or acknowledged), or a
 * failure code. Returns -EINVAL for a NULL s, -ESHUTDOWN, or the store's
 * failure code.
 */
TW_PUBLIC int tw_store_cancel(struct tw_store *s, struct tw_store_id id,
                              tw_store_done_fn *done, void *arg);

/*
 * Acknowledge a delivery: the timer id is final and removed. As
 * tw_store_cancel(), but done gets -EAGAIN for a timer that has not been
 * delivered yet (nothing changes).
 */
TW_PUBLIC int tw_store_ack(struct tw_store *s, struct tw_store_id id,
                           tw_store_done_fn *done, void *arg);

/*
 * Block until every operation accepted before this call is durable or has
 * failed; the batch in progress is closed at once rather than at its time
 * bound. Returns 0 when all of them are durable, else the failure code.
 * -EINVAL for a NULL s; -EDEADLK from a callback (the worker would wait for
 * itself).
 */
TW_PUBLIC int tw_store_sync(struct tw_store *s);

/*
 * Schedule and wait until durable: tw_store_schedule_at() then
 * tw_store_sync(). Returns 0 (the timer is durable, its id in *id) or a
 * negative errno as those two.
 */
TW_PUBLIC int tw_store_schedule_durable(struct tw_store *s,
                                        uint64_t deadline_ns,
                                        const void *payload, size_t len,
                                        struct tw_store_id *id);

/*
 * Close the store, once no other thread is in a call on it or will enter
 * one: stop accepting operations, commit those accepted (their done
 * callbacks run), stop the worker, release the directory. Timers stay
 * on disk. NULL is a no-op returning 0. Returns 0, the store's failure code
 * (the store is closed all the same), -EDEADLK from a callback (nothing
 * done), or -ECHILD in a child of fork() (nothing done: the store is the
 * parent's; the child must not use it again). Every store must be closed
 * before a dlclose() of this library (docs/embedding.md, "dlclose").
 */
TW_PUBLIC int tw_store_close(struct tw_store *s);

/*
 * Polled delivery (a store opened with cfg.polled), for an event loop:
 * tw_store_fd() is a descriptor (an eventfd) that is readable while
 * deliveries wait; the loop watches it (epoll, uv_poll_start(),
 * event_new()) and calls tw_store_poll(), which runs up to max waiting
 * deliveries through fn(s, id, payload, len, arg) on the calling thread,
 * oldest deadline first, and returns how many ran; the descriptor stops
 * being readable once none is left. fn may ack, cancel and schedule. A
 * waiting delivery whose cancel or ack becomes durable before a poll takes
 * it is withdrawn (before that operation's done runs): no poll hands it
 * out. A delivery still waiting at close, or not acknowledged, comes again
 * after a reopen. The worker keeps a copy of each waiting payload; the window
 * (window_max) bounds how many wait.
 *
 * tw_store_fd() returns the descriptor (the store owns it and closes it at
 * close), or -EINVAL for a NULL or unpolled store. tw_store_poll() returns
 * -EINVAL for a NULL s or fn, max 0, or an unpolled store. Any thread may
 * poll; two polling at once each take the oldest left.
 */
TW_PUBLIC int tw_store_fd(const struct tw_store *s);
TW_PUBLIC int64_t tw_store_poll(struct tw_store *s, tw_store_deliver_fn *fn,
                                void *arg, uint64_t max);

/* Timers the store holds, on disk, as of its last commit: every durable
 * schedule not yet durably cancelled or acknowledged, those of earlier
 * opens included (the count is committed with each batch). Operations not
 * yet committed are not counted. 0 for NULL. */
TW_PUBLIC uint64_t tw_store_count(const struct tw_store *s);

/*
 * What an operator reads of a running store (tw_store_metrics()). Counters
 * count from the open; gauges are as of the read. Read without stopping
 * anything: each figure is one relaxed load of a value the worker or a
 * producer keeps, so the figures of one read need not be of one instant
 * (unacked may lag deliveries by the ack being applied). Fields are only
 * ever added at the end, taken from reserved, which reads 0.
 */
struct tw_store_metrics {
    uint64_t queue_depth;    /* gauge: operations accepted, not yet durable
                              * or failed (the batch being written too) */
    uint64_t commits;        /* counter: batches written and synced */
    uint64_t committed_ops;  /* counter: operations in those batches */
    uint64_t last_batch_ops; /* gauge: operations in the latest batch */
    uint64_t commit_ns;      /* counter: time in the batches' write and
                              * sync, summed (mean: / commits) */
    uint64_t last_commit_ns; /* gauge: the latest batch's write and sync */
    uint64_t max_commit_ns;  /* gauge: the longest since the open */
    uint64_t sync_failures;  /* counter: writes or syncs that failed (the
                              * store then fails: see the errors above) */
    uint64_t deliveries;     /* counter: timers delivered (to the callback,
                              * or queued for tw_store_poll()), again after
                              * a restart included */
    uint64_t unacked;        /* gauge: delivered, not yet acknowledged or
                              * cancelled */
    uint64_t in_memory;      /* gauge: timers in the window (in memory) */
    uint64_t held;           /* gauge: tw_store_count() */
    uint64_t reserved[8];    /* 0: room for fields to come */
};

/*
 * Fill *m with s's figures (above). 0, -EINVAL for a NULL s or m, -ECHILD
 * in a child of fork(). Cheap enough to read at any rate: no lock.
 */
TW_PUBLIC int tw_store_metrics(const struct tw_store *s,
                               struct tw_store_metrics *m);

/*
 * The same figures in the Prometheus text format (version 0.0.4), written
 * into buf as snprintf() does: never more than len bytes, NUL-terminated
 * when len > 0, and the return is the whole text's length (excluding the
 * NUL), so a return >= len means buf was too short; buf may be NULL when
 * len is 0. Names are timewheel_store_*, times in seconds. Returns a
 * negative errno as tw_store_metrics(), or -EOVERFLOW (text beyond INT_MAX).
 */
TW_PUBLIC int tw_store_metrics_text(const struct tw_store *s, char *buf,
                                    size_t len);

/* A record seen by tw_store_scan(); return non-zero to stop. */
typedef int tw_store_visit_fn(struct tw_store_id id, const void *payload,
                              size_t len, void *ctx);

/*
 * Visit every timer of the store in directory dir, closed, in deadline
 * order, without delivering: what a restart would find (an operator's
 * listing, a checker). Takes the directory's lock for the duration. Returns
 * the number visited, or the errors of tw_store_open().
 */
TW_PUBLIC int64_t tw_store_scan(const char *dir, tw_store_visit_fn *fn,
                                void *ctx);

/* ---- Replication ----------------------------------------------------------
 *
 * A timer library does no consensus: it hands the host what the host's own
 * replicated log (a Raft group, a JetStream stream, a Kafka partition)
 * needs to carry a store to other machines. Design, guarantees and figures:
 * docs/store.md, "Replication"; the flow over NATS JetStream:
 * docs/examples/replicated_store.c.
 *
 * The change log. A store opened with cfg.log (the leader) hands each
 * committed batch to log() on its worker, in commit order, after the batch
 * is durable on the local disk and before its done callbacks run: one or
 * more records of at most log_max_bytes, each a run of entries with
 * consecutive log sequence numbers (LSNs, from 1, never reused in the
 * replica set's life): a schedule with its payload, a cancel, an ack (only
 * operations that took effect), the leader's fired-through watermark (every
 * watermark_ns, so also a heartbeat when idle) and, first from a promoted
 * leader, its epoch. The record's bytes are the unit to append; they are
 * valid during the call only. log() returns 0, or a negative errno: the
 * batch's operations then fail with it (done gets it) and so does the
 * store, as after a write error; -ESTALE (the log refused the append: a
 * newer leader wrote first) fences the store: it delivers nothing more.
 * With cfg.log_sync the host returns once its log has the record, so a
 * done callback with 0 means "replicated": acknowledge the producer then.
 *
 * Leader's directory. The local disk holds every record before the log
 * does, so a leader is at or ahead of the log; a leader that crashed may
 * hold records the log never got, so after a failover its directory is not
 * reopened as a follower (-EEXIST): a new replica starts from a snapshot.
 *
 * A follower (cfg.follower; its deliver and log serve once promoted)
 * applies records with
 * tw_store_apply(), keeps the same records on disk as the leader (a
 * snapshot of either restores the same timers), delivers nothing, holds no
 * window in memory (only the record being applied), and refuses schedule,
 * cancel and ack (-EPERM). Its writes are not synced one by one: its
 * applied LSN is written in the same atomic batch as the entries, so after
 * a crash it asks the log from an older LSN, and a replay changes nothing.
 *
 * Promotion: tw_store_promote() makes a follower the leader of a new
 * epoch. Its first record is the epoch (a host appends it conditionally,
 * e.g. on the log's last sequence, which fences the old leader); then it
 * delivers as a store reopened after a crash: every timer due and not
 * acknowledged in the log, oldest first, including those the old leader
 * delivered but whose ack had not reached the log. Timers due before the
 * replicated watermark and not acknowledged are such redeliveries; the
 * others the old leader may have delivered are those of its last
 * watermark_ns (plus its last commit_ns and the log's latency), which
 * bounds the duplicates a failover adds.
 *
 * Fencing: every record carries its leader's epoch. A follower refuses a
 * record of an epoch older than one it applied (-ESTALE), and a leader
 * delivers only while its lease holds (lease_ns from the start of its last
 * append the log confirmed): a leader paused past a promotion resumes with
 * an expired lease, delivers nothing, and its next append is refused by the
 * log; the host calls tw_store_fence() (or log() returns -ESTALE). A
 * promoted leader delivers nothing for its first lease_ns, by which time
 * the deposed leader's lease has run out, so two leaders never deliver at
 * once (every replica must have the same lease_ns).
 */

/* A record of the change log, as handed to log() and read back by
 * tw_store_log_decode(). */
struct tw_store_log_rec {
    uint64_t set;       /* the replica set's id: random, from its creation */
    uint64_t epoch;     /* the epoch of the leader that wrote it */
    uint64_t first_lsn; /* the LSN of its first entry */
    uint64_t last_lsn;  /* ... and of its last */
    const void *data;   /* the record's bytes, to append as they are */
    size_t len;
};

enum tw_store_log_kind {
    TW_STORE_LOG_SCHEDULE = 1,  /* id, payload */
    TW_STORE_LOG_CANCEL = 2,    /* id */
    TW_STORE_LOG_ACK = 3,       /* id */
    TW_STORE_LOG_WATERMARK = 4, /* id.deadline_ns: every timer due before it
                                 * was delivered, as the leader knew */
    TW_STORE_LOG_EPOCH = 5      /* id.deadline_ns: a new leader's epoch */
};

/* One entry of a record; payload valid during the visit only. */
struct tw_store_log_entry {
    uint64_t lsn;
    enum tw_store_log_kind kind;
    struct tw_store_id id;
    const void *payload;
    size_t len;
};

typedef int tw_store_log_visit_fn(const struct tw_store_log_entry *e,
                                  void *ctx);

/*
 * Read a record's header into *rec (when rec is not NULL; its data and len
 * are the record) and visit its entries in order (when fn is not NULL;
 * non-zero from fn stops the visit and is returned). Returns 0, -EINVAL
 * (NULL data, or len 0) or -EBADMSG (not a record, damaged, truncated).
 */
TW_PUBLIC int tw_store_log_decode(const void *data, size_t len,
                                  struct tw_store_log_rec *rec,
                                  tw_store_log_visit_fn *fn, void *ctx);

/*
 * Apply a record (the bytes log() was handed) to a follower: its entries
 * with an LSN above the follower's applied LSN, in order, in one atomic
 * local write. A record wholly applied already changes nothing (returns 0),
 * so a host may replay the log from any older point. Returns the number of
 * entries applied (>= 0), or -EINVAL (NULL s or data), -EPERM (s is a
 * leader), -EBADMSG (not a record, or damaged), -EXDEV (a record of another
 * replica set), -ESTALE (of an older epoch than one applied: a deposed
 * leader's), -ERANGE (its first LSN leaves a gap after the applied LSN:
 * nothing applied; restore a snapshot or read the log from the applied
 * LSN), -ENOMEM, or the store's write error. Nothing is applied on any
 * error. Any thread; calls are serialised.
 */
TW_PUBLIC int64_t tw_store_apply(struct tw_store *s, const void *data,
                                 size_t len);

/*
 * Make the follower s the leader of epoch (0: the highest epoch it applied
 * + 1). Hands its epoch record to cfg.log (a follower's cfg.log is the
 * hand-off it uses once promoted; NULL: none), writes the role on disk,
 * then delivers: due timers at once, oldest first. Returns 0, -EINVAL (NULL
 * s), -EPERM (s is a leader already), -ESTALE (epoch not above the applied
 * one), log()'s error (s stays a follower), or a write error.
 */
TW_PUBLIC int tw_store_promote(struct tw_store *s, uint64_t epoch);

/*
 * The host learned that s is no longer the leader (its log refused an
 * append, or holds a newer epoch): s delivers nothing more and fails every
 * operation with -ESTALE. Returns 0, -EINVAL for NULL; twice is a no-op.
 */
TW_PUBLIC int tw_store_fence(struct tw_store *s);

/*
 * Without cfg.log_sync: the log confirmed an append the host started at
 * sent_mono_ns (CLOCK_MONOTONIC): the lease runs lease_ns from there.
 * Returns 0, -EINVAL (NULL s), -EPERM (not a replicated leader).
 */
TW_PUBLIC int tw_store_renew(struct tw_store *s, uint64_t sent_mono_ns);

/* Where a store stands in its replica set. */
struct tw_store_replica {
    uint64_t set;          /* 0 until a follower applied its first record */
    uint64_t epoch;        /* the highest epoch written or applied */
    uint64_t lsn;          /* the last LSN written (leader) or applied */
    uint64_t watermark_ns; /* the last fired-through watermark */
    bool leader;
    bool fenced;
};

/* Fill *out. Returns 0, -EINVAL for a NULL argument. */
TW_PUBLIC int tw_store_replica_info(struct tw_store *s,
                                    struct tw_store_replica *out);

/* A snapshot's bytes, in order; return 0 or a negative errno to stop. */
typedef int tw_store_write_fn(const void *buf, size_t len, void *ctx);
/* Up to len bytes into buf: the count, 0 at the end, or a negative errno. */
typedef long tw_store_read_fn(void *buf, size_t len, void *ctx);

/*
 * Write a snapshot of the store s (leader or follower, open, while it
 * works) through fn: its set, epoch, LSN and watermark, then every timer in
 * deadline order, then a checksum; consistent at one LSN, stored in *lsn
 * (when not NULL). A new follower restored from it applies the log from
 * *lsn + 1. Returns 0, -EINVAL (NULL s or fn), -ENOMEM, -EBADMSG (a
 * damaged record met), fn's error, or a read error.
 */
TW_PUBLIC int tw_store_snapshot(struct tw_store *s, tw_store_write_fn *fn,
                                void *ctx, uint64_t *lsn);

/*
 * Make the directory dir (new or empty) a follower's from a snapshot read
 * through fn; then open it with cfg.follower. set: the replica set the
 * snapshot must be of (0: any). Stores the snapshot's LSN in *lsn (when not
 * NULL). Returns 0, -EINVAL (NULL dir or fn), -EXDEV (a snapshot of another
 * set), -EBADMSG (not a snapshot, damaged or truncated), -EEXIST (dir
 * holds a store already), fn's error, or the errors of tw_store_open().
 * A restore that failed leaves a directory to remove before the next try.
 */
TW_PUBLIC int tw_store_restore(const char *dir, uint64_t set,
                               tw_store_read_fn *fn, void *ctx, uint64_t *lsn);

#ifdef __cplusplus
}
#endif

#endif /* TIMEWHEEL_STORE_H */
