/*
 * table.c: every timer in memory, found by id. Open addressing with linear
 * probing over a power-of-two array of entry pointers, at most half full
 * (so a probe is short), sized once at open for window_max timers plus a
 * batch: it never grows, which keeps the window's memory bound a bound.
 * Removal shifts the following run back (no tombstones), so lookups stay
 * short however many timers pass through.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

static size_t hash_id(struct tw_store_id id)
{
    uint64_t h = id.deadline_ns * UINT64_C(0x9e3779b97f4a7c15) ^ id.seq;

    h ^= h >> 29;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    return (size_t)(h ^ h >> 32);
}

int tw__table_init(struct tw__table *t, size_t max)
{
    size_t cap = 16;

    while (cap < 2 * max)
        cap <<= 1;
    t->slot = tw__zalloc(cap * sizeof *t->slot);
    if (!t->slot)
        return -ENOMEM;
    t->mask = cap - 1;
    t->used = 0;
    return 0;
}

void tw__table_fini(struct tw__table *t)
{
    if (t->slot)
        tw_free(t->slot, (t->mask + 1) * sizeof *t->slot);
    t->slot = NULL;
}

static bool same(struct tw_store_id a, struct tw_store_id b)
{
    return a.deadline_ns == b.deadline_ns && a.seq == b.seq;
}

struct tw__entry *tw__table_find(const struct tw__table *t,
                                 struct tw_store_id id)
{
    for (size_t i = hash_id(id) & t->mask;; i = (i + 1) & t->mask) {
        struct tw__entry *e = t->slot[i];

        if (!e || same(e->id, id))
            return e;
    }
}

/* -ENOSPC when the table is half full: the caller keeps it below that. */
int tw__table_insert(struct tw__table *t, struct tw__entry *e)
{
    size_t i = hash_id(e->id) & t->mask;

    if (t->used >= (t->mask + 1) / 2)
        return -ENOSPC;
    while (t->slot[i])
        i = (i + 1) & t->mask;
    t->slot[i] = e;
    t->used++;
    return 0;
}

void tw__table_remove(struct tw__table *t, struct tw__entry *e)
{
    size_t i = hash_id(e->id) & t->mask, j;

    while (t->slot[i] != e) {
        if (!t->slot[i])
            return; /* not here */
        i = (i + 1) & t->mask;
    }
    /* Backward shift: move up each later entry of the run whose home is
     * not between the hole and itself. */
    for (j = i;;) {
        size_t home;

        t->slot[i] = NULL;
        do {
            j = (j + 1) & t->mask;
            if (!t->slot[j]) {
                t->used--;
                return;
            }
            home = hash_id(t->slot[j]->id) & t->mask;
        } while (i <= j ? (i < home && home <= j) : (i < home || home <= j));
        t->slot[i] = t->slot[j];
        i = j;
    }
}

struct tw__entry *tw__entry_new(struct tw_store_id id, const void *payload,
                                size_t len)
{
    struct tw__entry *e = tw_alloc(sizeof *e + len);

    if (!e)
        return NULL;
    memset(e, 0, sizeof *e);
    e->id = id;
    e->len = (uint16_t)len;
    if (len)
        memcpy(e->payload, payload, len);
    return e;
}

void tw__entry_free(struct tw__entry *e)
{
    if (e)
        tw_free(e, sizeof *e + e->len);
}
