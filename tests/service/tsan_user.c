/*
 * A user's program under ThreadSanitizer, against the library as installed
 * (built without TSan, ALLOC=libc): the argument is written before the
 * schedule and read in the callback; what the callback wrote is read after
 * a query says DONE; a periodic timer's argument is written after
 * tw_handle_cancel_wait(); a release hook frees its argument, also after
 * tw_handle_cancel_release() (the hooked path of that call). Run by hand
 * (docs/service.md, "ThreadSanitizer for users"); TSan exits with 66 if it
 * reports anything.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <timewheel/service.h>

struct job {
    int in;
    int out;
};

static void cb(struct tw_handle *h, void *arg)
{
    struct job *j = arg;
    (void)h;
    j->out = j->in + 1; /* reads what the scheduler wrote */
}

static void release(void *arg)
{
    free(arg);
}

int main(void)
{
    struct tw_service_config cfg;
    int err;
    tw_service_config_init(&cfg, TW_HIER);
    cfg.executor_threads = 2;
    struct tw_service *s = tw_service_create(&cfg, &err);
    for (int i = 0; i < 200; i++) {
        struct job *j = malloc(sizeof *j);
        struct tw_handle *h;
        j->in = i; /* before schedule */
        tw_service_schedule(s, 0, cb, j, &h);
        while (tw_handle_query(h) != TW_HANDLE_DONE)
            ;
        if (j->out != i + 1) /* after DONE */
            return 1;
        tw_handle_release(h);
        free(j);
        /* periodic + cancel-and-wait, then free */
        j = malloc(sizeof *j);
        j->in = i;
        tw_service_schedule_periodic(s, 0, 1000000, TW_FIXED_RATE, cb, j, &h);
        for (volatile int k = 0; k < 20000; k++)
            ;
        tw_handle_cancel_wait(h);
        j->in = -1; /* after cancel-and-wait */
        tw_handle_release(h);
        free(j);
        /* release hook */
        struct tw_timer_spec sp = {
            .deadline = tw_service_now(s), .cb = cb, .release = release};
        j = malloc(sizeof *j);
        j->in = i;
        sp.arg = j;
        tw_service_submit(s, &sp, NULL);
        /* cancel and forget: the hook frees what was written before */
        sp.deadline = tw_service_now(s) + (i % 2 ? 0 : 1000000000);
        j = malloc(sizeof *j);
        j->in = i;
        sp.arg = j;
        tw_service_submit(s, &sp, &h);
        tw_handle_cancel_release(h);
    }
    tw_service_destroy(s);
    puts("ok");
    return 0;
}
