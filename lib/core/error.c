/*
 * Error messages, the reasons tw_check() gives, and the version of the
 * library actually linked.
 *
 * tw__fail() is here, not in check.c, because the design-specific checks
 * in hier.c and hashed.c write their reasons with it too and check.c
 * calls those checks: with it in check.c, the three files called into each
 * other (issue 29).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "timewheel/core.h"
#include "wheel.h"

TW_PUBLIC const char *tw_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
    case -EINVAL:
        return "invalid argument";
    case -ENOMEM:
        return "out of memory";
    case -EBUSY:
        return "busy: timer already pending, or wheel in a callback or visit";
    case -ERANGE:
        return "time is earlier than the wheel's current time";
    case -EPROTO:
        return "wheel invariant broken";
    case -EAGAIN:
        return "resource temporarily unavailable (too many pending timers or "
               "services, or the service is behind)";
    case -ESHUTDOWN:
        return "timer service is stopped";
    case -EDEADLK:
        return "operation would deadlock (called from a callback)";
    default:
        return "unknown error";
    }
}

int tw__fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (why && len) {
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return -EPROTO;
}

TW_PUBLIC unsigned tw_version(void)
{
    return TW_VERSION_HEX;
}

TW_PUBLIC const char *tw_version_string(void)
{
    return TW_VERSION_STRING;
}
