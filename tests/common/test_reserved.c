/*
 * The reserved tails (lib/common/reserved.h, TW_RESERVED_WORDS in
 * timewheel/core.h): every init function zeroes the tail, every function
 * that reads a config refuses a non-zero one with -EINVAL (a field of a
 * later version must never be silently ignored), and the service's stats
 * come back with a zero tail. The store's half is tests/store/test_reserved.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <timewheel.h>

static bool zero(const uint64_t *r)
{
    for (unsigned i = 0; i < TW_RESERVED_WORDS; i++)
        if (r[i])
            return false;
    return true;
}

Test(common_reserved, the_init_functions_zero_the_tail)
{
    struct tw_config c;
    struct tw_service_config s;
    struct tw_purgatory_config p;

    memset(&c, 0xa5, sizeof(c));
    memset(&s, 0xa5, sizeof(s));
    memset(&p, 0xa5, sizeof(p));
    tw_config_init(&c, TW_HIER);
    tw_service_config_init(&s, TW_HIER);
    tw_purgatory_config_init(&p);
    cr_assert(zero(c.reserved));
    cr_assert(zero(s.reserved));
    cr_assert(zero(p.reserved));
}

Test(common_reserved, a_wheel_refuses_a_tail_that_is_not_zero)
{
    for (unsigned i = 0; i < TW_RESERVED_WORDS; i++) {
        struct tw_config c;
        int err = 0;

        tw_config_init(&c, i % 2 ? TW_HASHED : TW_HIER);
        c.reserved[i] = 1;
        cr_assert_null(tw_create(&c, &err), "word %u", i);
        cr_assert_eq(err, -EINVAL);
    }
}

Test(common_reserved, a_service_refuses_a_tail_that_is_not_zero)
{
    struct tw_service_config c;
    int err = 0;

    tw_service_config_init(&c, TW_HIER);
    c.reserved[TW_RESERVED_WORDS - 1] = UINT64_C(1) << 63;
    cr_assert_null(tw_service_create(&c, &err));
    cr_assert_eq(err, -EINVAL);
}

Test(common_reserved, a_purgatory_refuses_a_tail_that_is_not_zero)
{
    struct tw_service_config sc;
    struct tw_purgatory_config c;
    struct tw_service *s;
    int err = 0;

    tw_service_config_init(&sc, TW_HIER);
    s = tw_service_create(&sc, NULL);
    cr_assert_not_null(s);
    tw_purgatory_config_init(&c);
    c.service = s;
    c.reserved[0] = 7;
    cr_assert_null(tw_purgatory_create(&c, &err));
    cr_assert_eq(err, -EINVAL);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(common_reserved, the_service_stats_come_back_with_a_zero_tail)
{
    struct tw_service_config sc;
    struct tw_service_stats st;
    struct tw_service *s;

    tw_service_config_init(&sc, TW_HIER);
    s = tw_service_create(&sc, NULL);
    cr_assert_not_null(s);
    memset(&st, 0xa5, sizeof(st));
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert(zero(st.reserved));
    cr_assert_eq(tw_service_destroy(s), 0);
}
