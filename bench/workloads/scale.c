/*
 * Helpers of the scale and stall workloads (scale.h).
 */
#include <stdio.h>

#include "scale.h"

/* Bytes per timer an implementation may allocate beside its node: the
 * heaps' arrays (a pointer, or libev's 16-byte entry, doubled while they
 * grow), with room to spare. */
#define STRUCTURE_BYTES 40u
/* Use at most this share of the memory available: other programs run. */
#define MEMORY_SHARE 0.6

bool scale_covers(const struct impl *im)
{
    return im->scale;
}

/* MemAvailable from /proc/meminfo, in bytes; 0 when unknown. */
static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kb = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

bool scale_fits(const struct impl *im, uint64_t n, uint64_t own_bytes,
                struct wl_result *out, const struct workload *wl)
{
    uint64_t need = n * (im->node_size + STRUCTURE_BYTES + own_bytes);
    uint64_t avail = mem_available();

    if (avail == 0 || (double)need <= MEMORY_SHARE * (double)avail)
        return true;
    wl_note_all(out, wl,
                "not run: needs about %.1f GB, more than %.0f%% of the "
                "%.1f GB available",
                (double)need / 1e9, 100 * MEMORY_SHARE, (double)avail / 1e9);
    return false;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;

        a = b;
        b = t;
    }
    return a;
}

void scale_distinct(uint32_t *idx, uint64_t count, uint64_t n)
{
    uint64_t stride = 2654435761u % n;

    while (stride == 0 || gcd(stride, n) != 1)
        stride++;
    for (uint64_t k = 0; k < count; k++)
        idx[k] = (uint32_t)((k * stride + 7) % n);
}
