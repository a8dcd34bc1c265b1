/*
 * The store's answer to bad input (suite store_badinput): each function
 * with NULLs, out-of-range values and calls from the wrong thread returns
 * its documented negative errno and changes nothing; the store works after.
 */
#include "st.h"

ST_FIXTURE(store_badinput, 60, (void)0);

Test(store_badinput, open_with_a_bad_config)
{
    struct tw_store_config cfg;
    int err = 0;

    tw_store_config_init(NULL); /* a no-op */
    cr_assert_null(tw_store_open(dir, NULL, &err));
    cr_assert_eq(err, -EINVAL);
    tw_store_config_init(&cfg);
    err = 0;
    cr_assert_null(tw_store_open(dir, &cfg, &err)); /* no deliver */
    cr_assert_eq(err, -EINVAL);
    cfg.deliver = st_deliver;
    cr_assert_null(tw_store_open(NULL, &cfg, NULL)); /* err may be NULL */
    for (int field = 0; field < 5; field++) {
        struct tw_store_config c = cfg;

        if (field == 0)
            c.commit_ns = 0;
        if (field == 1)
            c.commit_ops = 0;
        if (field == 2)
            c.window_ns = 0;
        if (field == 3)
            c.window_max = 15;
        if (field == 4)
            c.queue_max = 0;
        err = 0;
        cr_assert_null(tw_store_open(dir, &c, &err), "field %d", field);
        cr_assert_eq(err, -EINVAL, "field %d", field);
    }
    cfg.deliver_rate = 0; /* unbounded: allowed */
    cfg.deliver_arg = &rec;
    cr_assert_eq(tw_store_close(tw_store_open(dir, &cfg, &err)), 0);
    cr_assert_eq(err, 0);
}

Test(store_badinput, operations_on_null_and_bad_payloads)
{
    struct tw_store *s = st_open(dir, &rec);
    struct tw_store_id id = {1, 1};
    char big[TW_STORE_PAYLOAD_MAX + 1] = {0};

    cr_assert_eq(tw_store_schedule_at(NULL, 1, "x", 1, NULL, NULL, &id),
                 -EINVAL);
    cr_assert_eq(id.seq, 1, "the id was written on failure");
    cr_assert_eq(tw_store_schedule_at(s, 1, NULL, 1, NULL, NULL, NULL),
                 -EINVAL);
    cr_assert_eq(tw_store_schedule_at(s, 1, big, sizeof big, NULL, NULL, NULL),
                 -EINVAL);
    cr_assert_eq(tw_store_schedule_after(NULL, 1, "", 0, NULL, NULL, NULL),
                 -EINVAL);
    cr_assert_eq(tw_store_cancel(NULL, id, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_store_ack(NULL, id, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_store_sync(NULL), -EINVAL);
    cr_assert_eq(tw_store_schedule_durable(NULL, 1, "", 0, NULL), -EINVAL);
    cr_assert_eq(tw_store_close(NULL), 0);
    cr_assert_eq(tw_store_count(NULL), 0);
    cr_assert_eq(tw_store_scan(NULL, st_count_visit, NULL), -EINVAL);
    cr_assert_eq(tw_store_scan(dir, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_store_count(s), 0, "a refused schedule was counted");
    /* The limit itself, a NULL payload of length 0, a deadline far out. */
    cr_assert_eq(tw_store_schedule_at(s, UINT64_MAX, big, TW_STORE_PAYLOAD_MAX,
                                      NULL, NULL, NULL),
                 0);
    cr_assert_eq(
        tw_store_schedule_after(s, UINT64_MAX, NULL, 0, NULL, NULL, &id), 0);
    cr_assert_eq(id.deadline_ns, UINT64_MAX, "the delay did not saturate");
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(tw_store_count(s), 2);
    cr_assert_eq(tw_store_close(s), 0);
}

struct in_callback {
    int sync, durable, close;
    size_t calls;
};

static void calls_from_callback(struct tw_store *s, struct tw_store_id id,
                                const void *p, size_t len, void *arg)
{
    struct in_callback *c = arg;

    (void)p;
    (void)len;
    if (c->calls++ == 0) {
        c->sync = tw_store_sync(s);
        c->durable = tw_store_schedule_durable(s, 1, "", 0, NULL);
        c->close = tw_store_close(s);
    }
    tw_store_ack(s, id, NULL, NULL);
}

Test(store_badinput, blocking_calls_from_a_callback_are_edeadlk)
{
    struct tw_store_config cfg;
    struct in_callback c = {0};
    struct tw_store *s;
    int err;

    tw_store_config_init(&cfg);
    cfg.deliver = calls_from_callback;
    cfg.deliver_arg = &c;
    s = tw_store_open(dir, &cfg, &err);
    cr_assert_not_null(s);
    cr_assert_eq(tw_store_schedule_durable(s, 1, "", 0, NULL), 0);
    for (int i = 0; i < 500 && tw_store_count(s) > 0; i++)
        st_sleep_ms(10);
    cr_assert_eq(tw_store_close(s), 0);
    cr_assert_eq(c.sync, -EDEADLK);
    cr_assert_eq(c.durable, -EDEADLK);
    cr_assert_eq(c.close, -EDEADLK);
}

static struct tw_store *closing_store;
static int late_rc = 1;

/* A done callback that runs while the store closes: new work is refused. */
static void schedule_while_closing(struct tw_store_id id, int err, void *arg)
{
    (void)id;
    (void)err;
    (void)arg;
    late_rc = tw_store_schedule_at(closing_store, 1, "", 0, NULL, NULL, NULL);
}

Test(store_badinput, operations_while_closing_are_eshutdown)
{
    struct tw_store_config cfg;

    tw_store_config_init(&cfg);
    cfg.commit_ns = 5000 * ST_MS; /* the close commits it */
    closing_store = st_open_cfg(dir, &rec, &cfg);
    cr_assert_eq(tw_store_schedule_at(closing_store, UINT64_MAX, "", 0,
                                      schedule_while_closing, NULL, NULL),
                 0);
    cr_assert_eq(tw_store_close(closing_store), 0);
    cr_assert_eq(late_rc, -ESHUTDOWN);
    cr_assert_eq(tw_store_scan(dir, st_count_visit, &(int64_t){0}), 1);
}

/* A NULL directory with a good config and an err to fill: -EINVAL. An open
 * that fails past the config (a foreign directory) with err NULL: NULL,
 * nothing else. A scan of a path that does not exist: -ENOENT. */
Test(store_badinput, open_and_scan_of_no_directory)
{
    struct tw_store_config cfg;
    char path[128];
    FILE *f;
    int err = 0;

    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    cr_assert_null(tw_store_open(NULL, &cfg, &err));
    cr_assert_eq(err, -EINVAL);
    snprintf(path, sizeof path, "%s/mine", dir);
    cr_assert_not_null(f = fopen(path, "w"));
    fclose(f);
    cr_assert_null(tw_store_open(dir, &cfg, NULL));
    cr_assert_eq(
        tw_store_scan("/nonexistent-twstore", st_count_visit, &(int64_t){0}),
        -ENOENT);
}
