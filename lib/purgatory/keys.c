/*
 * The keys: byte strings hashed into shards, each shard a lock and a
 * chained hash table of key nodes, each key node the head of the watch list
 * of the operations watched on it.
 *
 * A key node exists exactly while the key has a watcher: it is created by
 * the first watch on the key and freed when its last watcher is unlinked
 * (completed, expired or handed back), so completed operations never pile
 * up in the lists, and neither do the keys of finished ones. The table
 * doubles when it holds more keys than buckets and halves when it holds
 * fewer than a quarter (never below SHARD_MIN_BUCKETS), so its memory
 * follows the number of live keys. A failed resize keeps the old table,
 * which stays correct, only with longer chains.
 *
 * The shard of a key comes from the high half of its hash, the bucket from
 * the low bits, so the two choices do not correlate.
 */
#include <errno.h>
#include <string.h>

#include "dlist.h"
#include "purgatory.h"

/* The smallest table: a key node per bucket costs little at this size. */
#define SHARD_MIN_BUCKETS 8u

static uint64_t mix(uint64_t h)
{
    /* The finaliser of MurmurHash3: every input bit reaches every output
     * bit. */
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

uint64_t tw__p_hash(const void *bytes, size_t len)
{
    const unsigned char *b = bytes;
    uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)len;
    uint64_t v;

    for (; len >= 8; b += 8, len -= 8) {
        memcpy(&v, b, 8);
        h = (h ^ mix(v)) * UINT64_C(0x100000001b3);
    }
    v = 0;
    memcpy(&v, b, len);
    return mix(h ^ v);
}

struct tw__pshard *tw__p_shard(struct tw_purgatory *p, uint64_t hash)
{
    return &p->shards[(hash >> 32) & (p->nshards - 1)];
}

/* Over a core wheel every call comes from the one thread that drives the
 * wheel (the contract of that mode), so the locks would only cost. */
void tw__p_lock(struct tw__pshard *sh)
{
    if (sh->locking)
        pthread_mutex_lock(&sh->lock);
}

void tw__p_unlock(struct tw__pshard *sh)
{
    if (sh->locking)
        pthread_mutex_unlock(&sh->lock);
}

int tw__p_shard_init(struct tw__pshard *sh, bool locking)
{
    size_t size = SHARD_MIN_BUCKETS * sizeof(*sh->buckets);

    sh->buckets = tw_alloc(size);
    if (!sh->buckets)
        return -ENOMEM;
    memset(sh->buckets, 0, size);
    sh->nbuckets = SHARD_MIN_BUCKETS;
    sh->nkeys = 0;
    sh->locking = locking;
    if (pthread_mutex_init(&sh->lock, NULL) != 0) {
        tw_free(sh->buckets, size);
        return -ENOMEM;
    }
    return 0;
}

/* Called once every key has gone (stop detaches every watcher first). */
void tw__p_shard_fini(struct tw__pshard *sh)
{
    pthread_mutex_destroy(&sh->lock);
    tw_free(sh->buckets, sh->nbuckets * sizeof(*sh->buckets));
    sh->buckets = NULL;
}

/* Move every key into a table of n buckets; on failure keep the old one. */
static void resize(struct tw__pshard *sh, size_t n)
{
    struct tw__pkey **nb = tw_alloc(n * sizeof(*nb));

    if (!nb)
        return;
    memset(nb, 0, n * sizeof(*nb));
    for (size_t i = 0; i < sh->nbuckets; i++) {
        struct tw__pkey *k = sh->buckets[i], *next;

        for (; k; k = next) {
            next = k->chain;
            k->chain = nb[k->hash & (n - 1)];
            nb[k->hash & (n - 1)] = k;
        }
    }
    tw_free(sh->buckets, sh->nbuckets * sizeof(*sh->buckets));
    sh->buckets = nb;
    sh->nbuckets = n;
}

struct tw__pkey *tw__p_key_find(struct tw__pshard *sh, uint64_t hash,
                                const void *bytes, size_t len)
{
    struct tw__pkey *k = sh->buckets[hash & (sh->nbuckets - 1)];

    for (; k; k = k->chain)
        if (k->hash == hash && k->len == len &&
            memcmp(k->bytes, bytes, len) == 0)
            return k;
    return NULL;
}

static struct tw__pkey *key_new(struct tw__pshard *sh, uint64_t hash,
                                const struct tw_key *key)
{
    struct tw__pkey *k = tw_alloc(sizeof(*k) + key->len);
    size_t b;

    if (!k)
        return NULL;
    k->hash = hash;
    k->len = key->len;
    k->nwatchers = 0;
    tw__list_init(&k->watchers);
    memcpy(k->bytes, key->bytes, key->len);
    b = hash & (sh->nbuckets - 1);
    k->chain = sh->buckets[b];
    sh->buckets[b] = k;
    if (++sh->nkeys > sh->nbuckets)
        resize(sh, 2 * sh->nbuckets);
    return k;
}

int tw__p_key_link(struct tw__pshard *sh, struct tw__pentry *e, uint64_t hash,
                   const struct tw_key *key)
{
    struct tw__pkey *k = tw__p_key_find(sh, hash, key->bytes, key->len);

    if (!k && !(k = key_new(sh, hash, key)))
        return -ENOMEM;
    e->key = k;
    /* At the tail: a check tries the oldest watchers first. */
    tw__list_push_back(&k->watchers, &e->link);
    k->nwatchers++;
    return 0;
}

static void key_free(struct tw__pshard *sh, struct tw__pkey *k)
{
    struct tw__pkey **pp = &sh->buckets[k->hash & (sh->nbuckets - 1)];

    while (*pp != k)
        pp = &(*pp)->chain;
    *pp = k->chain;
    tw_free(k, sizeof(*k) + k->len);
    if (--sh->nkeys < sh->nbuckets / 4 && sh->nbuckets > SHARD_MIN_BUCKETS)
        resize(sh, sh->nbuckets / 2);
}

void tw__p_key_unlink(struct tw__pshard *sh, struct tw__pentry *e)
{
    struct tw__pkey *k = e->key;

    tw__list_unlink(&e->link);
    if (--k->nwatchers == 0)
        key_free(sh, k);
}
