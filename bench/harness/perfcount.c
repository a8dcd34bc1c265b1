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

/* Why the counter could not be opened, in words a person can act on. */
static void plain_reason(int err)
{
    if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
        snprintf(why, sizeof(why),
                 "hardware counters are not available on this machine");
    else if (err == EACCES || err == EPERM)
        snprintf(why, sizeof(why),
                 "hardware counters are not allowed here (see "
                 "/proc/sys/kernel/perf_event_paranoid)");
    else if (err == ENOSYS)
        snprintf(why, sizeof(why),
                 "this kernel has no performance counters (perf_event_open)");
    else
        snprintf(why, sizeof(why), "hardware counters could not be opened (%s)",
                 strerror(err));
}

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
        plain_reason(errno);
        return false;
    }
    /* A counter that opens but never counts (some hypervisors) is useless. */
    if (perfcount_read() == 0) {
        close(fd);
        fd = -1;
        snprintf(why, sizeof(why),
                 "hardware counters are not available on this machine "
                 "(the instructions counter reads 0)");
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
