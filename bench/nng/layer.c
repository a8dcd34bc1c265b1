/*
 * layer: which layer of timewheel nng's expire queues should sit on,
 * measured (issue 31; docs/brokers.md, "nng"). bench/nng/bench.sh runs it.
 *
 *   layer N CYCLES
 *
 * With N timers pending (deadlines 1000-2000 s ahead, random order), the
 * cost of what every nng aio with a timeout does: arm a timer and cancel
 * it, CYCLES times, through
 *  - core: a struct tw_timer embedded in the caller's object on the core
 *    wheel (timewheel/core.h), both calls under a pthread mutex, as the
 *    patched nng does under its queue's lock;
 *  - service: tw_service_schedule() and tw_handle_cancel_release()
 *    (timewheel/service.h), thread-safe by themselves, one handle
 *    allocated per arm;
 * and the heap each pending timer takes beyond the caller's object
 * (glibc's mallinfo2() around the N arms). One line of key=value per layer.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <timewheel/core.h>
#include <timewheel/service.h>

#define BASE_NS (1000u * TW_NSEC_PER_SEC)
#define SPAN_MS 1000000u

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t later(void)
{
    unsigned r = ((unsigned)rand() << 15) ^ (unsigned)rand();

    return BASE_NS + tw_msec(r % SPAN_MS);
}

static void never(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
}

static void never_svc(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
}

static size_t heap(void)
{
    return mallinfo2().uordblks;
}

static void core_layer(size_t n, unsigned cycles)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    struct tw_timer *pend = calloc(n ? n : 1, sizeof(*pend)), t;
    struct tw_config cfg;
    struct tw_wheel *w;
    uint64_t start = now_ns(), t0;
    size_t h0;

    tw_config_init(&cfg, TW_HIER);
    cfg.start_ns = start;
    if (pend == NULL || (w = tw_create(&cfg, NULL)) == NULL) {
        fprintf(stderr, "layer: out of memory\n");
        exit(1);
    }
    h0 = heap();
    for (size_t i = 0; i < n; i++) {
        tw_timer_init(&pend[i], never, NULL);
        tw_schedule(w, &pend[i], start + later());
    }
    printf("layer=core n=%zu heap_per_timer=%.1f", n,
           n ? (double)(heap() - h0) / (double)n : 0.0);
    tw_timer_init(&t, never, NULL);
    t0 = now_ns();
    for (unsigned i = 0; i < cycles; i++) {
        pthread_mutex_lock(&mu);
        tw_schedule(w, &t, now_ns() + 10 * TW_NSEC_PER_SEC);
        pthread_mutex_unlock(&mu);
        pthread_mutex_lock(&mu);
        tw_cancel(w, &t);
        pthread_mutex_unlock(&mu);
    }
    printf(" arm_cancel_ns=%.1f timer_bytes=%zu\n",
           (double)(now_ns() - t0) / cycles, sizeof(struct tw_timer));
    tw_destroy(w);
    free(pend);
}

static void service_layer(size_t n, unsigned cycles)
{
    struct tw_service_config cfg;
    struct tw_service *s;
    struct tw_handle **pend = calloc(n ? n : 1, sizeof(*pend));
    uint64_t t0;
    size_t h0;
    int err;

    tw_service_config_init(&cfg, TW_HIER);
    if (pend == NULL || (s = tw_service_create(&cfg, &err)) == NULL) {
        fprintf(stderr, "layer: no service: %s\n", tw_strerror(err));
        exit(1);
    }
    h0 = heap();
    for (size_t i = 0; i < n; i++)
        tw_service_schedule(s, later(), never_svc, NULL, &pend[i]);
    printf("layer=service n=%zu heap_per_timer=%.1f", n,
           n ? (double)(heap() - h0) / (double)n : 0.0);
    t0 = now_ns();
    for (unsigned i = 0; i < cycles; i++) {
        struct tw_handle *h;

        if (tw_service_schedule(s, 10 * TW_NSEC_PER_SEC, never_svc, NULL, &h) ==
            0)
            tw_handle_cancel_release(h);
    }
    printf(" arm_cancel_ns=%.1f\n", (double)(now_ns() - t0) / cycles);
    for (size_t i = 0; i < n; i++)
        tw_handle_cancel_release(pend[i]);
    tw_service_destroy(s);
    free(pend);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    unsigned cycles = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 200000;

    srand(1);
    core_layer(n, cycles);
    service_layer(n, cycles);
    return 0;
}
