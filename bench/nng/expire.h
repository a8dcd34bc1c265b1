/*
 * expire.h: what nng's benchmarks (nngbench.c, keepalive.c) measure alike:
 * the monotonic clock in ns, the run time and voluntary wake-ups of the
 * threads nng names nng:aio:expire (its expire queues' threads, read from
 * /proc/self/task), and the comparison qsort() needs for lateness samples.
 */
#ifndef BENCH_NNG_EXPIRE_H
#define BENCH_NNG_EXPIRE_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct threads {
    uint64_t run_ns;
    uint64_t wakes;
    unsigned count;
};

static inline uint64_t read_u64(const char *path, const char *key)
{
    char line[256];
    uint64_t v = 0;
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (key == NULL) {
            v = strtoull(line, NULL, 10);
            break;
        }
        if (strncmp(line, key, strlen(key)) == 0) {
            v = strtoull(line + strlen(key), NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* Sum over the threads named nng:aio:expire (nng_thr_set_name). */
static inline struct threads expire_threads(void)
{
    struct threads t = {0, 0, 0};
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;

    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300], comm[64] = "";
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        if (fgets(comm, sizeof(comm), f) == NULL)
            comm[0] = 0;
        fclose(f);
        if (strncmp(comm, "nng:aio:expire", 14) != 0)
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
        t.run_ns += read_u64(path, NULL);
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        t.wakes += read_u64(path, "voluntary_ctxt_switches:");
        t.count++;
    }
    if (d != NULL)
        closedir(d);
    return t;
}

static inline int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

#endif
