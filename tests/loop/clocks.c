/*
 * What docs/embedding.md says about coarse clocks, measured: each clock's
 * resolution (clock_getres), its cost per read (best of 5 runs of 10^6
 * reads), and how far CLOCK_MONOTONIC_COARSE lags CLOCK_MONOTONIC (the
 * largest lag over 10^6 read pairs). Not a test: a measurement, run by hand:
 *
 *   cc -O2 -o clocks tests/loop/clocks.c && ./clocks
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define READS 1000000

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double ns_per_read(clockid_t id)
{
    volatile uint64_t sink = 0;
    uint64_t best = UINT64_MAX;

    for (int rep = 0; rep < 5; rep++) {
        uint64_t start = read_ns(CLOCK_MONOTONIC), took;

        for (int i = 0; i < READS; i++)
            sink += read_ns(id);
        took = read_ns(CLOCK_MONOTONIC) - start;
        if (took < best)
            best = took;
    }
    return (double)best / READS;
}

static double coarse_lag_ms(void)
{
    uint64_t lag = 0;

    for (int i = 0; i < READS; i++) {
        uint64_t fine = read_ns(CLOCK_MONOTONIC);
        uint64_t coarse = read_ns(CLOCK_MONOTONIC_COARSE);

        if (fine > coarse && fine - coarse > lag)
            lag = fine - coarse;
    }
    return lag / 1e6;
}

int main(void)
{
    static const struct {
        clockid_t id;
        const char *name;
    } clocks[] = {{CLOCK_MONOTONIC, "CLOCK_MONOTONIC"},
                  {CLOCK_MONOTONIC_COARSE, "CLOCK_MONOTONIC_COARSE"},
                  {CLOCK_REALTIME, "CLOCK_REALTIME"},
                  {CLOCK_BOOTTIME, "CLOCK_BOOTTIME"}};

    for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
        struct timespec res;

        clock_getres(clocks[i].id, &res);
        printf("%-24s resolution %ld ns, %.1f ns per read\n", clocks[i].name,
               res.tv_nsec, ns_per_read(clocks[i].id));
    }
    printf("CLOCK_MONOTONIC_COARSE lags CLOCK_MONOTONIC by up to %.2f ms\n",
           coarse_lag_ms());
    return 0;
}
