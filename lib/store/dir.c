/*
 * dir.c: the store's directory. It holds
 *   LOCK    a lock file: flock()ed exclusively while a store has the
 *           directory open, so a second opener (another process, or this
 *           one again) gets -EBUSY before it touches anything; the kernel
 *           drops the lock when the holder dies, so a killed process
 *           leaves nothing to clean up.
 *   STORE   the marker, one line naming the format; written (synced,
 *           renamed into place) before the database, so that a directory
 *           without it that holds anything but LOCK is foreign.
 *   db/     the database (RocksDB's files).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

/* The marker names the version of the records' layout (key.h): for
 * TW__FORMAT 1, "timewheel-store 1" and a newline. */
#define STR(x) #x
#define XSTR(x) STR(x)
#define MARKER "timewheel-store " XSTR(TW__FORMAT) "\n"
#define MARKER_LEN (sizeof(MARKER) - 1)

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = tw_alloc(n);

    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

char *tw__dir_db_path(const char *dir)
{
    return join(dir, "db");
}

/* -errno of an open(), stat(), ... that failed. */
static int neg_errno(void)
{
    return errno ? -errno : -EIO;
}

static int take_lock(const char *dir, int *lockfd)
{
    char *path = join(dir, "LOCK");
    int fd;

    if (!path)
        return -ENOMEM;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    tw__strfree(path);
    if (fd < 0)
        return neg_errno();
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int rc = errno == EWOULDBLOCK ? -EBUSY : neg_errno();

        close(fd);
        return rc;
    }
    *lockfd = fd;
    return 0;
}

/* 1 if dir holds anything but LOCK and a half-written marker, 0 if not. */
static int has_foreign_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;

    if (!d)
        return neg_errno();
    while ((e = readdir(d)) && !found) {
        const char *n = e->d_name;

        found = strcmp(n, ".") && strcmp(n, "..") && strcmp(n, "LOCK") &&
                strcmp(n, "STORE.tmp");
    }
    closedir(d);
    return found;
}

/* 0 if dir/STORE names our format, -ENOENT if absent, -EBADMSG if not. */
static int read_marker(const char *dir)
{
    char buf[64] = {0}, *path = join(dir, "STORE");
    ssize_t n;
    int fd;

    if (!path)
        return -ENOMEM;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    tw__strfree(path);
    if (fd < 0)
        return errno == ENOENT ? -ENOENT : neg_errno();
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0)
        return neg_errno();
    return (size_t)n == MARKER_LEN && !memcmp(buf, MARKER, MARKER_LEN)
               ? 0
               : -EBADMSG;
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = 0;

    if (fd < 0)
        return neg_errno();
    if (fsync(fd) != 0)
        rc = neg_errno();
    close(fd);
    return rc;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? neg_errno() : -EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int write_marker(const char *dir)
{
    char *tmp = join(dir, "STORE.tmp"), *path = join(dir, "STORE");
    int fd = -1, rc = -ENOMEM;

    if (tmp && path) {
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        rc = fd < 0 ? neg_errno() : write_all(fd, MARKER, MARKER_LEN);
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = neg_errno();
    if (fd >= 0)
        close(fd);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = neg_errno();
    if (rc == 0)
        rc = sync_dir(dir);
    tw__strfree(tmp);
    tw__strfree(path);
    return rc;
}

/* 1 if db/ holds a table or a non-empty log: data, which a database
 * created anew over it would drop (RocksDB deletes a table it does not
 * know); 0 if not; -ENOMEM if it could not look, which must not pass for
 * "no data". */
static int db_has_data(const char *dir)
{
    char *path = join(dir, "db");
    DIR *d = path ? opendir(path) : NULL;
    struct dirent *e;
    int found = path ? 0 : -ENOMEM;

    while (d && (e = readdir(d)) && !found) {
        size_t n = strlen(e->d_name);
        char *file = join(path, e->d_name);
        struct stat st;

        found = !file ? -ENOMEM
                      : n > 4 && (!strcmp(e->d_name + n - 4, ".sst") ||
                                  (!strcmp(e->d_name + n - 4, ".log") &&
                                   stat(file, &st) == 0 && st.st_size > 0));
        tw__strfree(file);
    }
    if (d)
        closedir(d);
    tw__strfree(path);
    return found;
}

/* The database must be created when db/CURRENT does not exist yet: the
 * marker is written first, so a crash between the two leaves a marker and
 * no database, which holds nothing anyone was told was durable. A db/
 * without CURRENT that holds data is damaged, not new. */
static int db_missing(const char *dir)
{
    char *path = join(dir, "db/CURRENT");
    struct stat st;
    int rc;

    if (!path)
        return -ENOMEM;
    rc = stat(path, &st) == 0 ? 0 : errno == ENOENT ? 1 : neg_errno();
    tw__strfree(path);
    if (rc == 1 && (rc = db_has_data(dir)) == 0)
        return 1;
    return rc > 0 ? -EBADMSG : rc;
}

static int check_or_create(const char *dir, bool *create)
{
    int rc = read_marker(dir);

    if (rc == -ENOENT) {
        rc = has_foreign_files(dir);
        if (rc != 0)
            return rc > 0 ? -ENOTEMPTY : rc;
        rc = write_marker(dir);
    }
    if (rc != 0)
        return rc;
    rc = db_missing(dir);
    if (rc < 0)
        return rc;
    *create = rc == 1;
    return 0;
}

/* A directory without a marker that holds anything is refused before the
 * lock file is made, so a foreign directory is left as it was found. The
 * check is made again under the lock (check_or_create()): this one only
 * keeps the lock file out. */
static int refuse_foreign(const char *dir)
{
    int rc = read_marker(dir);

    if (rc == 0 || rc == -EBADMSG)
        return 0; /* a store (or damaged): the lock first */
    if (rc != -ENOENT)
        return rc;
    rc = has_foreign_files(dir);
    return rc > 0 ? -ENOTEMPTY : rc;
}

int tw__dir_open(const char *dir, int *lockfd, bool *create)
{
    int rc, fd = -1;

    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return neg_errno();
    rc = refuse_foreign(dir);
    if (rc == 0)
        rc = take_lock(dir, &fd);
    if (rc == 0)
        rc = check_or_create(dir, create);
    if (rc != 0 && fd >= 0)
        close(fd);
    if (rc == 0)
        *lockfd = fd;
    return rc;
}
