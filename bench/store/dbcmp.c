/*
 * dbcmp: the durable timer store's workload on three embedded databases
 * (issue 19: RocksDB, LMDB, SQLite in WAL mode), to choose lib/store's
 * database by measurement. docs/store.md quotes its output.
 *
 * The workload, identical for each database:
 *  1. insert N records, key = big-endian (deadline, sequence) with deadlines
 *     drawn uniformly over the next 7 days, value = 16 bytes (the broker's
 *     reference), in batches of B records per transaction, each committed
 *     with a sync (group commit);
 *  2. the bytes the database's files take on disk (blocks allocated);
 *  3. scan every record in deadline order and delete what was scanned, B
 *     records per synced transaction (delivered ranges leaving the store).
 * Every figure is wall time of this process, printed per database.
 *
 *   dbcmp [--n N] [--batch B] [--dir DIR] [--db rocksdb,lmdb,sqlite]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <rocksdb/c.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "diskbytes.h"

#define KEY_LEN 16
#define VAL_LEN 16
#define WEEK_NS (UINT64_C(7) * 86400 * 1000000000)

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
    uint64_t x = rng_state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static void put_be(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static void make_key(unsigned char *k, uint64_t seq)
{
    put_be(k, rng() % WEEK_NS);
    put_be(k + 8, seq);
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "dbcmp: %s: %s\n", what, why);
    exit(1);
}

/* Blocks allocated by the files of dir (not recursive: none of the three
 * databases makes sub-folders). */
static void clean_dir(const char *dir)
{
    char cmd[4200];

    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd) != 0)
        die("clean", dir);
}

struct result {
    double insert_s, scan_s;
    uint64_t bytes;
};

/* ---- LMDB ---------------------------------------------------------------- */

static void lmdb_run(const char *dir, long n, long b, struct result *r)
{
    MDB_env *env;
    MDB_dbi dbi;
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k, v;
    unsigned char key[KEY_LEN], val[VAL_LEN] = {0};
    long done = 0;
    double t0;

    if (mdb_env_create(&env) || mdb_env_set_mapsize(env, (size_t)1 << 36) ||
        mdb_env_open(env, dir, 0, 0644))
        die("lmdb", "open");
    t0 = now_s();
    for (long i = 0; i < n; i += b) {
        mdb_txn_begin(env, NULL, 0, &txn);
        mdb_dbi_open(txn, NULL, 0, &dbi);
        for (long j = i; j < i + b && j < n; j++) {
            make_key(key, (uint64_t)j);
            k = (MDB_val){KEY_LEN, key};
            v = (MDB_val){VAL_LEN, val};
            if (mdb_put(txn, dbi, &k, &v, 0))
                die("lmdb", "put");
        }
        if (mdb_txn_commit(txn))
            die("lmdb", "commit");
    }
    r->insert_s = now_s() - t0;
    r->bytes = disk_bytes(dir);
    t0 = now_s();
    while (done < n) {
        long got = 0;

        mdb_txn_begin(env, NULL, 0, &txn);
        mdb_cursor_open(txn, dbi, &cur);
        while (got < b && mdb_cursor_get(cur, &k, &v, MDB_FIRST) == 0) {
            mdb_cursor_del(cur, 0);
            got++;
        }
        mdb_cursor_close(cur);
        if (mdb_txn_commit(txn) || got == 0)
            die("lmdb", "scan");
        done += got;
    }
    r->scan_s = now_s() - t0;
    mdb_env_close(env);
}

/* ---- RocksDB ------------------------------------------------------------- */

static void rocks_run(const char *dir, long n, long b, struct result *r)
{
    char *err = NULL;
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_t *db;
    unsigned char key[KEY_LEN], val[VAL_LEN] = {0}, first[KEY_LEN];
    long done = 0;
    double t0;

    rocksdb_options_set_create_if_missing(o, 1);
    rocksdb_writeoptions_set_sync(wo, 1);
    db = rocksdb_open(o, dir, &err);
    if (err)
        die("rocksdb", err);
    t0 = now_s();
    for (long i = 0; i < n; i += b) {
        rocksdb_writebatch_t *wb = rocksdb_writebatch_create();

        for (long j = i; j < i + b && j < n; j++) {
            make_key(key, (uint64_t)j);
            rocksdb_writebatch_put(wb, (char *)key, KEY_LEN, (char *)val,
                                   VAL_LEN);
        }
        rocksdb_write(db, wo, wb, &err);
        rocksdb_writebatch_destroy(wb);
        if (err)
            die("rocksdb", err);
    }
    /* What a long-running store reaches: the memtable flushed, compacted. */
    rocksdb_compact_range(db, NULL, 0, NULL, 0);
    r->insert_s = now_s() - t0;
    r->bytes = disk_bytes(dir);
    t0 = now_s();
    while (done < n) {
        rocksdb_iterator_t *it = rocksdb_create_iterator(db, ro);
        rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
        long got = 0;
        size_t kl;
        const char *kp = NULL;

        rocksdb_iter_seek_to_first(it);
        for (; got < b && rocksdb_iter_valid(it); got++) {
            kp = rocksdb_iter_key(it, &kl);
            if (got == 0)
                memcpy(first, kp, KEY_LEN);
            rocksdb_iter_next(it);
        }
        /* The delivered range [first, next) leaves as one tombstone. */
        if (rocksdb_iter_valid(it)) {
            kp = rocksdb_iter_key(it, &kl);
            rocksdb_writebatch_delete_range(wb, (char *)first, KEY_LEN, kp, kl);
        } else {
            memset(key, 0xff, KEY_LEN);
            rocksdb_writebatch_delete_range(wb, (char *)first, KEY_LEN,
                                            (char *)key, KEY_LEN);
        }
        rocksdb_write(db, wo, wb, &err);
        rocksdb_writebatch_destroy(wb);
        rocksdb_iter_destroy(it);
        if (err || got == 0)
            die("rocksdb", err ? err : "scan");
        done += got;
    }
    r->scan_s = now_s() - t0;
    rocksdb_close(db);
    rocksdb_options_destroy(o);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_readoptions_destroy(ro);
}

/* ---- SQLite (WAL) -------------------------------------------------------- */

static void sql_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;

    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        die("sqlite", err ? err : sql);
}

static void sqlite_run(const char *dir, long n, long b, struct result *r)
{
    char path[4200];
    sqlite3 *db;
    sqlite3_stmt *ins, *scan, *del;
    unsigned char key[KEY_LEN], val[VAL_LEN] = {0};
    long done = 0;
    double t0;

    snprintf(path, sizeof path, "%s/timers.db", dir);
    if (sqlite3_open(path, &db) != SQLITE_OK)
        die("sqlite", "open");
    sql_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                 "CREATE TABLE t(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID");
    sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?,?)", -1, &ins, NULL);
    sqlite3_prepare_v2(db, "SELECT k FROM t ORDER BY k LIMIT ?", -1, &scan,
                       NULL);
    sqlite3_prepare_v2(db, "DELETE FROM t WHERE k <= ?", -1, &del, NULL);
    t0 = now_s();
    for (long i = 0; i < n; i += b) {
        sql_exec(db, "BEGIN");
        for (long j = i; j < i + b && j < n; j++) {
            make_key(key, (uint64_t)j);
            sqlite3_bind_blob(ins, 1, key, KEY_LEN, SQLITE_STATIC);
            sqlite3_bind_blob(ins, 2, val, VAL_LEN, SQLITE_STATIC);
            if (sqlite3_step(ins) != SQLITE_DONE)
                die("sqlite", "insert");
            sqlite3_reset(ins);
        }
        sql_exec(db, "COMMIT");
    }
    sql_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    r->insert_s = now_s() - t0;
    r->bytes = disk_bytes(dir);
    t0 = now_s();
    while (done < n) {
        long got = 0;

        sql_exec(db, "BEGIN");
        sqlite3_bind_int64(scan, 1, b);
        while (sqlite3_step(scan) == SQLITE_ROW) {
            memcpy(key, sqlite3_column_blob(scan, 0), KEY_LEN);
            got++;
        }
        sqlite3_reset(scan);
        sqlite3_bind_blob(del, 1, key, KEY_LEN, SQLITE_STATIC);
        if (sqlite3_step(del) != SQLITE_DONE || got == 0)
            die("sqlite", "delete");
        sqlite3_reset(del);
        sql_exec(db, "COMMIT");
        done += got;
    }
    r->scan_s = now_s() - t0;
    sqlite3_finalize(ins);
    sqlite3_finalize(scan);
    sqlite3_finalize(del);
    sqlite3_close(db);
}

static void report(const char *name, long n, long b, const struct result *r)
{
    printf("%-8s n=%ld batch=%ld  insert %9.0f /s  scan+delete %9.0f /s  "
           "disk %6.1f B/record\n",
           name, n, b, n / r->insert_s, n / r->scan_s,
           (double)r->bytes / (double)n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    long n = 200000, b = 1000;
    const char *base = "/tmp/dbcmp", *which = "lmdb,rocksdb,sqlite";
    char dir[4096];
    struct result r;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            n = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch"))
            b = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir"))
            base = argv[i + 1];
        else if (!strcmp(argv[i], "--db"))
            which = argv[i + 1];
    }
    if (n <= 0 || b <= 0)
        die("usage", "dbcmp [--n N] [--batch B] [--dir DIR] [--db LIST]");
    if (strstr(which, "lmdb")) {
        snprintf(dir, sizeof dir, "%s/lmdb", base);
        clean_dir(dir);
        lmdb_run(dir, n, b, &r);
        report("lmdb", n, b, &r);
    }
    if (strstr(which, "rocksdb")) {
        snprintf(dir, sizeof dir, "%s/rocksdb", base);
        clean_dir(dir);
        rocks_run(dir, n, b, &r);
        report("rocksdb", n, b, &r);
    }
    if (strstr(which, "sqlite")) {
        snprintf(dir, sizeof dir, "%s/sqlite", base);
        clean_dir(dir);
        sqlite_run(dir, n, b, &r);
        report("sqlite", n, b, &r);
    }
    return 0;
}
