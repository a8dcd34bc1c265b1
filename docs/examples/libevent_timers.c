/*
 * Driving a timing wheel from libevent: one timer event (the "driver") for
 * the whole wheel, as docs/embedding.md describes.
 *
 * libevent 2.1 has no hook that runs before it polls, so every callback
 * that changes the wheel ends by aiming the driver again (aim()). The
 * driver's timeout comes from tw_loop_timeout_ms(), rounded up; the base is
 * made with EVENT_BASE_FLAG_PRECISE_TIMER so that libevent counts it on
 * CLOCK_MONOTONIC, the wheel's clock (by default it counts on
 * CLOCK_MONOTONIC_COARSE, which lags, and the driver could fire a few ms
 * early: harmless, since the wheel is advanced to a precise reading and
 * runs nothing early, but a wasted wake-up).
 *
 * The program schedules a few timers, re-arms one of them, checks that each
 * runs in order and never before its deadline, and exits 0.
 *
 * Build: cc -Wall -Wextra -Werror libevent_timers.c \
 *            $(pkg-config --cflags --libs timewheel-loop libevent)
 */
#define _POSIX_C_SOURCE 200809L
#include <event2/event.h>
#include <stdio.h>
#include <time.h>
#include <timewheel/loop.h>

#define TIMERS 4

struct app {
    struct event_base *base;
    struct event *driver; /* the one libevent timer that drives the wheel */
    struct tw_wheel *w;
    struct tw_timer t[TIMERS];
    int order[TIMERS], ran, early;
};

static uint64_t now_ns(void)
{
    uint64_t now = 0;

    tw_loop_clock(CLOCK_MONOTONIC, &now);
    return now;
}

/* Point the driver at the wheel's next deadline, or park it. */
static void aim(struct app *a)
{
    int ms = tw_loop_timeout_ms(a->w, now_ns());
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};

    if (ms < 0)
        event_del(a->driver);
    else
        event_add(a->driver, &tv);
}

static void on_driver(evutil_socket_t fd, short what, void *arg)
{
    struct app *a = arg;

    (void)fd;
    (void)what;
    tw_advance(a->w, now_ns());
    if (a->ran == TIMERS)
        event_base_loopbreak(a->base);
    else
        aim(a);
}

static void on_timer(struct tw_timer *t, void *arg)
{
    struct app *a = arg;
    uint64_t at = now_ns();

    a->early += at < tw_timer_deadline(t);
    a->order[a->ran++] = (int)(t - a->t);
    printf("timer %d ran %.2f ms after its deadline\n", (int)(t - a->t),
           (double)(at - tw_timer_deadline(t)) / 1e6);
}

int main(void)
{
    static const uint64_t after_ms[TIMERS] = {30, 10, 20, 40};
    struct event_config *ec = event_config_new();
    struct tw_config cfg;
    struct app a = {0};
    uint64_t now;

    event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
    a.base = event_base_new_with_config(ec);
    event_config_free(ec);
    tw_config_init(&cfg, TW_HIER);
    tw_loop_config(&cfg, CLOCK_MONOTONIC);
    a.w = tw_create(&cfg, NULL);
    if (!a.base || !a.w)
        return 1;
    a.driver = evtimer_new(a.base, on_driver, &a);
    now = now_ns();
    for (int i = 0; i < TIMERS; i++) {
        tw_timer_init(&a.t[i], on_timer, &a);
        tw_loop_schedule_after(a.w, &a.t[i], now, tw_msec(after_ms[i]));
    }
    /* Timer 3 moves from 40 ms to 5 ms: the driver must be aimed again. */
    tw_loop_rearm_after(a.w, &a.t[3], now_ns(), tw_msec(5));
    aim(&a);
    event_base_dispatch(a.base);
    event_free(a.driver);
    event_base_free(a.base);
    tw_destroy(a.w);
    if (a.ran != TIMERS || a.early || a.order[0] != 3 || a.order[1] != 1 ||
        a.order[2] != 2 || a.order[3] != 0) {
        printf("libevent_timers: FAILED (%d ran, %d early)\n", a.ran, a.early);
        return 1;
    }
    printf("libevent_timers: passed: 4 timers in order, none early\n");
    return 0;
}
