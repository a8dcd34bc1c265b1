/*
 * Error messages and the version of the library actually linked.
 */
#include <errno.h>

#include "timewheel/core.h"

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

TW_PUBLIC unsigned tw_version(void)
{
    return TW_VERSION_HEX;
}

TW_PUBLIC const char *tw_version_string(void)
{
    return TW_VERSION_STRING;
}
