/*
 * eioshim.so: an LD_PRELOAD shim for the store's tests (suite
 * store_diskfull): every write() on a file whose path starts with
 * $TWSHIM_FAIL_UNDER fails with EIO, as a disk that has gone bad does;
 * every other write() passes through. Built beside the test binary
 * (tests/store/store.mk).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t write(int fd, const void *buf, size_t n);

static int under(int fd)
{
    const char *prefix = getenv("TWSHIM_FAIL_UNDER");
    char link[64], path[4096];
    ssize_t len;

    if (!prefix || !*prefix)
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    len = readlink(link, path, sizeof path - 1);
    if (len <= 0)
        return 0;
    path[len] = 0;
    return strncmp(path, prefix, strlen(prefix)) == 0;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real)(int, const void *, size_t);

    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "write");
    if (under(fd)) {
        errno = EIO;
        return -1;
    }
    return real(fd, buf, n);
}
