/*
 * diskbytes.h: the bytes a directory takes on disk, for the store's
 * benchmarks (storebench.c, dbcmp.c): the allocated blocks of every
 * regular file under it, subdirectories included, symbolic links not
 * followed. Preallocated space counts, as it is taken from the disk.
 */
#ifndef BENCH_STORE_DISKBYTES_H
#define BENCH_STORE_DISKBYTES_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static inline uint64_t disk_bytes(const char *path)
{
    char p[4200];
    struct dirent *e;
    struct stat st;
    uint64_t sum = 0;
    DIR *d = opendir(path);

    if (!d)
        return 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p ||
            lstat(p, &st) != 0)
            continue; /* too deep to name, or gone */
        if (S_ISDIR(st.st_mode))
            sum += disk_bytes(p);
        else if (S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_blocks * 512;
    }
    closedir(d);
    return sum;
}

#endif
