/*
 * Helpers for the named-case tests (see util.h).
 */
#include <criterion/criterion.h>
#include <time.h>

#include "util.h"

static int sequence;

struct tw_wheel *wheel_new(enum tw_mode mode)
{
    struct tw_config cfg;
    struct tw_wheel *w;
    int err = 1;

    tw_config_init(&cfg, mode);
    w = tw_create(&cfg, &err);
    cr_assert(w && err == 0, "create failed: %d", err);
    return w;
}

static void record(struct tw_timer *t, void *arg)
{
    struct rec *r = arg;

    cr_assert_eq(t, &r->t);
    r->fired++;
    r->seq = ++sequence;
    r->at = tw_now(r->w);
    if (r->victim)
        r->victim_rc = tw_cancel(r->w, &r->victim->t);
    /* Fixed rate: the next run is one period after the last deadline. */
    if (r->period)
        cr_assert_geq(tw_rearm(r->w, t, tw_timer_deadline(t) + r->period), 0);
}

void rec_init(struct rec *r, struct tw_wheel *w)
{
    *r = (struct rec){.w = w};
    tw_timer_init(&r->t, record, r);
}

void wheel_ok(const struct tw_wheel *w)
{
    char why[200] = "";

    cr_assert_eq(tw_check(w, why, sizeof(why)), 0, "invariant: %s", why);
}

uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

    nanosleep(&ts, NULL);
}
