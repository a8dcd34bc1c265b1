/*
 * The helpers every workload (wl_*.c) shares: recording a repetition's
 * value and a metric's notes, creating an implementation's context or
 * saying why not, how many repetitions a cell still gets, the check that
 * every timer fired. They call no workload (the registry is workload.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "perfcount.h"
#include "stop.h"
#include "workload.h"

void wl_add(struct wl_result *out, unsigned m, double value)
{
    if (out->nrep[m] < WL_MAX_REPS)
        out->rep[m][out->nrep[m]++] = value;
}

void wl_note(struct wl_result *out, unsigned m, const char *fmt, ...)
{
    char text[WL_NOTE];
    char *note = out->note[m];
    size_t len = strlen(note);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (strstr(note, text))
        return; /* repetitions repeat their notes */
    snprintf(note + len, WL_NOTE - len, "%s%s", len ? "; " : "", text);
}

void wl_note_all(struct wl_result *out, const struct workload *wl,
                 const char *fmt, ...)
{
    char text[WL_NOTE];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    for (unsigned m = 0; m < wl->nmetrics; m++)
        if (perfcount_ok() ||
            strcmp(wl->metrics[m].unit, WL_UNIT_INSTRUCTIONS) != 0)
            wl_note(out, m, "%s", text);
}

void *wl_create(const struct impl *im, uint64_t n, unsigned nmetrics,
                struct wl_result *out)
{
    char why[200] = "";
    void *ctx =
        n <= UINT32_MAX ? im->create((uint32_t)n, why, sizeof(why)) : NULL;

    if (!ctx)
        for (unsigned m = 0; m < nmetrics; m++)
            wl_note(out, m, "not run: %s", why[0] ? why : "too many timers");
    return ctx;
}

uint64_t wl_rep_work(const struct workload *wl, uint64_t n)
{
    if (n == 0 || n >= wl->rep_min)
        return n;
    return (wl->rep_min + n - 1) / n * n;
}

bool wl_more(struct wl_plan *plan, unsigned r)
{
    uint64_t now = clock_now_ns();

    if (r >= plan->reps || stop_hit() ||
        (r > 0 && now + (now - plan->rep_ns) > plan->stop_ns))
        return false;
    plan->rep_ns = now;
    stop_rep_start();
    return true;
}

void wl_check_fired(struct wl_result *out, unsigned m, uint64_t fired,
                    uint64_t expected)
{
    if (fired != expected)
        wl_note(out, m, "WRONG: %llu timers fired, %llu expected",
                (unsigned long long)fired, (unsigned long long)expected);
}
