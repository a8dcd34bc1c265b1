/*
 * Waking the worker: the kick (a flag under its lock, which it reads
 * before every sleep, and a signal), and the look at its sleep after a
 * push that was not followed by one of our own fences. The inline halves,
 * on every schedule and cancel, are in service_inlines.h (wake.c's group);
 * the hand-shake they rely on is worker.c's "Sleeping". In a file of its
 * own because producers (handle.c, backlog.c, the inline schedule path),
 * stop (service.c) and the executor wake the worker without calling into
 * the worker's file, which calls into theirs.
 */
#include "service.h"

void tw__wake_kick(struct tw_service *s)
{
    pthread_mutex_lock(&s->lock);
    s->kicked = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

/* As tw__wake_pushed(), when nothing was pushed just before: the barrier
 * is liburcu's, one GCC's ThreadSanitizer accepts (it refuses
 * atomic_thread_fence). */
void tw__wake_notify(struct tw_service *s, uint64_t due)
{
    cmm_smp_mb();
    tw__wake_pushed(s, due);
}
