/*
 * The random numbers behind every operation sequence: xoshiro256** seeded
 * through splitmix64, so a printed 64-bit seed reproduces every sequence on
 * every machine. Never used while timing.
 */
#ifndef BENCH_RNG_H
#define BENCH_RNG_H

#include <stdint.h>

struct rng {
    uint64_t s[4];
};

/* A generator for one sequence: the run's seed mixed with a label naming
 * the sequence (workload, variant, size), so sequences are independent. */
void rng_init(struct rng *r, uint64_t seed, const char *label, uint64_t n);
uint64_t rng_next(struct rng *r);
/* Uniform in [lo, hi]. */
uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi);
/* Uniform in (0, 1). */
double rng_unit(struct rng *r);
/* Exponential with the given mean. */
double rng_exp(struct rng *r, double mean);
/* Standard normal (Box-Muller). */
double rng_normal(struct rng *r);

#endif /* BENCH_RNG_H */
