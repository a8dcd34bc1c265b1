/*
 * db.c: the one seam between the store and its database, RocksDB (chosen
 * by measurement: docs/store.md, "Choosing the database"). Everything the
 * store asks of a database is here: open with bounded memory, a synced
 * write of a batch (the group commit), a point read, an iterator in key
 * order from a key, and errors as negative errno codes. Swapping the
 * database means rewriting this file only.
 *
 * Memory: two memtables of 4 MiB and a block cache of 8 MiB, so that the
 * database's share of the store's resident memory stays bounded whatever
 * the backlog (the index and filter blocks of the tables live in the cache
 * too). Background work: two jobs, as the machine has two cores.
 */
#include <errno.h>
#include <rocksdb/c.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define MEMTABLE_BYTES (4u << 20)
#define MEMTABLES 2
#define BLOCK_CACHE_BYTES (8u << 20)
#define BACKGROUND_JOBS 2
#define LOG_FILES_KEPT 2

/* RocksDB's info log (db/LOG) is kept off: every level, the header
 * included, is below this one (InfoLogLevel's NUM_INFO_LOG_LEVELS), so
 * the file is created and never written. Its writer in RocksDB 7.8.3
 * asserts (SIGABRT: `sync_without_flush_called_` in WritableFileWriter)
 * when it is written again after one failed write, which a full disk or a
 * failing one gives it; a library may not take its host down because a
 * disk filled (issue 28, 2). The store's own errors come back as errno
 * codes, which is what an operator gets instead of the log's lines. */
#define INFO_LOG_OFF 6

/* Recovery of the write-ahead log (WALRecoveryMode): a torn last record is
 * what a crash leaves of a write never reported durable, and is dropped;
 * damage anywhere before it is "Corruption" (-EBADMSG). RocksDB's default
 * (point in time) stopped at the damage and opened with what came before,
 * silently. A log cut short or deleted is witness.c's to find; RocksDB
 * also checks the closed logs it tracks in its MANIFEST
 * (track_and_verify_wals_in_manifest, set in set_recovery()). */
#define WAL_TOLERATE_TORN_TAIL 1

struct tw__db {
    rocksdb_t *db;
    rocksdb_options_t *opt;
    rocksdb_block_based_table_options_t *table;
    rocksdb_cache_t *cache;
    rocksdb_writeoptions_t *sync_write;
    rocksdb_writeoptions_t *plain_write; /* a follower's apply */
    rocksdb_readoptions_t *read;
};

struct tw__db_iter {
    rocksdb_iterator_t *it;
    rocksdb_readoptions_t *ro;
    unsigned char lower[TW__KEY_LEN];
};

/* RocksDB reports a Status as text, its kind first ("Corruption: ...",
 * "IO error: ...": Status::ToString()), then a message that may name
 * anything ("Corruption: block checksum mismatch" holds "lock "). So the
 * kind decides, and only an I/O error's text is read further: a full disk
 * ("No space left on device"), or the database's lock held (RocksDB's own
 * db/LOCK, "While lock file: ...: Resource temporarily unavailable", or
 * "lock hold by current process"). Damage of any kind -- a corrupt block
 * or log, a file the database lists and cannot find, a database that is
 * not there -- is -EBADMSG; the rest -EIO. */
static bool starts(const char *msg, const char *kind)
{
    return strncmp(msg, kind, strlen(kind)) == 0;
}

int tw__db_errno(const char *msg)
{
    if (!msg)
        return -EIO;
    if (starts(msg, "Corruption:") || starts(msg, "NotFound:") ||
        starts(msg, "Invalid argument:"))
        return -EBADMSG;
    if (!starts(msg, "IO error:"))
        return -EIO;
    if (strstr(msg, "No space left"))
        return -ENOSPC;
    if (strstr(msg, "While lock file") || strstr(msg, "lock hold by"))
        return -EBUSY;
    return -EIO;
}

static int take_err(char *err)
{
    int rc = tw__db_errno(err);

    rocksdb_free(err);
    return rc;
}

/* Recovery replays the write-ahead log into the memtable and leaves it
 * there (the C API has no setter for this one): flushing it to a table
 * file first, RocksDB's default, made a restart with 10^6 pending take a
 * second. */
static void set_recovery(struct tw__db *d)
{
    rocksdb_options_t *o = rocksdb_options_create();
    char *err = NULL;

    rocksdb_get_options_from_string(d->opt,
                                    "avoid_flush_during_recovery=true;"
                                    "track_and_verify_wals_in_manifest=true",
                                    o, &err);
    if (err) {
        rocksdb_free(err);
        rocksdb_options_destroy(o);
        return;
    }
    rocksdb_options_destroy(d->opt);
    d->opt = o;
}

static void set_options(struct tw__db *d, bool create)
{
    rocksdb_options_t *o = d->opt;

    rocksdb_options_set_create_if_missing(o, create);
    rocksdb_options_set_paranoid_checks(o, 1);
    rocksdb_options_set_wal_recovery_mode(o, WAL_TOLERATE_TORN_TAIL);
    rocksdb_options_set_write_buffer_size(o, MEMTABLE_BYTES);
    rocksdb_options_set_max_write_buffer_number(o, MEMTABLES);
    rocksdb_options_set_max_background_jobs(o, BACKGROUND_JOBS);
    rocksdb_options_set_keep_log_file_num(o, LOG_FILES_KEPT);
    rocksdb_options_set_info_log_level(o, INFO_LOG_OFF);
    d->cache = rocksdb_cache_create_lru(BLOCK_CACHE_BYTES);
    d->table = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(d->table, d->cache);
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(d->table, 1);
    rocksdb_options_set_block_based_table_factory(o, d->table);
    set_recovery(d);
}

int tw__db_open(const char *path, bool create, struct tw__db **out)
{
    struct tw__db *d = tw__zalloc(sizeof *d);
    char *err = NULL;

    if (!d)
        return -ENOMEM;
    d->opt = rocksdb_options_create();
    set_options(d, create);
    d->sync_write = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(d->sync_write, 1);
    d->plain_write = rocksdb_writeoptions_create();
    d->read = rocksdb_readoptions_create();
    d->db = rocksdb_open(d->opt, path, &err);
    if (err) {
        int rc = take_err(err);

        d->db = NULL;
        tw__db_close(d);
        return rc;
    }
    *out = d;
    return 0;
}

/* A clean close writes the memtable out, so that the next open has no log
 * to replay (after a crash it replays at most two memtables: MEMTABLES x
 * MEMTABLE_BYTES bounds the restart's work, whatever the backlog). */
static void flush(rocksdb_t *db)
{
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    char *err = NULL;

    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_flush(db, fo, &err);
    rocksdb_free(err); /* nothing is lost: the log still holds it */
    rocksdb_flushoptions_destroy(fo);
}

void tw__db_close(struct tw__db *d)
{
    if (!d)
        return;
    if (d->db) {
        flush(d->db);
        rocksdb_close(d->db);
    }
    rocksdb_readoptions_destroy(d->read);
    rocksdb_writeoptions_destroy(d->sync_write);
    rocksdb_writeoptions_destroy(d->plain_write);
    rocksdb_options_destroy(d->opt);
    rocksdb_block_based_options_destroy(d->table);
    rocksdb_cache_destroy(d->cache);
    tw_free(d, sizeof *d);
}

struct tw__db_batch *tw__db_batch_new(void)
{
    return (struct tw__db_batch *)rocksdb_writebatch_create();
}

void tw__db_batch_free(struct tw__db_batch *b)
{
    if (b)
        rocksdb_writebatch_destroy((rocksdb_writebatch_t *)b);
}

void tw__db_batch_clear(struct tw__db_batch *b)
{
    rocksdb_writebatch_clear((rocksdb_writebatch_t *)b);
}

void tw__db_batch_put(struct tw__db_batch *b, const void *k, size_t kl,
                      const void *v, size_t vl)
{
    rocksdb_writebatch_put((rocksdb_writebatch_t *)b, k, kl, v, vl);
}

void tw__db_batch_del(struct tw__db_batch *b, const void *k, size_t kl)
{
    rocksdb_writebatch_delete((rocksdb_writebatch_t *)b, k, kl);
}

int tw__db_write(struct tw__db *d, struct tw__db_batch *b)
{
    char *err = NULL;

    rocksdb_write(d->db, d->sync_write, (rocksdb_writebatch_t *)b, &err);
    return err ? take_err(err) : 0;
}

int tw__db_write_nosync(struct tw__db *d, struct tw__db_batch *b)
{
    char *err = NULL;

    rocksdb_write(d->db, d->plain_write, (rocksdb_writebatch_t *)b, &err);
    return err ? take_err(err) : 0;
}

int tw__db_get(struct tw__db *d, const void *k, size_t kl, void *v, size_t *vl)
{
    char *err = NULL;
    size_t len = 0;
    char *val = rocksdb_get(d->db, d->read, k, kl, &len, &err);

    if (err)
        return take_err(err);
    if (!val)
        return 0;
    memcpy(v, val, len < *vl ? len : *vl);
    *vl = len;
    rocksdb_free(val);
    return 1;
}

struct tw__db_iter *tw__db_iter_new(struct tw__db *d, const void *k, size_t kl)
{
    struct tw__db_iter *it = tw__zalloc(sizeof *it);

    if (!it)
        return NULL;
    /* The lower bound lets RocksDB skip the tombstones of delivered and
     * acknowledged timers below it instead of stepping over each. */
    kl = kl < sizeof it->lower ? kl : sizeof it->lower;
    memcpy(it->lower, k, kl);
    it->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_iterate_lower_bound(it->ro, (char *)it->lower, kl);
    it->it = rocksdb_create_iterator(d->db, it->ro);
    rocksdb_iter_seek(it->it, (const char *)it->lower, kl);
    return it;
}

bool tw__db_iter_valid(struct tw__db_iter *it)
{
    return rocksdb_iter_valid(it->it) != 0;
}

const void *tw__db_iter_key(struct tw__db_iter *it, size_t *kl)
{
    return rocksdb_iter_key(it->it, kl);
}

const void *tw__db_iter_value(struct tw__db_iter *it, size_t *vl)
{
    return rocksdb_iter_value(it->it, vl);
}

void tw__db_iter_next(struct tw__db_iter *it)
{
    rocksdb_iter_next(it->it);
}

int tw__db_iter_error(struct tw__db_iter *it)
{
    char *err = NULL;

    rocksdb_iter_get_error(it->it, &err);
    return err ? take_err(err) : 0;
}

void tw__db_iter_free(struct tw__db_iter *it)
{
    if (!it)
        return;
    rocksdb_iter_destroy(it->it);
    rocksdb_readoptions_destroy(it->ro);
    tw_free(it, sizeof *it);
}
