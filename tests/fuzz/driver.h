/*
 * The fuzz driver: turns any string of bytes into a sequence of operations on
 * a wheel and checks the wheel against a reference model after every step.
 *
 * It is compiled twice: into the libFuzzer target (tests/fuzz/fuzz_wheel.c,
 * `make fuzz`) and, without libFuzzer, into the Criterion test that replays
 * the committed corpus (tests/test_fuzz_corpus.c, `make test`), so an input
 * that once failed replays exactly as it was found.
 */
#ifndef TW_FUZZ_DRIVER_H
#define TW_FUZZ_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one run did, for the replay test to assert that the corpus is not
 * trivial. */
struct fuzz_stats {
    unsigned layout; /* which layout the input chose (0..FUZZ_LAYOUTS-1) */
    bool created;    /* false when the input's custom layout was refused */
    uint64_t ops;    /* operations decoded */
    uint64_t fired;  /* callbacks run */
};

#define FUZZ_LAYOUTS 8u

/* The mode of the wheel an input builds: 0 for TW_HIER, 1 for TW_HASHED
 * (decided by its first byte), so that one fuzzing process can keep to one
 * mode without changing how any input decodes. */
int fuzz_mode_of(const uint8_t *data, size_t size);

/*
 * Run the input through a wheel and the model. Returns 0, or -1 with the
 * first broken promise written into why (when why and len are non-zero).
 * With TW_FUZZ_TRACE set in the environment, every operation is printed to
 * stderr. stats may be NULL.
 */
int fuzz_run(const uint8_t *data, size_t size, char *why, size_t len,
             struct fuzz_stats *stats);

#endif /* TW_FUZZ_DRIVER_H */
