/*
 * A full disk and a failing disk (suite store_diskfull, issue 28, 2): on a
 * real full filesystem the test makes itself (a 16 MiB tmpfs mounted over
 * a scratch directory; skipped, saying why, where mounting is not
 * allowed), and under an LD_PRELOAD shim that fails every write() under
 * the store's db/ with EIO (tests/store/eioshim.c, built beside the test
 * binary). Each must end in a negative errno -- -ENOSPC, -EIO -- never in
 * an abort (RocksDB 7.8.3 asserted in its info logger writing db/LOG on
 * the same disk), and a reopen once the cause is gone must find every
 * timer that was reported durable.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "st.h"

#define FS_BYTES (16u << 20)
#define DURABLE 2000

static char mnt[64], dir[96];
static bool mounted;
static struct st_rec rec;

static void setup(void)
{
    st_mkdir(mnt, sizeof mnt);
    snprintf(dir, sizeof dir, "%s/store", mnt);
    st_rec_init(&rec, true);
}

static void teardown(void)
{
    if (mounted)
        cr_assert_eq(umount(mnt), 0, "umount %s: %s", mnt, strerror(errno));
    mounted = false;
    st_rmdir(mnt);
}

TestSuite(store_diskfull, .init = setup, .fini = teardown, .timeout = 120);

/* The small filesystem, or the test is skipped with the reason. */
static void mount_small(void)
{
    char opt[32];

    snprintf(opt, sizeof opt, "size=%u", FS_BYTES);
    if (mount("twstore", mnt, "tmpfs", 0, opt) != 0) {
        cr_log_warn("SKIPPED: cannot mount a %u-byte tmpfs on %s (%s): "
                    "a real full filesystem needs root or CAP_SYS_ADMIN",
                    FS_BYTES, mnt, strerror(errno));
        cr_skip_test("no tmpfs mount: %s", strerror(errno));
    }
    mounted = true;
}

static uint64_t free_bytes(void)
{
    struct statvfs v;

    cr_assert_eq(statvfs(mnt, &v), 0);
    return (uint64_t)v.f_bavail * v.f_frsize;
}

/* Fill the filesystem with a file of its own until only leave bytes are
 * free (0: full, the last write refused with ENOSPC). */
static void fill(const char *name, uint64_t leave)
{
    static char block[64 << 10];
    char path[160];
    int fd;

    snprintf(path, sizeof path, "%s/%s", mnt, name);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    cr_assert_geq(fd, 0);
    memset(block, 'f', sizeof block);
    for (;;) {
        uint64_t left = free_bytes();
        size_t n = sizeof block;
        ssize_t w;

        if (left <= leave)
            break;
        if (leave && left - leave < n)
            n = (size_t)(left - leave);
        w = write(fd, block, n);
        if (w < 0) {
            cr_assert_eq(errno, ENOSPC, "fill: %s", strerror(errno));
            break;
        }
    }
    close(fd);
}

static void unfill(const char *name)
{
    char path[160];

    snprintf(path, sizeof path, "%s/%s", mnt, name);
    cr_assert_eq(unlink(path), 0);
}

/* DURABLE timers far ahead, confirmed; the store closed. */
static void make_store(void)
{
    struct tw_store *s = st_open(dir, &rec);

    for (int i = 0; i < DURABLE; i++)
        cr_assert_eq(tw_store_schedule_at(s, UINT64_MAX - (uint64_t)i, &i,
                                          sizeof i, NULL, NULL, NULL),
                     0);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(tw_store_close(s), 0);
}

/* Schedule until the disk refuses; every refusal -ENOSPC. Returns how many
 * were confirmed durable. */
static int64_t schedule_until_full(struct tw_store *s)
{
    char payload[512];
    int64_t confirmed = 0;
    int rc = 0;

    memset(payload, 'p', sizeof payload);
    for (int i = 0; i < 200000 && rc == 0; i++) {
        rc = tw_store_schedule_durable(s, UINT64_MAX / 2 + (uint64_t)i, payload,
                                       sizeof payload, NULL);
        confirmed += rc == 0;
    }
    cr_assert_eq(rc, -ENOSPC, "the disk filled with %d, not -ENOSPC", rc);
    cr_assert_eq(tw_store_schedule_at(s, 1, "", 0, NULL, NULL, NULL), -ENOSPC,
                 "a failed store took an operation");
    return confirmed;
}

/* With the filler gone, the store opens and holds at least want. */
static void reopens_with(int64_t want)
{
    struct tw_store *s = st_open(dir, &rec);

    cr_assert_geq((int64_t)tw_store_count(s), want);
    cr_assert_eq(tw_store_close(s), 0);
    cr_assert_geq(st_on_disk(dir), want,
                  "a durable timer lost to the full disk");
}

Test(store_diskfull, opening_an_existing_store_on_a_full_disk)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    int err = 1;
    int64_t confirmed = DURABLE;

    mount_small();
    make_store();
    fill("filler", 0);
    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    s = tw_store_open(dir, &cfg, &err);
    if (!s) {
        cr_assert_eq(err, -ENOSPC, "open on a full disk: %d", err);
    } else {
        cr_log_info("opened on a full disk; scheduling until refused");
        confirmed += schedule_until_full(s);
        err = tw_store_close(s);
        cr_assert(err == 0 || err == -ENOSPC, "close: %d", err);
    }
    unfill("filler");
    reopens_with(confirmed);
}

Test(store_diskfull, scheduling_with_a_megabyte_and_a_half_free)
{
    struct tw_store *s;
    int64_t confirmed;
    int rc;

    mount_small();
    make_store();
    s = st_open(dir, &rec);
    fill("filler", 3u << 19); /* 1.5 MiB */
    confirmed = schedule_until_full(s);
    cr_log_info("%lld confirmed on the last 1.5 MiB", (long long)confirmed);
    rc = tw_store_close(s);
    cr_assert(rc == 0 || rc == -ENOSPC, "close: %d", rc);
    unfill("filler");
    reopens_with(DURABLE + confirmed);
}

/* ---- the I/O-error shim ---------------------------------------------------
 *
 * The child half runs in another process of this binary (this test alone,
 * TWSTORE_EIO_DIR set) under LD_PRELOAD=eioshim.so, TWSHIM_FAIL_UNDER set
 * to the store's db/: it opens the existing store, schedules, and closes;
 * every answer must be 0 or -EIO, and it must exit, not abort.
 */
static int child_open_schedule_close(const char *d)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    int err = 1, rc;

    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    s = tw_store_open(d, &cfg, &err);
    if (!s) {
        cr_assert_eq(err, -EIO, "open under the shim: %d", err);
        return 0;
    }
    rc = tw_store_schedule_durable(s, UINT64_MAX / 2, "x", 1, NULL);
    cr_assert_eq(rc, -EIO, "schedule under the shim: %d", rc);
    rc = tw_store_close(s);
    cr_assert(rc == 0 || rc == -EIO, "close under the shim: %d", rc);
    return 1;
}

static void shim_path(char *buf, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

    cr_assert_gt(n, 0);
    exe[n] = 0;
    snprintf(buf, len, "%s/eioshim.so", dirname(exe));
    cr_assert_eq(access(buf, R_OK), 0, "%s not built (make builds it)", buf);
}

Test(store_diskfull, every_write_under_db_fails_with_eio)
{
    const char *other = getenv("TWSTORE_EIO_DIR");
    char shim[PATH_MAX + 16], pre[PATH_MAX + 32], under[160], fail[192];
    char env_dir[160], asan[] = "ASAN_OPTIONS=verify_asan_link_order=0";
    char *envp[] = {pre, fail, env_dir, asan, NULL};
    int status;

    if (other) {
        child_open_schedule_close(other);
        return;
    }
    make_store();
    shim_path(shim, sizeof shim);
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", shim);
    snprintf(under, sizeof under, "%s/db/", dir);
    snprintf(fail, sizeof fail, "TWSHIM_FAIL_UNDER=%s", under);
    snprintf(env_dir, sizeof env_dir, "TWSTORE_EIO_DIR=%s", dir);
    status = st_run_self("store_diskfull/every_write_under_db_fails_with_eio",
                         envp, true);
    cr_assert(!WIFSIGNALED(status), "the store under EIO died of signal %d",
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the child's checks failed (status %d)", status);
    reopens_with(DURABLE);
}
