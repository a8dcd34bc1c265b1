/*
 * tw_purgatory_metrics_text() (lib/purgatory/metrics.c): the counters of a
 * workload whose answer is known, read back from the Prometheus text, and
 * snprintf()'s contract on a short buffer.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "preq.h"
#include "util.h"

/* The value of the sample named name (a whole line "name value"). */
static uint64_t sample(const char *text, const char *name)
{
    size_t n = strlen(name);

    for (const char *l = text; l && *l;
         l = strchr(l, '\n'), l = l ? l + 1 : l) {
        uint64_t v;

        if (!strncmp(l, name, n) && l[n] == ' ' &&
            sscanf(l + n + 1, "%" SCNu64, &v) == 1)
            return v;
    }
    cr_assert_fail("no sample %s in:\n%s", name, text);
    return 0;
}

#define N 10

Test(purgatory_metrics, counts_of_a_known_workload)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw_purgatory *p = purgatory_on_wheel(w);
    struct preq r[N];
    struct tw_key a = pkey("a"), b = pkey("b");
    char text[4096];
    int len;

    /* 10 watched on two keys; 3 of key a completed, 2 of key b expired. */
    for (int i = 0; i < N; i++) {
        preq_init(&r[i], p);
        cr_assert_eq(
            tw_purgatory_watch(p, &r[i].op, i < 5 ? &a : &b, 1,
                               i < 5 ? 3600 * SEC : (i < 7 ? MS : 3600 * SEC)),
            0);
    }
    for (int i = 0; i < 3; i++)
        atomic_store(&r[i].ready, true);
    cr_assert_eq(tw_purgatory_check(p, "a", 1), 3);
    tw_advance(w, tw_now(w) + 2 * MS);
    len = tw_purgatory_metrics_text(p, text, sizeof(text));
    cr_assert(len > 0 && (size_t)len < sizeof(text), "len %d", len);
    cr_assert_eq(strlen(text), (size_t)len);
    cr_assert_eq(sample(text, "tw_purgatory_watched_total"), N);
    cr_assert_eq(sample(text, "tw_purgatory_completed_total"), 3);
    cr_assert_eq(sample(text, "tw_purgatory_expired_total"), 2);
    cr_assert_eq(sample(text, "tw_purgatory_delayed"), N - 3 - 2);
    cr_assert_eq(sample(text, "tw_purgatory_keys"), 2);
    cr_assert_eq(sample(text, "tw_purgatory_cancelled_total"), 0);
    cr_assert(strstr(text, "# TYPE tw_purgatory_delayed gauge\n"));
    cr_assert(strstr(text, "# TYPE tw_purgatory_expired_total counter\n"));
    cr_assert_eq(tw_purgatory_stop(p, preq_handback, NULL), N - 5);
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    tw_destroy(w);
}

Test(purgatory_metrics, snprintf_contract_and_bad_input)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw_purgatory *p = purgatory_on_wheel(w);
    char whole[4096], part[16];
    int len = tw_purgatory_metrics_text(p, NULL, 0);

    cr_assert_gt(len, 0);
    cr_assert_eq(tw_purgatory_metrics_text(p, whole, sizeof(whole)), len);
    memset(part, 'x', sizeof(part));
    cr_assert_eq(tw_purgatory_metrics_text(p, part, sizeof(part)), len);
    cr_assert_eq(part[sizeof(part) - 1], '\0');
    cr_assert(!strncmp(part, whole, sizeof(part) - 1));
    cr_assert_eq(tw_purgatory_metrics_text(NULL, whole, sizeof(whole)),
                 -EINVAL);
    cr_assert_eq(tw_purgatory_metrics_text(p, NULL, 8), -EINVAL);
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    tw_destroy(w);
}
