/*
 * The hard stop of a cell (see stop.h).
 */
#include "stop.h"

#include "clock.h"

static uint64_t deadline;  /* 0: none */
static uint64_t rep_start; /* real clock, ns */
static uint64_t hit_at;    /* when the deadline was found passed; 0: not */
static double hit_done;    /* the fraction done then */

void stop_arm(uint64_t deadline_ns)
{
    deadline = deadline_ns;
    rep_start = clock_now_ns();
    hit_at = 0;
    hit_done = 0;
}

void stop_rep_start(void)
{
    rep_start = clock_now_ns();
}

bool stop_check(double done)
{
    uint64_t now;

    if (hit_at)
        return true;
    if (!deadline || (now = clock_now_ns()) <= deadline)
        return false;
    hit_at = now;
    hit_done = done;
    return true;
}

bool stop_hit(void)
{
    return hit_at != 0;
}

double stop_estimate_s(void)
{
    double spent = (double)(hit_at - rep_start) / 1e9;

    return hit_done > 0 ? spent / hit_done : spent;
}
