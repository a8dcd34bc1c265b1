/*
 * Damaged data (suite store_damage, issue 28, 3-4): whatever RocksDB finds
 * wrong with a table file or the write-ahead log must come back as
 * -EBADMSG (damage), never as -EBUSY (which the header keeps for "open by
 * another store") and never as a store that opens with timers missing
 * that had been reported durable.
 *
 * The log's cases need a log: a child process (this binary again, this
 * test alone, TWSTORE_WAL_DIR set) schedules WAL_TIMERS timers durably in
 * batches and kills itself with SIGKILL, so nothing is flushed to a table
 * and every one of them lives in the log only. The parent damages the log
 * one way or another and opens.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <rocksdb/c.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "st.h"

int tw__db_errno(const char *msg); /* lib/store/db.c */

#define WAL_TIMERS 25000
#define WAL_BATCH 500

ST_FIXTURE(store_damage, 120, (void)0);

static int open_err(void)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    int err = 1;

    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    s = tw_store_open(dir, &cfg, &err);
    if (s) {
        cr_log_info("opened with %llu timers",
                    (unsigned long long)tw_store_count(s));
        cr_assert_eq(tw_store_close(s), 0);
    }
    return s ? 0 : err;
}

/* RocksDB's own messages, as its Status::ToString() writes them. */
Test(store_damage, database_messages_map_to_their_errno)
{
    static const struct {
        const char *msg;
        int err;
    } cases[] = {
        {"Corruption: block checksum mismatch: stored = 1, computed = 2, "
         "type = 1  in /s/db/000012.sst offset 0 size 4000",
         -EBADMSG},
        {"Corruption: bad block contents", -EBADMSG},
        {"Corruption: truncated record body", -EBADMSG},
        {"Corruption: Missing WAL with log number: 5.", -EBADMSG},
        {"Invalid argument: /s/db: does not exist (create_if_missing is "
         "false)",
         -EBADMSG},
        {"NotFound: /s/db/000009.sst: No such file or directory", -EBADMSG},
        {"IO error: No space left on deviceWhile appending to file: "
         "/s/db/000003.log: No space left on device",
         -ENOSPC},
        {"IO error: While lock file: /s/db/LOCK: Resource temporarily "
         "unavailable",
         -EBUSY},
        {"IO error: lock hold by current process, acquire time 1 acquiring "
         "thread 2: /s/db/LOCK: No locks available",
         -EBUSY},
        {"IO error: While appending to file: /s/db/000003.log: "
         "Input/output error",
         -EIO},
        {"IO error: block device gone", -EIO},
        {"Not implemented: unknown", -EIO},
        {NULL, -EIO},
    };

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        cr_expect_eq(tw__db_errno(cases[i].msg), cases[i].err, "%s: %d",
                     cases[i].msg ? cases[i].msg : "(null)",
                     tw__db_errno(cases[i].msg));
}

/* The first file in dir/db whose name ends with suffix, into path. */
static bool find_file(const char *suffix, char *path, size_t len)
{
    char db[96];
    DIR *d;
    struct dirent *e;
    bool found = false;

    snprintf(db, sizeof db, "%s/db", dir);
    d = opendir(db);
    cr_assert_not_null(d);
    while (!found && (e = readdir(d))) {
        size_t n = strlen(e->d_name), m = strlen(suffix);

        if (n > m && !strcmp(e->d_name + n - m, suffix)) {
            snprintf(path, len, "%s/%s", db, e->d_name);
            found = true;
        }
    }
    closedir(d);
    return found;
}

static off_t file_size(const char *path)
{
    struct stat st;

    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return st.st_size;
}

/* 64 bytes of a fixed pseudo-random pattern at offset at. */
static void garble(const char *path, off_t at)
{
    unsigned char junk[64];
    uint32_t x = 0x2545f491u;
    int fd = open(path, O_WRONLY);

    cr_assert_geq(fd, 0);
    for (size_t i = 0; i < sizeof junk; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        junk[i] = (unsigned char)x;
    }
    cr_assert_eq(pwrite(fd, junk, sizeof junk, at), (ssize_t)sizeof junk);
    close(fd);
}

/* Garbled bytes in a table file: open may find it or not (tables are read
 * when needed); what reads the damaged block says -EBADMSG, never
 * -EBUSY: the scan, and the window's loader (the store then fails its
 * operations with the same code). */
Test(store_damage, garbled_table_file_is_ebadmsg)
{
    struct tw_store_config cfg;
    struct tw_store *s = st_open(dir, &rec);
    char sst[160];
    uint64_t soon = st_real() + 30000 * ST_MS;
    int err = 1, rc = 0;

    for (int i = 0; i < 40000; i++)
        cr_assert_eq(tw_store_schedule_at(s, soon + (uint64_t)i, &i, sizeof i,
                                          NULL, NULL, NULL),
                     0);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(tw_store_close(s), 0); /* flushed to a table */
    cr_assert(find_file(".sst", sst, sizeof sst), "no table file");
    garble(sst, file_size(sst) / 3);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &(int64_t){0}), -EBADMSG);
    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    s = tw_store_open(dir, &cfg, &err);
    if (!s) {
        cr_assert_eq(err, -EBADMSG, "open: %d", err);
        return;
    }
    /* The loader reads the damaged block at once (deadlines within the
     * window): the store fails, with the damage's code. */
    for (int i = 0; i < 500 && rc == 0; i++) {
        rc = tw_store_schedule_durable(s, UINT64_MAX, "", 0, NULL);
        if (rc == 0)
            st_sleep_ms(10);
    }
    cr_assert_eq(rc, -EBADMSG, "a store over a damaged table: %d", rc);
    rc = tw_store_close(s);
    cr_assert(rc == 0 || rc == -EBADMSG, "close: %d", rc);
}

/* ---- the write-ahead log ------------------------------------------------ */

/* Wait until dir/DURABLE (lib/store/witness.c: the high-water mark of the
 * durable commits, big-endian, then its complement) shows seq: its thread
 * writes it just after each commit's sync, one sync behind at most, and
 * the damage below is to be found in the commits it witnessed. */
static void wait_witness(const char *d, uint64_t seq)
{
    char path[128];
    uint64_t end = st_mono() + 5000 * ST_MS, got = 0;

    snprintf(path, sizeof path, "%s/DURABLE", d);
    while (got < seq && st_mono() < end) {
        unsigned char b[8] = {0};
        int fd = open(path, O_RDONLY);

        if (fd >= 0) {
            if (read(fd, b, sizeof b) == (ssize_t)sizeof b)
                for (int i = 0; i < 8; i++)
                    got = (i ? got : 0) << 8 | b[i];
            close(fd);
        }
        if (got < seq)
            st_sleep_ms(5);
    }
    cr_assert_geq(got, seq, "the witness never reached %llu",
                  (unsigned long long)seq);
}

/* The child: WAL_TIMERS durable schedules, then death without a close. */
static void fill_log_and_die(const char *d)
{
    struct tw_store *s;
    struct tw_store_config cfg;
    int err;

    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    s = tw_store_open(d, &cfg, &err);
    cr_assert_not_null(s, "child open: %d", err);
    for (int i = 0; i < WAL_TIMERS; i++) {
        cr_assert_eq(tw_store_schedule_at(s, UINT64_MAX - (uint64_t)i, &i,
                                          sizeof i, NULL, NULL, NULL),
                     0);
        if (i % WAL_BATCH == WAL_BATCH - 1)
            cr_assert_eq(tw_store_sync(s), 0);
    }
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq((int)tw_store_count(s), WAL_TIMERS);
    wait_witness(d, WAL_TIMERS + 1);
    kill(getpid(), SIGKILL);
}

/* Run the child on dir; when it is dead, the log holds WAL_TIMERS durable
 * timers in WAL_TIMERS / WAL_BATCH commits. Its path into wal. */
static void make_log(const char *test, char *wal, size_t len)
{
    char env[128], filter[128], *envp[] = {env, NULL};

    snprintf(env, sizeof env, "TWSTORE_WAL_DIR=%s", dir);
    snprintf(filter, sizeof filter, "store_damage/%s", test);
    /* The test runner reports its worker's SIGKILL as a crash: the
     * status says nothing; the log's size and the undamaged case do. */
    (void)st_run_self(filter, envp, false);
    cr_assert(find_file(".log", wal, len), "no write-ahead log");
    cr_assert_gt(file_size(wal), WAL_TIMERS * 17, "the log is not all there");
}

/* In the child, fill the log and die; in the parent, true. */
static bool parent(void)
{
    const char *d = getenv("TWSTORE_WAL_DIR");

    if (d)
        fill_log_and_die(d);
    return !d;
}

static void cut_to(const char *wal, off_t size)
{
    cr_assert_eq(truncate(wal, size), 0);
}

/* Undamaged, the log gives back all of them: the baseline the damage
 * cases below are measured against. */
Test(store_damage, an_undamaged_log_recovers_every_timer)
{
    char wal[160];
    int64_t n = 0;

    if (!parent())
        return;
    make_log("an_undamaged_log_recovers_every_timer", wal, sizeof wal);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &n), WAL_TIMERS);
    cr_assert_eq(open_err(), 0);
}

Test(store_damage, a_log_cut_to_half_is_ebadmsg)
{
    char wal[160];

    if (!parent())
        return;
    make_log("a_log_cut_to_half_is_ebadmsg", wal, sizeof wal);
    cut_to(wal, file_size(wal) / 2);
    cr_assert_eq(open_err(), -EBADMSG);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &(int64_t){0}), -EBADMSG);
}

Test(store_damage, a_log_without_its_last_byte_is_ebadmsg)
{
    char wal[160];

    if (!parent())
        return;
    make_log("a_log_without_its_last_byte_is_ebadmsg", wal, sizeof wal);
    cut_to(wal, file_size(wal) - 1);
    cr_assert_eq(open_err(), -EBADMSG);
}

Test(store_damage, random_bytes_in_the_middle_of_the_log_are_ebadmsg)
{
    char wal[160];

    if (!parent())
        return;
    make_log("random_bytes_in_the_middle_of_the_log_are_ebadmsg", wal,
             sizeof wal);
    garble(wal, file_size(wal) / 2);
    cr_assert_eq(open_err(), -EBADMSG);
}

Test(store_damage, a_deleted_log_is_ebadmsg)
{
    char wal[160];

    if (!parent())
        return;
    make_log("a_deleted_log_is_ebadmsg", wal, sizeof wal);
    cr_assert_eq(unlink(wal), 0);
    cr_assert_eq(open_err(), -EBADMSG);
}

/* ---- keys of the wrong length (issue 29, 2) ------------------------------ */

/* A record put straight into the store's database, as damage would. */
static void put_raw_kv(const void *k, size_t kl, const void *v, size_t vl)
{
    char path[128], *err = NULL;
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_t *db;

    snprintf(path, sizeof path, "%s/db", dir);
    db = rocksdb_open(o, path, &err);
    cr_assert_null(err, "%s", err);
    rocksdb_writeoptions_set_sync(wo, 1);
    rocksdb_put(db, wo, k, kl, v, vl, &err);
    cr_assert_null(err, "%s", err);
    rocksdb_close(db);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_options_destroy(o);
}

static void put_raw(const void *k, size_t kl)
{
    put_raw_kv(k, kl, "v", 1);
}

/* A store of three timers due within the window, then key k among them:
 * the scan and the window's loader each meet it first ('T' and a small
 * deadline byte), and each answers -EBADMSG; the codec never reads past
 * the key's length (ASan's build checks that). */
static void bad_key(const void *k, size_t kl)
{
    struct tw_store_config cfg;
    struct tw_store *s = st_open(dir, &rec);
    int err = 1, rc = 0;

    for (int i = 0; i < 3; i++)
        cr_assert_eq(
            tw_store_schedule_durable(s, st_real() + 2000 * ST_MS + (uint64_t)i,
                                      "", 0, NULL),
            0);
    cr_assert_eq(tw_store_close(s), 0);
    put_raw(k, kl);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &(int64_t){0}), -EBADMSG,
                 "a %zu-byte key", kl);
    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    s = tw_store_open(dir, &cfg, &err);
    cr_assert_not_null(s, "open: %d", err);
    for (int i = 0; i < 500 && rc == 0; i++) {
        rc = tw_store_schedule_durable(s, UINT64_MAX, "", 0, NULL);
        if (rc == 0)
            st_sleep_ms(10);
    }
    cr_assert_eq(rc, -EBADMSG, "the loader over a %zu-byte key: %d", kl, rc);
    rc = tw_store_close(s);
    cr_assert(rc == 0 || rc == -EBADMSG, "close: %d", rc);
}

Test(store_damage, a_short_key_is_ebadmsg)
{
    bad_key("T\x01\x02", 3);
}

Test(store_damage, a_long_key_is_ebadmsg)
{
    unsigned char k[28] = {'T', 0, 0, 0, 0, 0, 0, 0, 1};

    bad_key(k, sizeof k);
}

/* ---- the witness (lib/store/witness.c) ----------------------------------- */

static void write_witness(const void *b, size_t n)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof path, "%s/DURABLE", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* A torn or garbled witness is damage; one ahead of the database (a
 * database replaced by an older copy) too; an empty one is a new store's. */
Test(store_damage, a_damaged_or_ahead_witness_is_ebadmsg)
{
    unsigned char b[16] = {0, 0, 0, 0, 0, 0, 0, 9};
    struct tw_store *s = st_open(dir, &rec);

    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "w", 1, NULL), 0);
    cr_assert_eq(tw_store_close(s), 0);
    write_witness(b, 7); /* torn */
    cr_assert_eq(open_err(), -EBADMSG);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &(int64_t){0}), -EBADMSG);
    write_witness(b, sizeof b); /* no complement */
    cr_assert_eq(open_err(), -EBADMSG);
    for (int i = 8; i < 16; i++)
        b[i] = (unsigned char)~b[i - 8];
    b[7] = 200, b[15] = (unsigned char)~200; /* seq 200: ahead */
    write_witness(b, sizeof b);
    cr_assert_eq(open_err(), -EBADMSG);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &(int64_t){0}), -EBADMSG);
    write_witness(b, 0); /* empty: nothing to check */
    cr_assert_eq(open_err(), 0);
    cr_assert_eq(st_on_disk(dir), 1);
}

/* A witness that cannot be opened (a directory in its place): the open
 * says so, with the errno. */
Test(store_damage, a_witness_that_cannot_be_opened)
{
    char path[128];
    struct tw_store *s = st_open(dir, &rec);

    cr_assert_eq(tw_store_close(s), 0);
    snprintf(path, sizeof path, "%s/DURABLE", dir);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkdir(path, 0755), 0);
    cr_assert_eq(open_err(), -EISDIR);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &(int64_t){0}), -EISDIR);
}

/* No witness at all (a store of the format before it, or the file
 * removed): nothing to check against; the scan and the open find every
 * timer, and the open makes the witness again. */
Test(store_damage, a_store_without_a_witness_scans_and_opens)
{
    char path[128];
    struct tw_store *s = st_open(dir, &rec);

    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "w", 1, NULL), 0);
    cr_assert_eq(tw_store_close(s), 0);
    snprintf(path, sizeof path, "%s/DURABLE", dir);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(st_on_disk(dir), 1);
    cr_assert_eq(open_err(), 0);
    cr_assert_eq(access(path, F_OK), 0, "the open did not make the witness");
    cr_assert_eq(st_on_disk(dir), 1);
}

/* A witness that no open can reach (a symbolic link to itself): the
 * errno, from the scan and from the open. */
Test(store_damage, a_witness_in_a_symlink_loop_is_eloop)
{
    char path[128];
    struct tw_store *s = st_open(dir, &rec);

    cr_assert_eq(tw_store_close(s), 0);
    snprintf(path, sizeof path, "%s/DURABLE", dir);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(symlink("DURABLE", path), 0);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &(int64_t){0}), -ELOOP);
    cr_assert_eq(open_err(), -ELOOP);
}

/* The replication record ('R', lib/store/key.h) of the wrong length, or
 * of the right one with a role that is neither leader nor follower: the
 * open says -EBADMSG. */
Test(store_damage, a_damaged_replication_record_is_ebadmsg)
{
    unsigned char v[40];
    struct tw_store *s = st_open(dir, &rec);

    cr_assert_eq(tw_store_close(s), 0);
    memset(v, 'x', sizeof v);
    put_raw_kv("R", 1, v, 1);
    cr_assert_eq(open_err(), -EBADMSG);
    put_raw_kv("R", 1, v, sizeof v);
    cr_assert_eq(open_err(), -EBADMSG);
    put_raw_kv("R", 1, v, 33);
    cr_assert_eq(open_err(), -EBADMSG);
}

static int take_bytes(const void *buf, size_t len, void *ctx)
{
    (void)buf;
    *(size_t *)ctx += len;
    return 0;
}

/* The loader's answer to a damaged record: -EBADMSG from the operations
 * after it (the store fails), and from a snapshot, which reads every
 * record. */
static void loader_and_snapshot_refuse(void)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    size_t bytes = 0;
    int err = 1, rc = 0;

    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    s = tw_store_open(dir, &cfg, &err);
    cr_assert_not_null(s, "open: %d", err);
    cr_assert_eq(tw_store_snapshot(s, take_bytes, &bytes, NULL), -EBADMSG);
    for (int i = 0; i < 500 && rc == 0; i++) {
        rc = tw_store_schedule_durable(s, UINT64_MAX, "", 0, NULL);
        if (rc == 0)
            st_sleep_ms(10);
    }
    cr_assert_eq(rc, -EBADMSG, "the loader: %d", rc);
    rc = tw_store_close(s);
    cr_assert(rc == 0 || rc == -EBADMSG, "close: %d", rc);
}

/* A timer's record with a payload longer than any schedule could write. */
Test(store_damage, a_payload_past_the_maximum_is_ebadmsg)
{
    unsigned char k[17] = {'T'}, v[TW_STORE_PAYLOAD_MAX + 1] = {0};
    uint64_t d = st_real() + 2000 * ST_MS;
    struct tw_store *s = st_open(dir, &rec);

    cr_assert_eq(tw_store_close(s), 0);
    for (int i = 0; i < 8; i++)
        k[1 + i] = (unsigned char)(d >> (56 - 8 * i));
    k[16] = 99;
    put_raw_kv(k, sizeof k, v, sizeof v);
    loader_and_snapshot_refuse();
}

/* A timer's key of the wrong length, met by a snapshot too. */
Test(store_damage, a_short_key_fails_a_snapshot)
{
    struct tw_store *s = st_open(dir, &rec);

    cr_assert_eq(
        tw_store_schedule_durable(s, st_real() + 2000 * ST_MS, "", 0, NULL), 0);
    cr_assert_eq(tw_store_close(s), 0);
    put_raw("T\x01\x02", 3);
    loader_and_snapshot_refuse();
}
