/*
 * The Prometheus text writer of every layer's metrics (lib/common/
 * promtext.h, suite common_promtext), on its own: samples with and without
 * labels, seconds written exactly, snprintf()'s contract when the buffer is
 * short or absent, and the length past INT_MAX refused. The layers' texts
 * are checked by their own metrics tests; no layer passes labels today, so
 * this is where those are checked.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "promtext.h"

Test(common_promtext, samples_with_and_without_labels)
{
    char buf[256];
    struct tw__prom p;

    tw__prom_init(&p, buf, sizeof buf);
    tw__prom_u64(&p, "a", "k=\"v\"", 5);
    tw__prom_u64(&p, "b", "", 6);
    tw__prom_u64(&p, "c", NULL, 7);
    tw__prom_seconds(&p, "d", "k=\"v\"", UINT64_C(1500000000));
    tw__prom_seconds(&p, "e", "", 1);
    tw__prom_seconds(&p, "f", NULL, UINT64_C(12000000000));
    cr_assert_str_eq(buf, "a{k=\"v\"} 5\nb 6\nc 7\nd{k=\"v\"} 1.500000000\n"
                          "e 0.000000001\nf 12.000000000\n");
    cr_assert_eq(tw__prom_end(&p), (int)strlen(buf));
}

/* A short buffer: never written past, NUL-terminated, the whole length
 * counted; no buffer at all: only counted. Text of length 0 adds nothing. */
Test(common_promtext, short_or_absent_buffer_counts_the_whole_text)
{
    char buf[8];
    struct tw__prom p;

    memset(buf, 'x', sizeof buf);
    tw__prom_init(&p, buf, 5);
    tw__prom_u64(&p, "name", "k=\"v\"", 12345);
    cr_assert_eq(tw__prom_end(&p), (int)strlen("name{k=\"v\"} 12345\n"));
    cr_assert_str_eq(buf, "name");
    cr_assert_eq(buf[5], 'x', "written past the buffer");
    tw__prom_init(&p, NULL, 100);
    tw__prom_seconds(&p, "s", "a=\"b\"", 2);
    tw__prom_printf(&p, "%s", "");
    cr_assert_eq(tw__prom_end(&p), (int)strlen("s{a=\"b\"} 0.000000002\n"));
}

/* A text longer than an int can count: -EOVERFLOW, as snprintf()'s own
 * EOVERFLOW. */
Test(common_promtext, a_length_past_int_max_is_eoverflow)
{
    struct tw__prom p;

    tw__prom_init(&p, NULL, 0);
    p.len = (size_t)INT_MAX + 1;
    cr_assert_eq(tw__prom_end(&p), -EOVERFLOW);
    p.len = INT_MAX;
    cr_assert_eq(tw__prom_end(&p), INT_MAX);
}
