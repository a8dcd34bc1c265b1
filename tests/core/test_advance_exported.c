/*
 * The exported twins of the inline advances (lib/core/advance.c, suite
 * core_advance_exported): tw_advance() and tw_advance_bounded() as a
 * binding that cannot inline calls them (ctypes, dlsym, a program built
 * against 0.1.0), through the symbols the library exports. They must
 * answer exactly as the inline functions of timewheel/core.h: the idle
 * advance that only records the time, the refusals, the callbacks run.
 * TW__ADVANCE_EXTERN gives this file the symbols' declarations instead of
 * the inline definitions, as it gives advance.c.
 */
#define TW__ADVANCE_EXTERN 1
#include "timewheel/core.h"

#include <criterion/criterion.h>
#include <errno.h>

#include "util.h"

Test(core_advance_exported, the_twins_answer_as_the_inline_advances)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r[3];

    cr_assert_eq(tw_advance(NULL, 1), -EINVAL);
    cr_assert_eq(tw_advance_bounded(NULL, 1, 1), -EINVAL);
    cr_assert_eq(tw_advance_bounded(w, 1, 0), -EINVAL);
    for (int i = 0; i < 3; i++) {
        rec_init(&r[i], w);
        cr_assert_eq(tw_schedule(w, &r[i].t, 10 * MS), 0);
    }
    /* Idle until the timers: only the time moves. */
    cr_assert_eq(tw_advance(w, 5 * MS), 0);
    cr_assert_eq(tw_now(w), 5 * MS);
    cr_assert_eq(tw_advance_bounded(w, 6 * MS, 1), 0);
    cr_assert_eq(tw_now(w), 6 * MS);
    cr_assert_eq(tw_advance(w, 5 * MS), -ERANGE);
    /* Due: bounded runs one, the plain one the rest. */
    cr_assert_eq(tw_advance_bounded(w, 10 * MS, 1), 1);
    cr_assert_eq(tw_advance(w, 10 * MS), 2);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(r[i].fired, 1);
    wheel_ok(w);
    tw_destroy(w);
}
