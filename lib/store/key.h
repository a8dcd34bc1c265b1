/*
 * key.h: the store's records on disk, one codec (key.c). Private header of
 * lib/store/; every file that reads or writes a key or the mark goes
 * through it, and nothing else knows the layout.
 *
 * RocksDB's default column family, keys compared as bytes, so that keys
 * sort as time does:
 *   'T' deadline(8, big-endian) seq(8, big-endian) -> payload bytes
 *   'M'                   -> next seq, timers held (8 + 8, big-endian)
 *   'R'                   -> a replica's place: set, epoch, LSN, watermark
 *                            (8 each, big-endian), role ('L' or 'F');
 *                            only in a replicated store (repl.h)
 * 'M' and 'R' sort before 'T', and nothing sorts after the timers. A
 * store without 'R' is read as before it existed. The marker
 * file of the directory (dir.c) names TW__FORMAT, the version of this
 * layout: a change here is a new version.
 */
#ifndef TW_STORE_KEY_H
#define TW_STORE_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timewheel/store.h"

#define TW__FORMAT 1      /* the layout's version, in dir/STORE */
#define TW__KEY_LEN 17    /* 'T', deadline, seq */
#define TW__KEY_MIN_LEN 1 /* tw__key_first(): 'T' alone, below every timer */
#define TW__MARK_LEN 16   /* the 'M' record's value */

extern const char tw__mark_key[1]; /* "M", TW__MARK_KEY_LEN bytes */
#define TW__MARK_KEY_LEN 1

static inline void tw__put_be64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static inline uint64_t tw__get_be64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* The order of ids is the order of their keys. */
static inline int tw__id_cmp(struct tw_store_id a, struct tw_store_id b)
{
    if (a.deadline_ns != b.deadline_ns)
        return a.deadline_ns < b.deadline_ns ? -1 : 1;
    return a.seq < b.seq ? -1 : a.seq > b.seq;
}

/* id's key into k. */
void tw__key_encode(unsigned char k[TW__KEY_LEN], struct tw_store_id id);
/* The smallest key of the timers' range into k; returns its length. */
size_t tw__key_first(unsigned char k[TW__KEY_MIN_LEN]);
/* A key read from the database: 1 and *id for a timer's key, 0 for a key
 * past the timers' range (none is written today), -EBADMSG for a key in
 * the range that is not TW__KEY_LEN long (damage). Reads at most kl
 * bytes of k. */
int tw__key_decode(const void *k, size_t kl, struct tw_store_id *id);

/* The 'M' record's value. */
void tw__mark_encode(unsigned char v[TW__MARK_LEN], uint64_t next_seq,
                     uint64_t count);
/* 0 and the fields, or -EBADMSG when vl is not TW__MARK_LEN. */
int tw__mark_decode(const void *v, size_t vl, uint64_t *next_seq,
                    uint64_t *count);

/* The 'R' record of a replica (repl.h). */
extern const char tw__repl_key[1]; /* "R", TW__REPL_KEY_LEN bytes */
#define TW__REPL_KEY_LEN 1
#define TW__REPL_LEN 33

struct tw__repl_rec {
    uint64_t set, epoch, lsn, watermark;
    bool leader;
};

void tw__repl_encode(const struct tw__repl_rec *r,
                     unsigned char v[TW__REPL_LEN]);
/* 0 and *r, or -EBADMSG for a value of another length or role. */
int tw__repl_decode(const void *v, size_t vl, struct tw__repl_rec *r);

#endif /* TW_STORE_KEY_H */
