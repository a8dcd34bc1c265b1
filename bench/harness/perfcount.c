/*
 * The instruction counter (see perfcount.h). User-space instructions only
 * (exclude_kernel), which also works under perf_event_paranoid = 2.
 */
#define _GNU_SOURCE /* syscall() */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfcount.h"

static int fd = -1;
static char why[160] = "not opened";

bool perfcount_open(void)
{
    struct perf_event_attr a;

    if (fd >= 0)
        return true;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_INSTRUCTIONS;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0) {
        snprintf(why, sizeof(why), "perf_event_open(instructions) failed: %s",
                 strerror(errno));
        return false;
    }
    /* A counter that opens but never counts (some hypervisors) is useless. */
    if (perfcount_read() == 0) {
        close(fd);
        fd = -1;
        snprintf(why, sizeof(why), "the instructions counter reads 0");
        return false;
    }
    why[0] = '\0';
    return true;
}

bool perfcount_ok(void)
{
    return fd >= 0;
}

uint64_t perfcount_read(void)
{
    uint64_t v = 0;

    if (fd < 0 || read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
        return 0;
    return v;
}

const char *perfcount_why(void)
{
    return why;
}
