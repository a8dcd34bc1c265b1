/*
 * Helpers of the store's tests (tests/store/): a scratch directory, a
 * recorder of deliveries and done callbacks, and an opener with test
 * bounds. Static inline so each test file takes what it uses.
 */
#ifndef TESTS_STORE_ST_H
#define TESTS_STORE_ST_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timewheel/store.h"

#define ST_MS UINT64_C(1000000)
#define ST_MAX 4096

static inline uint64_t st_real(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t st_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void st_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A new empty directory under /tmp; st_rmdir() removes it. */
static inline void st_mkdir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/twstore-test-XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
}

static inline void st_rmdir(const char *dir)
{
    char cmd[512];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* What the callbacks saw. */
struct st_rec {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool ack; /* ack each delivery from the callback */
    size_t n; /* deliveries */
    struct tw_store_id id[ST_MAX];
    uint64_t at[ST_MAX]; /* CLOCK_REALTIME at delivery */
    size_t done_n;       /* done callbacks */
    int done_err[ST_MAX];
};

static inline void st_rec_init(struct st_rec *r, bool ack)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->ack = ack;
}

static inline void st_deliver(struct tw_store *s, struct tw_store_id id,
                              const void *payload, size_t len, void *arg)
{
    struct st_rec *r = arg;
    uint64_t now = st_real();

    (void)payload;
    (void)len;
    pthread_mutex_lock(&r->mu);
    if (r->n < ST_MAX) {
        r->id[r->n] = id;
        r->at[r->n] = now;
    }
    r->n++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (r->ack)
        cr_assert_eq(tw_store_ack(s, id, NULL, NULL), 0);
}

static inline void st_done(struct tw_store_id id, int err, void *arg)
{
    struct st_rec *r = arg;

    (void)id;
    pthread_mutex_lock(&r->mu);
    if (r->done_n < ST_MAX)
        r->done_err[r->done_n] = err;
    r->done_n++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* Wait until *field reaches want (or timeout_ms passes); returns it. */
static inline size_t st_wait(struct st_rec *r, size_t *field, size_t want,
                             unsigned timeout_ms)
{
    uint64_t end = st_mono() + (uint64_t)timeout_ms * ST_MS;
    size_t got;

    pthread_mutex_lock(&r->mu);
    while (*field < want && st_mono() < end) {
        pthread_mutex_unlock(&r->mu);
        st_sleep_ms(2);
        pthread_mutex_lock(&r->mu);
    }
    got = *field;
    pthread_mutex_unlock(&r->mu);
    return got;
}

/* *field, read under the recorder's lock (the worker writes it). */
static inline size_t st_get(struct st_rec *r, size_t *field)
{
    size_t v;

    pthread_mutex_lock(&r->mu);
    v = *field;
    pthread_mutex_unlock(&r->mu);
    return v;
}

static inline struct tw_store *st_open_cfg(const char *dir, struct st_rec *r,
                                           struct tw_store_config *cfg)
{
    int err = 1;
    struct tw_store *s;

    cfg->deliver = st_deliver;
    cfg->deliver_arg = r;
    s = tw_store_open(dir, cfg, &err);
    cr_assert_not_null(s, "open %s: %d", dir, err);
    cr_assert_eq(err, 0);
    return s;
}

static inline struct tw_store *st_open(const char *dir, struct st_rec *r)
{
    struct tw_store_config cfg;

    tw_store_config_init(&cfg);
    return st_open_cfg(dir, r, &cfg);
}

/* tw_store_scan()'s count of what a restart would find. */
static inline int st_count_visit(struct tw_store_id id, const void *p,
                                 size_t len, void *ctx)
{
    (void)id;
    (void)p;
    (void)len;
    (*(int64_t *)ctx)++;
    return 0;
}

/* Run this test binary again, on the one test `filter` names, with the
 * environment envp (the child half of a test that needs another process:
 * a second opener, a process killed, an LD_PRELOAD shim), its output to
 * /dev/null (its stderr kept when keep_stderr); returns its wait status.
 * posix_spawn(), not fork(): under ThreadSanitizer, fork() runs
 * jemalloc's pre-fork handlers, which take more locks at once than its
 * deadlock detector can follow. */
static inline int st_run_self(const char *filter, char *const envp[],
                              bool keep_stderr)
{
    char *argv[] = {"twtest", "--filter", (char *)filter, NULL};
    posix_spawn_file_actions_t fa;
    int status;
    pid_t pid;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (!keep_stderr)
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    cr_assert_eq(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp), 0);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return status;
}

/* What a restart would find: tw_store_scan()'s count of dir, which must
 * succeed. */
static inline int64_t st_on_disk(const char *dir)
{
    int64_t n = 0, rc = tw_store_scan(dir, st_count_visit, &n);

    cr_assert_eq(rc, n, "scan: %lld", (long long)rc);
    return n;
}

/* A suite's fixture, the same for every store suite: a fresh directory in
 * `dir` and a recorder `rec` that acks each delivery; teardown runs
 * `before_rmdir` (a statement) and removes the directory. */
#define ST_FIXTURE(suite, timeout_s, before_rmdir)                             \
    static char dir[64];                                                       \
    static struct st_rec rec;                                                  \
    static void setup(void)                                                    \
    {                                                                          \
        st_mkdir(dir, sizeof dir);                                             \
        st_rec_init(&rec, true);                                               \
    }                                                                          \
    static void teardown(void)                                                 \
    {                                                                          \
        before_rmdir;                                                          \
        st_rmdir(dir);                                                         \
    }                                                                          \
    TestSuite(suite, .init = setup, .fini = teardown, .timeout = timeout_s)

#endif
