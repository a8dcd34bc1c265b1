/*
 * xoshiro256** (Blackman and Vigna), written from its published definition.
 */
#include <math.h>

#include "rng.h"

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

void rng_init(struct rng *r, uint64_t seed, const char *label, uint64_t n)
{
    uint64_t x = seed ^ (n * UINT64_C(0x100000001b3));

    /* FNV-1a of the label keeps sequences with different labels apart. */
    for (const char *p = label; *p; p++)
        x = (x ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi)
{
    uint64_t span = hi - lo + 1;

    /* The modulo bias is below span / 2^64: far below anything measured. */
    return span ? lo + rng_next(r) % span : rng_next(r);
}

double rng_unit(struct rng *r)
{
    return ((double)(rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

double rng_exp(struct rng *r, double mean)
{
    return -mean * log(rng_unit(r));
}

double rng_normal(struct rng *r)
{
    const double two_pi = 6.283185307179586;

    return sqrt(-2.0 * log(rng_unit(r))) * cos(two_pi * rng_unit(r));
}
