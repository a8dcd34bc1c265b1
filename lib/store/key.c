/*
 * key.c: the one codec of the store's records (key.h has the layout).
 * Decoding checks the length before it reads: a key from a damaged
 * database may be of any length.
 */
#include <errno.h>

#include "key.h"

#define KEY_TIMER 'T'

const char tw__mark_key[TW__MARK_KEY_LEN] = {'M'};

void tw__key_encode(unsigned char k[TW__KEY_LEN], struct tw_store_id id)
{
    k[0] = KEY_TIMER;
    tw__put_be64(k + 1, id.deadline_ns);
    tw__put_be64(k + 9, id.seq);
}

size_t tw__key_first(unsigned char k[TW__KEY_MIN_LEN])
{
    k[0] = KEY_TIMER;
    return TW__KEY_MIN_LEN;
}

int tw__key_decode(const void *k, size_t kl, struct tw_store_id *id)
{
    const unsigned char *p = k;

    if (kl == 0 || p[0] != KEY_TIMER)
        return 0;
    if (kl != TW__KEY_LEN)
        return -EBADMSG;
    id->deadline_ns = tw__get_be64(p + 1);
    id->seq = tw__get_be64(p + 9);
    return 1;
}

void tw__mark_encode(unsigned char v[TW__MARK_LEN], uint64_t next_seq,
                     uint64_t count)
{
    tw__put_be64(v, next_seq);
    tw__put_be64(v + 8, count);
}

int tw__mark_decode(const void *v, size_t vl, uint64_t *next_seq,
                    uint64_t *count)
{
    if (vl != TW__MARK_LEN)
        return -EBADMSG;
    *next_seq = tw__get_be64(v);
    *count = tw__get_be64((const unsigned char *)v + 8);
    return 0;
}

const char tw__repl_key[TW__REPL_KEY_LEN] = {'R'};

void tw__repl_encode(const struct tw__repl_rec *r,
                     unsigned char v[TW__REPL_LEN])
{
    tw__put_be64(v, r->set);
    tw__put_be64(v + 8, r->epoch);
    tw__put_be64(v + 16, r->lsn);
    tw__put_be64(v + 24, r->watermark);
    v[32] = r->leader ? 'L' : 'F';
}

int tw__repl_decode(const void *v, size_t vl, struct tw__repl_rec *r)
{
    const unsigned char *p = v;

    if (vl != TW__REPL_LEN || (p[32] != 'L' && p[32] != 'F'))
        return -EBADMSG;
    r->set = tw__get_be64(p);
    r->epoch = tw__get_be64(p + 8);
    r->lsn = tw__get_be64(p + 16);
    r->watermark = tw__get_be64(p + 24);
    r->leader = p[32] == 'L';
    return 0;
}
