/*
 * Sleeping on a handle's 32-bit state word: Linux futexes, private to the
 * process. tw_handle_cancel_wait() sleeps while the word still holds the
 * running state it saw; the thread that moves the handle out of a running
 * state wakes every sleeper. The ordering itself is carried by the
 * compare-and-swaps on the word, TW__WAITERS included (see handle.c); the
 * futex only parks the thread, so a spurious or early return is harmless:
 * the caller looks at the word again.
 */
#define _DEFAULT_SOURCE 1

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "service.h"

void tw__futex_wait(_Atomic uint32_t *word, uint32_t val)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, val, NULL, NULL,
            0);
}

void tw__futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
            NULL, 0);
}
