/*
 * witness.c: a record, outside the database, of how far the store's
 * durable commits reached, so that a write-ahead log that lost commits it
 * had synced is reported (-EBADMSG) at the next open instead of recovered
 * silently from what is left of it.
 *
 * RocksDB cannot tell, from the log alone, a log cut short or deleted
 * after a crash from one whose last write the crash tore: both end early,
 * and what is left is consistent (each commit carries its own 'M' record,
 * so the count recovered matches the timers recovered). Its recovery
 * tolerates a torn tail (it must: a crash tears the write in progress,
 * never reported durable), and damage inside the log is reported by
 * RocksDB itself (db.c's recovery mode). A witness of what was durable
 * closes the gap: the file dir/DURABLE holds the sequence high-water mark
 * (next_seq) of a commit known durable, big-endian, and its complement
 * (16 bytes, one pwrite(), so a torn write reads as damage, not as a
 * smaller mark). Sequence numbers only grow, so an open whose recovered
 * 'M' record holds a smaller next_seq than the witness has lost commits.
 *
 * The witness never claims more than is durable: it is written after the
 * commit's sync, and a crash between the two leaves it behind, which the
 * check allows. It is written by a thread of its own, the latest mark at
 * each turn, so no commit waits for it: it lags the log by at most the one
 * write in progress (after a power loss, by up to WITNESS_SYNC_NS), and a
 * close writes and syncs the last mark before it returns. A store without the
 * file (a new one, or one of an older version) has nothing to check until its
 * first commit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

#define WITNESS_LEN 16

/* The mark is written after every commit (into the page cache, which a
 * killed process leaves behind) and synced at most this often, and at the
 * close: a sync per commit would double the syncs on the disk the log
 * shares. A power loss may then leave a mark up to this much older, which
 * finds less, never more. */
#define WITNESS_SYNC_NS UINT64_C(100000000) /* 100 ms */

static char *path_of(const char *dir)
{
    size_t n = strlen(dir) + sizeof "/DURABLE";
    char *p = tw_alloc(n);

    if (p)
        snprintf(p, n, "%s/DURABLE", dir);
    return p;
}

/* The mark in fd: 0 and *seq (0 when the file is empty), or -EBADMSG. */
static int read_mark(int fd, uint64_t *seq)
{
    unsigned char b[WITNESS_LEN];
    ssize_t n = pread(fd, b, sizeof b, 0);

    if (n < 0)
        return errno ? -errno : -EIO;
    *seq = 0;
    if (n == 0)
        return 0;
    if (n != WITNESS_LEN || tw__get_be64(b) != ~tw__get_be64(b + 8))
        return -EBADMSG;
    *seq = tw__get_be64(b);
    return 0;
}

int tw__witness_read(const char *dir, uint64_t *seq)
{
    char *path = path_of(dir);
    int fd, rc;

    if (!path)
        return -ENOMEM;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    tw__strfree(path);
    *seq = 0;
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    rc = read_mark(fd, seq);
    close(fd);
    return rc;
}

/* The mark into the file; synced when sync is set. */
static int write_mark(int fd, uint64_t seq, bool sync)
{
    unsigned char b[WITNESS_LEN];

    tw__put_be64(b, seq);
    tw__put_be64(b + 8, ~seq);
    if (pwrite(fd, b, sizeof b, 0) != (ssize_t)sizeof b)
        return errno ? -errno : -EIO;
    return !sync || fdatasync(fd) == 0 ? 0 : -errno;
}

/* The thread: write the latest mark noted, one at a time, until told to
 * stop; a mark that failed (a full disk) waits for the next one. */
static void *witness_main(void *arg)
{
    struct tw__witness *w = arg;
    uint64_t tried = w->written, synced_at = 0;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        uint64_t seq = w->want, now;
        bool sync;

        if (seq == tried) {
            if (w->stop)
                break;
            pthread_cond_wait(&w->cv, &w->mu);
            continue;
        }
        sync = w->stop;
        pthread_mutex_unlock(&w->mu);
        now = tw__mono_ns();
        sync = sync || now - synced_at >= WITNESS_SYNC_NS;
        if (write_mark(w->fd, seq, sync) == 0) {
            w->written = seq; /* only this thread writes it */
            synced_at = sync ? now : synced_at;
        }
        tried = seq;
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    (void)fdatasync(w->fd); /* the last mark, at the close */
    return NULL;
}

int tw__witness_open(struct tw__witness *w, const char *dir)
{
    char *path = path_of(dir);
    int rc;

    w->fd = -1;
    if (!path)
        return -ENOMEM;
    w->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    tw__strfree(path);
    if (w->fd < 0)
        return -errno;
    rc = read_mark(w->fd, &w->written);
    if (rc != 0)
        return rc;
    w->want = w->written;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->inited = true;
    if (pthread_create(&w->thread, NULL, witness_main, w) != 0)
        return -EAGAIN;
    w->started = true;
    return 0;
}

void tw__witness_note(struct tw__witness *w, uint64_t seq)
{
    pthread_mutex_lock(&w->mu);
    if (seq > w->want) {
        w->want = seq;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

void tw__witness_close(struct tw__witness *w)
{
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
    }
    if (w->inited) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
    }
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    w->started = w->inited = false;
}
