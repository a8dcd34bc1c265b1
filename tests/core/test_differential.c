/*
 * Randomised differential tests: the wheel against the reference model in
 * tests/model.c, for both designs and several layouts. Together they run
 * at least 10^6 random operations per `make test` (TW_OPS changes the count
 * per test, TW_SEED the seed).
 */
#include <criterion/criterion.h>

#include "model.h"

#define OPS 180000

static void run(const char *name, struct tw_config *cfg, uint64_t max_step)
{
    struct harness h;

    harness_init(&h, name, cfg, 256, max_step);
    harness_run(&h, test_ops(OPS));
    harness_fini(&h);
}

Test(differential, hier_clock_layout)
{
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HIER);
    cfg.start_ns = 123456789;
    run("hier clock layout", &cfg, UINT64_C(40) * 24 * 3600 * 1000);
}

Test(differential, hier_pow2_layout)
{
    static const uint32_t pow2[] = {64, 64, 64, 64};
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HIER);
    cfg.slots = pow2;
    cfg.levels = 4;
    run("hier 64-slot layout", &cfg, UINT64_C(40) * 24 * 3600 * 1000);
}

Test(differential, hier_tiny_layout)
{
    static const uint32_t tiny[] = {4, 4, 4, 4};
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HIER);
    cfg.slots = tiny;
    cfg.levels = 4;
    cfg.tick_ns = 1000;
    run("hier 4x4 layout", &cfg, UINT64_C(1) << 40);
}

Test(differential, hier_odd_layout_ns_tick)
{
    static const uint32_t odd[] = {3, 7, 2, 5, 11};
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HIER);
    cfg.slots = odd;
    cfg.levels = 5;
    cfg.tick_ns = 1;
    cfg.start_ns = UINT64_C(1) << 40;
    run("hier odd layout, 1 ns tick", &cfg, UINT64_C(1) << 50);
}

Test(differential, hashed_netty_defaults)
{
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HASHED);
    cfg.start_ns = 987654321;
    run("hashed 512 slots", &cfg, 20000);
}

Test(differential, hashed_small_wheel)
{
    static const uint32_t eight[] = {5}; /* rounded up to 8 */
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HASHED);
    cfg.slots = eight;
    cfg.levels = 1;
    cfg.tick_ns = 7;
    run("hashed 8 slots", &cfg, 2000);
}
