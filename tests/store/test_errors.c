/*
 * The store's errors (suite store_errors): a second opener, a foreign or
 * damaged directory, and write and sync failures (EIO, ENOSPC) injected at
 * every site a commit reaches. Each must give a clear negative errno, lose
 * nothing that was reported durable, and leave a directory that opens
 * again once the cause is gone.
 *
 * The faults come through an interposer: this file defines write(),
 * pwrite(), writev(), fsync() and fdatasync(), which the linker puts ahead
 * of the C library's for the whole test binary (RocksDB's calls included).
 * They pass every call through, unless a test armed them: then the k-th
 * call on a file under the armed path fails with the armed errno (or, for
 * a disk that stays full or bad, every call from the k-th on).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <rocksdb/c.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "st.h"

/* The armed fault; the lock keeps a writer thread from reading it half
 * set when a test re-arms. */
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static char fault_dir[128];
static atomic_bool fault_armed; /* read first, without the lock */
static long fault_calls;        /* calls on files under fault_dir */
static long fault_at = -1;      /* which of them fails (-1: none) */
static bool fault_stays;        /* ... and every one after it */
static int fault_errno;

/* The errno a call on fd must fail with, or 0 to pass it through. */
static int fault_hits(int fd)
{
    char link[64], path[512];
    ssize_t n;
    int err = 0;

    if (!atomic_load(&fault_armed))
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = 0;
    pthread_mutex_lock(&fault_lock);
    if (atomic_load(&fault_armed) &&
        strncmp(path, fault_dir, strlen(fault_dir)) == 0) {
        long k = fault_calls++;
        if (fault_stays ? fault_at >= 0 && k >= fault_at : k == fault_at)
            err = fault_errno;
    }
    pthread_mutex_unlock(&fault_lock);
    return err;
}

/* The C library's function, looked up on first use. Criterion runs each
 * test in a fresh process, where two threads (RocksDB's and the witness's)
 * may make their first call at once: the pointer is atomic, and both
 * lookups find the same address. */
#define REAL(ret, name, ...)                                                   \
    static _Atomic(void *) real_;                                              \
    ret (*real)(__VA_ARGS__);                                                  \
    void *sym_ = atomic_load_explicit(&real_, memory_order_acquire);           \
    if (!sym_) {                                                               \
        sym_ = dlsym(RTLD_NEXT, name);                                         \
        atomic_store_explicit(&real_, sym_, memory_order_release);             \
    }                                                                          \
    *(void **)&real = sym_

/* The armed fault's answer for a call on fd, if it hits. */
#define FAIL_IF_ARMED(fd)                                                      \
    do {                                                                       \
        int err_ = fault_hits(fd);                                             \
        if (err_) {                                                            \
            errno = err_;                                                      \
            return -1;                                                         \
        }                                                                      \
    } while (0)

ssize_t write(int fd, const void *buf, size_t n)
{
    REAL(ssize_t, "write", int, const void *, size_t);
    FAIL_IF_ARMED(fd);
    return real(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(ssize_t, "pwrite", int, const void *, size_t, off_t);
    FAIL_IF_ARMED(fd);
    return real(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    REAL(ssize_t, "writev", int, const struct iovec *, int);
    FAIL_IF_ARMED(fd);
    return real(fd, iov, cnt);
}

int fsync(int fd)
{
    REAL(int, "fsync", int);
    FAIL_IF_ARMED(fd);
    return real(fd);
}

int fdatasync(int fd)
{
    REAL(int, "fdatasync", int);
    FAIL_IF_ARMED(fd);
    return real(fd);
}

static void fault_set(const char *dir, long at, int err, bool stays)
{
    pthread_mutex_lock(&fault_lock);
    snprintf(fault_dir, sizeof fault_dir, "%s", dir);
    fault_stays = stays;
    fault_at = at;
    fault_errno = err;
    fault_calls = 0;
    atomic_store(&fault_armed, true);
    pthread_mutex_unlock(&fault_lock);
}

/* Count (at -1) or fail the at-th call of the writes and syncs under dir. */
static void fault_arm(const char *dir, long at, int err)
{
    fault_set(dir, at, err, false);
}

/* Fail every call under path from the at-th on (a disk that stays full). */
static void fault_arm_from(const char *path, long at, int err)
{
    fault_set(path, at, err, true);
}

static long fault_disarm(void)
{
    long n;

    pthread_mutex_lock(&fault_lock);
    atomic_store(&fault_armed, false);
    n = fault_calls;
    pthread_mutex_unlock(&fault_lock);
    return n;
}

ST_FIXTURE(store_errors, 120, fault_disarm());

/* Where a commit writes and syncs: the database's folder. The witness
 * (lib/store/witness.c) writes dir/DURABLE from a thread of its own, at a
 * moment no test chooses, so a fault aimed at "the k-th call of a commit"
 * is aimed here; a full disk (fault_arm_from(dir, ...)) hits both. */
static const char *db_dir(void)
{
    static char db[96];

    snprintf(db, sizeof db, "%s/db/", dir);
    return db;
}

static int open_err(const char *d)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    int err = 1;

    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    s = tw_store_open(d, &cfg, &err);
    if (s)
        cr_assert_eq(tw_store_close(s), 0);
    return s ? 0 : err;
}

Test(store_errors, a_second_opener_gets_ebusy)
{
    struct tw_store *s = st_open(dir, &rec);
    int64_t n = 0;

    cr_assert_eq(open_err(dir), -EBUSY);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &n), -EBUSY);
    cr_assert_eq(tw_store_close(s), 0);
    cr_assert_eq(open_err(dir), 0);
}

/* Another process: this test binary again, running this test alone with
 * TWSTORE_BUSY_DIR set, which then only checks that it gets -EBUSY. */
Test(store_errors, another_process_gets_ebusy)
{
    const char *other = getenv("TWSTORE_BUSY_DIR");
    char env[128], *envp[] = {env, NULL};
    struct tw_store *s;
    int status;

    if (other) {
        cr_assert_eq(open_err(other), -EBUSY, "the other process was let in");
        return;
    }
    s = st_open(dir, &rec);
    snprintf(env, sizeof env, "TWSTORE_BUSY_DIR=%s", dir);
    status =
        st_run_self("store_errors/another_process_gets_ebusy", envp, false);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "another process was not refused with -EBUSY (status %d)",
              status);
    cr_assert_eq(tw_store_close(s), 0);
}

Test(store_errors, a_foreign_directory_is_left_alone)
{
    char path[128];
    struct stat st;
    FILE *f;

    snprintf(path, sizeof path, "%s/mail.txt", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("not a store\n", f);
    fclose(f);
    cr_assert_eq(open_err(dir), -ENOTEMPTY);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &(int64_t){0}), -ENOTEMPTY);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 12);
    snprintf(path, sizeof path, "%s/STORE", dir);
    cr_assert_neq(stat(path, &st), 0, "marker written into a foreign dir");
    snprintf(path, sizeof path, "%s/LOCK", dir);
    cr_assert_neq(stat(path, &st), 0, "lock file made in a foreign dir");
    snprintf(path, sizeof path, "%s/mail.txt", dir);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(open_err(dir), 0);
}

/* Many foreign files: the first one met is enough, and none is touched. */
Test(store_errors, a_directory_of_many_foreign_files_is_enotempty)
{
    char path[128];
    struct stat st;

    for (int i = 0; i < 16; i++) {
        FILE *f;

        snprintf(path, sizeof path, "%s/f%02d", dir, i);
        f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs("mine\n", f);
        fclose(f);
    }
    cr_assert_eq(open_err(dir), -ENOTEMPTY);
    for (int i = 0; i < 16; i++) {
        snprintf(path, sizeof path, "%s/f%02d", dir, i);
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_eq(st.st_size, 5);
    }
    snprintf(path, sizeof path, "%s/LOCK", dir);
    cr_assert_neq(stat(path, &st), 0, "lock file made in a foreign dir");
}

static void write_file(const char *name, const char *text)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

Test(store_errors, a_damaged_store_gets_ebadmsg)
{
    struct tw_store *s = st_open(dir, &rec);

    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "k", 1, NULL), 0);
    cr_assert_eq(tw_store_close(s), 0);
    write_file("STORE", "timewheel-store 99\n"); /* another version */
    cr_assert_eq(open_err(dir), -EBADMSG);
    write_file("STORE", "timewheel-store 1\n");
    write_file("db/CURRENT", "MANIFEST-garbage\n");
    cr_assert_eq(open_err(dir), -EBADMSG);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &(int64_t){0}), -EBADMSG);
    /* CURRENT gone, the data still there: not a new store either. */
    {
        char path[128];

        snprintf(path, sizeof path, "%s/db/CURRENT", dir);
        cr_assert_eq(unlink(path), 0);
    }
    cr_assert_eq(open_err(dir), -EBADMSG);
}

Test(store_errors, a_path_that_cannot_be_a_store_is_an_errno)
{
    char path[128];

    cr_assert_eq(open_err("/nonexistent-twstore/a/b"), -ENOENT);
    write_file("plain", "x");
    snprintf(path, sizeof path, "%s/plain", dir);
    cr_assert_eq(open_err(path), -ENOTDIR);
}

/* A RocksDB database of someone else's behind a store's marker. */
static void make_rocksdb(bool with_record)
{
    char path[128], *err = NULL;
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_t *db;

    snprintf(path, sizeof path, "%s/db", dir);
    rocksdb_options_set_create_if_missing(o, 1);
    db = rocksdb_open(o, path, &err);
    cr_assert_null(err, "%s", err);
    if (with_record)
        rocksdb_put(db, wo, "hello", 5, "world", 5, &err);
    cr_assert_null(err);
    rocksdb_close(db);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_options_destroy(o);
}

Test(store_errors, another_programs_rocksdb_gets_ebadmsg)
{
    write_file("STORE", "timewheel-store 1\n");
    make_rocksdb(true);
    cr_assert_eq(open_err(dir), -EBADMSG);
}

/* The creator was killed after RocksDB made its files and before the
 * store wrote its first record: nothing was ever durable, it opens. */
Test(store_errors, a_store_killed_while_created_opens)
{
    write_file("STORE", "timewheel-store 1\n");
    make_rocksdb(false);
    cr_assert_eq(open_err(dir), 0);
    cr_assert_eq(open_err(dir), 0);
}

/* One commit's writes and syncs with no fault: how many sites to try. */
static long sites_of_a_commit(void)
{
    struct tw_store *s = st_open(dir, &rec);
    long n;

    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "warm", 4, NULL), 0);
    fault_arm(db_dir(), -1, 0);
    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "c", 1, NULL), 0);
    n = fault_disarm();
    cr_assert_eq(tw_store_close(s), 0);
    cr_assert_gt(n, 0, "the interposer saw no write: it is not in the path");
    return n;
}

/* Fail call k of a commit with err; what was durable before survives, the
 * error reaches the caller, the store refuses what follows, reopens. */
static void fail_commit_at(long k, int err, int64_t *durable)
{
    struct tw_store *s = st_open(dir, &rec);
    struct tw_store_id id;
    int rc;

    fault_arm(db_dir(), k, err);
    rc = tw_store_schedule_durable(s, UINT64_MAX, "f", 1, &id);
    fault_disarm();
    if (rc == 0) { /* the call was not on this commit's path */
        (*durable)++;
    } else {
        cr_assert_eq(rc, -err, "site %ld: %d, not %d", k, rc, -err);
        cr_assert_eq(tw_store_schedule_at(s, 1, "", 0, NULL, NULL, NULL), -err,
                     "a failed store took an operation");
        cr_assert_eq(tw_store_sync(s), -err);
    }
    rc = tw_store_close(s);
    cr_assert(rc == 0 || rc == -err, "close: %d", rc);
    cr_assert_geq(st_on_disk(dir), *durable, "site %ld lost a durable timer",
                  k);
}

static void every_site(int err)
{
    long sites = sites_of_a_commit();
    int64_t durable = 2, failed = 0;

    for (long k = 0; k < sites; k++) {
        int64_t before = durable;

        fail_commit_at(k, err, &durable);
        failed += durable == before;
    }
    cr_assert_gt(failed, 0, "no site failed the commit");
    cr_log_info("%ld sites, %lld failed the commit", sites, (long long)failed);
}

Test(store_errors, eio_at_every_site_of_a_commit)
{
    every_site(EIO);
}

Test(store_errors, enospc_at_every_site_of_a_commit)
{
    every_site(ENOSPC);
}

/* Failures while a store is created or reopened: the open fails with a
 * negative errno and a later open works. */
Test(store_errors, faults_while_opening)
{
    int64_t durable = 0;

    for (long k = 0; k < 40; k++) {
        int rc;

        fault_arm(dir, k, EIO);
        rc = open_err(dir);
        fault_disarm();
        cr_assert_leq(rc, 0);
        if (rc == 0 && durable == 0) {
            struct tw_store *s = st_open(dir, &rec);

            cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "", 0, NULL),
                         0);
            cr_assert_eq(tw_store_close(s), 0);
            durable = 1;
        }
        cr_assert_eq(open_err(dir), 0, "site %ld left it unopenable", k);
        cr_assert_geq(st_on_disk(dir), durable);
    }
}

/* The disk fills (or goes bad) at the k-th write or sync of a commit and
 * stays so: the commit fails with the errno, every later call too, the
 * close returns, and nothing aborts (RocksDB's info log, which asserted
 * when written after a failed write, is kept off: lib/store/db.c). */
static void stays_failed_from(long k, int err, int64_t *durable)
{
    struct tw_store *s = st_open(dir, &rec);
    int rc;

    fault_arm_from(dir, k, err);
    rc = tw_store_schedule_durable(s, UINT64_MAX, "f", 1, NULL);
    if (rc == 0) {
        (*durable)++;
    } else {
        cr_assert_eq(rc, -err, "from site %ld: %d, not %d", k, rc, -err);
        cr_assert_eq(tw_store_schedule_durable(s, 5, "", 0, NULL), -err);
    }
    rc = tw_store_close(s);
    fault_disarm();
    cr_assert(rc == 0 || rc == -err, "close: %d", rc);
    cr_assert_geq(st_on_disk(dir), *durable, "from site %ld lost a timer", k);
}

Test(store_errors, a_disk_that_stays_full_from_every_site)
{
    long sites = sites_of_a_commit();
    int64_t durable = 2;

    for (long k = 0; k < sites; k++)
        stays_failed_from(k, ENOSPC, &durable);
}

Test(store_errors, a_disk_that_stays_bad_from_every_site)
{
    long sites = sites_of_a_commit();
    int64_t durable = 2;

    for (long k = 0; k < sites; k++)
        stays_failed_from(k, EIO, &durable);
}

/* The info log alone failing: RocksDB's LOG file is never written, so a
 * store whose LOG cannot be written works as usual. */
Test(store_errors, a_failing_info_log_changes_nothing)
{
    char log[128];
    struct tw_store *s = st_open(dir, &rec);

    cr_assert_eq(tw_store_close(s), 0);
    snprintf(log, sizeof log, "%s/db/LOG", dir);
    fault_arm_from(log, 0, EIO);
    s = st_open(dir, &rec);
    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "l", 1, NULL), 0);
    cr_assert_eq(tw_store_close(s), 0);
    cr_assert_eq(fault_disarm(), 0, "RocksDB wrote its info log");
    cr_assert_eq(st_on_disk(dir), 1);
}

/* A failed write or sync is counted (tw_store_metrics()): the first call
 * of a commit fails. */
Test(store_errors, a_failed_sync_is_counted)
{
    struct tw_store *s = st_open(dir, &rec);
    struct tw_store_metrics m;

    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "a", 1, NULL), 0);
    fault_arm(db_dir(), 0, EIO);
    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "b", 1, NULL), -EIO);
    fault_disarm();
    cr_assert_eq(tw_store_metrics(s, &m), 0);
    cr_assert_eq(m.sync_failures, 1);
    cr_assert_eq(m.commits, 1);
    cr_assert_eq(m.queue_depth, 0);
    cr_assert_eq(m.held, 1);
    cr_assert_eq(tw_store_close(s), -EIO);
}

/* A store made anew with the k-th write or sync under its directory
 * failing (the marker, its sync, the directory's sync, the witness, the
 * database's files): the open fails with -EIO, or succeeds where that call
 * was not on its way, and the directory opens once the fault is gone (a
 * marker left half made, STORE.tmp, is not foreign). A new directory per
 * site: a store is made once. */
Test(store_errors, faults_while_creating)
{
    int failed = 0;

    for (long k = 0; k < 16; k++) {
        char sub[96];
        int rc;

        snprintf(sub, sizeof sub, "%s/c%02ld", dir, k);
        fault_arm(sub, k, EIO);
        rc = open_err(sub);
        fault_disarm();
        cr_assert(rc == 0 || rc == -EIO, "site %ld: %d", k, rc);
        failed += rc != 0;
        cr_assert_eq(open_err(sub), 0, "site %ld left it unopenable", k);
        cr_assert_eq(st_on_disk(sub), 0);
    }
    cr_assert_geq(failed, 3, "the marker's write and syncs did not fail it");
}

/* The marker's write interrupted by a signal (EINTR) is retried: the
 * store opens, with the whole marker. */
Test(store_errors, an_interrupted_marker_write_is_retried)
{
    char path[128], buf[64] = {0};
    FILE *f;

    fault_arm(dir, 0, EINTR);
    cr_assert_eq(open_err(dir), 0);
    cr_assert_gt(fault_disarm(), 1);
    snprintf(path, sizeof path, "%s/STORE", dir);
    f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(buf, sizeof buf, f));
    fclose(f);
    cr_assert_str_eq(buf, "timewheel-store 1\n");
}

/* The witness (dir/DURABLE) is a check, not the data: its write or its
 * sync failing loses nothing and fails nothing; the store reopens with
 * every timer. */
static void witness_fault(long at, bool stays)
{
    char path[128];
    struct tw_store *s = st_open(dir, &rec);

    snprintf(path, sizeof path, "%s/DURABLE", dir);
    if (stays)
        fault_arm_from(path, at, EIO);
    else
        fault_arm(path, at, EIO);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "w", 1, NULL), 0);
    cr_assert_eq(tw_store_close(s), 0);
    cr_assert_gt(fault_disarm(), at, "the witness was not written");
    cr_assert_eq(open_err(dir), 0);
    cr_assert_eq(st_on_disk(dir), 10);
}

Test(store_errors, a_witness_that_cannot_be_written_loses_nothing)
{
    witness_fault(0, true);
}

Test(store_errors, a_witness_that_cannot_be_synced_loses_nothing)
{
    witness_fault(1, false); /* the first mark: its write, then its sync */
}

/* ---- the directory's names of the wrong kind (lib/store/dir.c) ----------- */

static void make_dir(const char *name)
{
    char path[128];

    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(mkdir(path, 0755), 0, "%s", path);
}

Test(store_errors, a_lock_file_that_is_a_directory_is_eisdir)
{
    write_file("STORE", "timewheel-store 1\n");
    make_dir("LOCK");
    cr_assert_eq(open_err(dir), -EISDIR);
}

Test(store_errors, a_marker_that_is_a_directory_is_eisdir)
{
    make_dir("STORE");
    cr_assert_eq(open_err(dir), -EISDIR);
}

/* STORE.tmp is the one name besides LOCK a store's directory may hold
 * before its marker (a creator killed while writing it). */
Test(store_errors, a_half_made_marker_that_is_a_directory_is_eisdir)
{
    make_dir("STORE.tmp");
    cr_assert_eq(open_err(dir), -EISDIR);
}

Test(store_errors, a_db_that_is_a_file_is_enotdir)
{
    write_file("STORE", "timewheel-store 1\n");
    write_file("db", "not a directory\n");
    cr_assert_eq(open_err(dir), -ENOTDIR);
}

Test(store_errors, a_dangling_symlink_is_enoent)
{
    char link[128];

    snprintf(link, sizeof link, "%s/link", dir);
    cr_assert_eq(symlink("/nonexistent-twstore-target", link), 0);
    cr_assert_eq(open_err(link), -ENOENT);
}

/* A marker and no database: the creator was killed between the two, and
 * nothing was ever durable: the store is made. */
Test(store_errors, a_marker_without_a_database_opens_as_new)
{
    write_file("STORE", "timewheel-store 1\n");
    cr_assert_eq(open_err(dir), 0);
    cr_assert_eq(st_on_disk(dir), 0);
}

/* A db/ without CURRENT: new if it holds neither a table nor a log (what
 * RocksDB writes before CURRENT: nothing durable yet); damage if it holds
 * a log, even an empty one, which RocksDB writes only after CURRENT (and
 * refuses to create a database over). */
static int open_db_holding(const char *name, const char *text)
{
    char sub[96];

    st_rmdir(dir);
    cr_assert_eq(mkdir(dir, 0700), 0);
    write_file("STORE", "timewheel-store 1\n");
    make_dir("db");
    snprintf(sub, sizeof sub, "db/%s", name);
    write_file(sub, text);
    return open_err(dir);
}

Test(store_errors, a_database_without_current_is_new_unless_it_holds_a_log)
{
    cr_assert_eq(open_db_holding("x", "a short name"), 0);
    cr_assert_eq(st_on_disk(dir), 0);
    cr_assert_eq(open_db_holding("OPTIONS-000005", "options"), 0);
    cr_assert_eq(open_db_holding("000003.log", "a record"), -EBADMSG);
    cr_assert_eq(open_db_holding("000003.log", ""), -EBADMSG);
}

/* ---- out of descriptors -------------------------------------------------- */

static int lowest_free_fd(void)
{
    int fd = dup(0);

    cr_assert_geq(fd, 0);
    close(fd);
    return fd;
}

/* With no descriptor left (RLIMIT_NOFILE at the lowest free one): an open
 * fails with -EMFILE, a polled store's at its eventfd, a plain one's at
 * the directory's files; both open once descriptors are free again. */
Test(store_errors, out_of_descriptors_is_emfile)
{
    struct tw_store_config cfg;
    struct rlimit old, low;
    int err = 0;

    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = (rlim_t)lowest_free_fd();
    tw_store_config_init(&cfg);
    cfg.polled = true;
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    cr_assert_null(tw_store_open(dir, &cfg, &err));
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
    cr_assert_eq(err, -EMFILE, "polled: %d", err);
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    err = open_err(dir);
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
    cr_assert_eq(err, -EMFILE, "plain: %d", err);
    cr_assert_eq(open_err(dir), 0);
}
