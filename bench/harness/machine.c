/*
 * Probing the machine: /proc/cpuinfo, sysconf, uname, the allocator, and
 * the compiler and flags twbench was built with (BENCH_CFLAGS comes from
 * bench/bench.mk). The versions of the implementations' libraries come
 * from their tables (impl.h, version).
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "machine.h"
#include "memstat.h"
#include "perfcount.h"
#include "timewheel.h"

#ifndef BENCH_CFLAGS
#define BENCH_CFLAGS "unknown"
#endif

static void cpu_model(char *buf, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];

    snprintf(buf, len, "unknown");
    while (f && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');

        if (strncmp(line, "model name", 10) != 0 || !colon)
            continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(buf, len, "%s", colon);
        break;
    }
    if (f)
        fclose(f);
}

void machine_probe(struct machine *m)
{
    struct utsname u;
    time_t now = time(NULL);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

    memset(m, 0, sizeof(*m));
    cpu_model(m->cpu, sizeof(m->cpu));
    m->cores = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    m->mem_gib = (double)pages * (double)page / (1024.0 * 1024 * 1024);
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof(m->kernel), "%s %s %s", u.sysname, u.release,
                 u.machine);
#ifdef __VERSION__
    snprintf(m->compiler, sizeof(m->compiler), "%s", __VERSION__);
#endif
    snprintf(m->cflags, sizeof(m->cflags), "%s", BENCH_CFLAGS);
    snprintf(m->allocator, sizeof(m->allocator), "jemalloc %s",
             memstat_version());
    strftime(m->date, sizeof(m->date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    snprintf(m->perf, sizeof(m->perf), "%s",
             perfcount_ok() ? "available (user-space instructions)"
                            : perfcount_why());
}
