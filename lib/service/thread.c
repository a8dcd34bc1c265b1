/*
 * What the calling thread is to the services: one of a service's own
 * threads (its worker, an executor thread, or the thread running stop's
 * hand-back), and the handle whose callback it runs. Thread-locals read on
 * the slow paths (a callback that stops its own service gets -EDEADLK, a
 * producer never sleeps for a service from a service's thread, a callback
 * cannot cancel-and-wait itself), kept in a file of their own so that
 * every file that reads them depends on this one alone, not on each
 * other.
 */
#include "service.h"

_Thread_local const struct tw_service *tw__svc_current;
_Thread_local const struct tw_handle *tw__running;
