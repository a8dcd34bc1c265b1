/*
 * The reference model's arithmetic (see model.h): 128-bit, from the
 * contract, sharing nothing with lib/.
 */
#include <errno.h>

#include "model.h"

__extension__ typedef unsigned __int128 u128;

static const uint32_t pow2[] = {64, 64, 64, 64}, tiny[] = {4, 4, 4, 4},
                      odd[] = {3, 7, 2, 5, 11}, five[] = {5};

const struct model_layout model_layouts[MODEL_LAYOUTS] = {
    {"hier clock layout", TW_HIER, NULL, 0, TW_DEFAULT_TICK_NS},
    {"hier 64-slot layout", TW_HIER, pow2, 4, TW_DEFAULT_TICK_NS},
    {"hier 4x4 layout", TW_HIER, tiny, 4, 1000},
    {"hier odd layout, 1 ns tick", TW_HIER, odd, 5, 1},
    {"hashed 512 slots", TW_HASHED, NULL, 0, TW_DEFAULT_TICK_NS},
    {"hashed 8 slots", TW_HASHED, five, 1, 7},
};

struct tw_config model_config(enum tw_mode mode, const uint32_t *slots,
                              unsigned levels, uint64_t tick_ns)
{
    struct tw_config cfg;

    tw_config_init(&cfg, mode);
    if (slots) {
        cfg.slots = slots;
        cfg.levels = levels;
    }
    cfg.tick_ns = tick_ns;
    return cfg;
}

int model_expect(const struct model_state *m, bool rearm)
{
    if (rearm)
        return m->pending;
    return m->pending ? -EBUSY : 0;
}

size_t model_scheduled(struct model_state *m, const struct tw_config *cfg,
                       uint64_t deadline, long call)
{
    size_t added = !m->pending;

    m->pending = true;
    m->deadline = deadline;
    m->due = model_due(cfg, deadline);
    m->sched_call = call;
    return added;
}

int model_cancelled(struct model_state *m)
{
    int was = m->pending;

    m->pending = false;
    return was;
}

uint64_t model_due(const struct tw_config *cfg, uint64_t deadline)
{
    if (deadline <= cfg->start_ns)
        return 0;
    u128 span = (u128)deadline - cfg->start_ns;
    return (uint64_t)((span + cfg->tick_ns - 1) / cfg->tick_ns);
}

uint64_t model_target(const struct tw_config *cfg, uint64_t now)
{
    if (now == UINT64_MAX)
        return model_due(cfg, UINT64_MAX);
    if (now <= cfg->start_ns)
        return 0;
    return (now - cfg->start_ns) / cfg->tick_ns;
}

uint64_t model_boundary(const struct tw_config *cfg, uint64_t tick)
{
    u128 at = (u128)cfg->start_ns + (u128)tick * cfg->tick_ns;

    return at > UINT64_MAX ? UINT64_MAX : (uint64_t)at;
}

/* Netty's rule: the slot count is rounded up to a power of two, and a whole
 * revolution must fit a signed 64-bit count of ns. */
static int hashed_valid(const struct tw_config *cfg, uint32_t slots)
{
    u128 rounded = 1;

    while (rounded < slots)
        rounded <<= 1;
    return (u128)cfg->tick_ns * rounded <= INT64_MAX;
}

/* Each level's slot is width ticks wide, width the product of the slot
 * counts below it; it must fit 64-bit ns. */
static int hier_valid(const struct tw_config *cfg, const uint32_t *slots,
                      unsigned levels)
{
    u128 width = 1;
    int verdict = 1;

    for (unsigned k = 0; k < levels; k++) {
        u128 ns = width * cfg->tick_ns;

        if (width > UINT64_MAX || ns > UINT64_MAX)
            return 0;
        if (ns == UINT64_MAX)
            verdict = -1;
        width *= slots[k];
    }
    return verdict;
}

int model_config_valid(const struct tw_config *cfg)
{
    static const uint32_t clock[] = {1000, 60, 60, 24};

    if (cfg->tick_ns == 0)
        return 0;
    if (cfg->mode == TW_HASHED)
        return hashed_valid(cfg, cfg->slots ? cfg->slots[0]
                                            : TW_DEFAULT_HASHED_SLOTS);
    if (!cfg->slots)
        return hier_valid(cfg, clock, 4);
    return hier_valid(cfg, cfg->slots, cfg->levels);
}
