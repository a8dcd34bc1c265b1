/*
 * The id table (lib/store/table.c) and the key codec (lib/store/key.c),
 * by themselves (suite store_table): the table against a reference model
 * under random inserts, finds and removes (fixed, printed seed), full
 * tables refused, runs that wrap around the array's end; every key and
 * mark length the codec may meet in a damaged database.
 */
#include "../../lib/store/store.h"
#include "st.h"

#define SLOTS 64 /* tw__table_init(t, 32): 64 slots, 32 entries at most */

static uint64_t seed_state = 20261128;

static uint64_t rnd(void)
{
    seed_state ^= seed_state << 13;
    seed_state ^= seed_state >> 7;
    seed_state ^= seed_state << 17;
    return seed_state;
}

Test(store_table, random_operations_against_a_model)
{
    struct tw__table t;
    struct tw__entry *model[48] = {0};

    cr_log_info("seed %llu", (unsigned long long)seed_state);
    cr_assert_eq(tw__table_init(&t, SLOTS / 2), 0);
    cr_assert_eq(t.mask + 1, SLOTS);
    for (int step = 0; step < 20000; step++) {
        size_t k = rnd() % 48;
        /* Three deadlines: many ids share a home slot's run. */
        struct tw_store_id id = {k % 3, k};

        cr_assert_eq(tw__table_find(&t, id), model[k], "step %d", step);
        if (model[k]) {
            tw__table_remove(&t, model[k]);
            tw__entry_free(model[k]);
            model[k] = NULL;
        } else {
            struct tw__entry *n = tw__entry_new(id, "p", 1);
            int rc = tw__table_insert(&t, n);

            if (t.used >= SLOTS / 2 && rc != 0) {
                cr_assert_eq(rc, -ENOSPC);
                tw__entry_free(n);
                continue;
            }
            cr_assert_eq(rc, 0, "step %d", step);
            model[k] = n;
        }
        for (size_t j = 0; j < 48; j++)
            cr_assert_eq(tw__table_find(&t, (struct tw_store_id){j % 3, j}),
                         model[j], "step %d, id %zu", step, j);
    }
    for (size_t j = 0; j < 48; j++)
        if (model[j]) {
            tw__table_remove(&t, model[j]);
            tw__entry_free(model[j]);
        }
    cr_assert_eq(t.used, 0);
    tw__table_remove(&t, &(struct tw__entry){0}); /* absent: a no-op */
    tw__table_fini(&t);
    cr_assert_null(t.slot);
}

Test(store_table, a_half_full_table_refuses_more)
{
    struct tw__table t;
    struct tw__entry *e[SLOTS / 2 + 1];

    cr_assert_eq(tw__table_init(&t, SLOTS / 2), 0);
    for (size_t i = 0; i <= SLOTS / 2; i++) {
        e[i] = tw__entry_new((struct tw_store_id){i, i}, NULL, 0);
        cr_assert_eq(tw__table_insert(&t, e[i]), i < SLOTS / 2 ? 0 : -ENOSPC);
    }
    for (size_t i = 0; i <= SLOTS / 2; i++) {
        tw__table_remove(&t, e[i]);
        tw__entry_free(e[i]);
    }
    cr_assert_eq(t.used, 0);
    tw__table_fini(&t);
}

Test(store_table, keys_and_marks_of_every_length)
{
    unsigned char k[TW__KEY_LEN + 4] = {0}, v[TW__MARK_LEN];
    struct tw_store_id id = {0x0102030405060708u, 0x1112131415161718u}, out;
    uint64_t seq, count;

    tw__key_encode(k, id);
    cr_assert_eq(tw__key_decode(k, TW__KEY_LEN, &out), 1);
    cr_assert_eq(tw__id_cmp(out, id), 0);
    for (size_t n = 1; n < sizeof k; n++)
        if (n != TW__KEY_LEN)
            cr_assert_eq(tw__key_decode(k, n, &out), -EBADMSG, "%zu", n);
    cr_assert_eq(tw__key_decode(k, 0, &out), 0, "empty: past the timers");
    cr_assert_eq(tw__key_decode("M", 1, &out), 0, "the mark");
    cr_assert_eq(tw__key_decode("U12345678123456781", 17, &out), 0);
    cr_assert_eq(tw__key_first(k), TW__KEY_MIN_LEN);
    cr_assert_eq(tw__key_decode(k, TW__KEY_MIN_LEN, &out), -EBADMSG);
    tw__mark_encode(v, 7, 9);
    cr_assert_eq(tw__mark_decode(v, sizeof v, &seq, &count), 0);
    cr_assert(seq == 7 && count == 9);
    cr_assert_eq(tw__mark_decode(v, sizeof v - 1, &seq, &count), -EBADMSG);
    cr_assert_eq(tw__mark_decode(v, sizeof v + 1, &seq, &count), -EBADMSG);
    cr_assert_lt(
        tw__id_cmp((struct tw_store_id){1, 9}, (struct tw_store_id){2, 0}), 0);
    cr_assert_gt(
        tw__id_cmp((struct tw_store_id){1, 9}, (struct tw_store_id){1, 8}), 0);
}
