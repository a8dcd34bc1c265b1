/*
 * The store's half of the reserved tails (tests/common/test_reserved.c):
 * tw_store_config_init() zeroes the tail, tw_store_open() refuses a
 * non-zero one with -EINVAL before it touches the directory.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <timewheel/store.h>

static void deliver(struct tw_store *s, struct tw_store_id id,
                    const void *payload, size_t len, void *arg)
{
    (void)s, (void)id, (void)payload, (void)len, (void)arg;
}

Test(store_reserved, a_store_refuses_a_tail_that_is_not_zero)
{
    struct tw_store_config c;
    struct stat st;
    int err = 0;

    memset(&c, 0xa5, sizeof(c));
    tw_store_config_init(&c);
    for (unsigned i = 0; i < TW_RESERVED_WORDS; i++)
        cr_assert_eq(c.reserved[i], 0, "word %u", i);
    c.deliver = deliver;
    c.reserved[3] = 1;
    cr_assert_null(tw_store_open("/tmp/tw-reserved-never-made", &c, &err));
    cr_assert_eq(err, -EINVAL);
    cr_assert_neq(stat("/tmp/tw-reserved-never-made", &st), 0);
}
