/*
 * Replays every input of the fuzz corpus (tests/fuzz/corpus: the seeds, what
 * `make fuzz-merge` kept, and every input that once failed) through the same
 * driver the fuzzer runs, without libFuzzer. TW_FUZZ_CORPUS names another
 * directory; TW_FUZZ_TRACE=1 prints every step of every input.
 *
 * The driver is compiled into this file because the top Makefile builds the
 * test binary from tests/<layer>/test_*.c, tests/model.c and tests/util.c
 * only.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver.c"

#define CORPUS_DIR "tests/fuzz/corpus"
/* Largest input replayed; the fuzzer writes nothing longer (FUZZ_MAX_LEN). */
#define MAX_INPUT 65536

struct tally {
    size_t inputs;
    size_t regressions;
    uint64_t ops;
    uint64_t fired;
    unsigned layouts[FUZZ_LAYOUTS];
};

static size_t read_input(const char *path, uint8_t *buf, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    size_t n;

    cr_assert_not_null(fp, "cannot open %s", path);
    n = fread(buf, 1, cap, fp);
    cr_assert_eq(ferror(fp), 0, "cannot read %s", path);
    cr_assert(feof(fp), "%s is longer than %d bytes", path, MAX_INPUT);
    fclose(fp);
    return n;
}

static void replay(const char *dir, const char *name, struct tally *t)
{
    static uint8_t buf[MAX_INPUT];
    struct fuzz_stats st;
    char path[4096], why[512];
    size_t n;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    n = read_input(path, buf, sizeof(buf));
    cr_assert_eq(fuzz_run(buf, n, why, sizeof(why), &st), 0,
                 "%s: %s (replay with TW_FUZZ_TRACE=1 TW_FUZZ_CORPUS=...)",
                 path, why);
    t->inputs++;
    t->regressions += strncmp(name, "regress-", 8) == 0;
    t->ops += st.ops;
    t->fired += st.fired;
    if (st.created)
        t->layouts[st.layout]++;
}

Test(core_fuzz_corpus, every_input_keeps_every_promise, .timeout = 120)
{
    const char *dir = getenv("TW_FUZZ_CORPUS");
    struct tally t = {0};
    struct dirent *e;
    DIR *d;

    if (!dir)
        dir = CORPUS_DIR;
    d = opendir(dir);
    cr_assert_not_null(d,
                       "no fuzz corpus at %s (run from the top of the "
                       "tree, or set TW_FUZZ_CORPUS)",
                       dir);
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            replay(dir, e->d_name, &t);
    closedir(d);
    cr_log_info("fuzz corpus: %zu inputs (%zu regressions), %llu "
                "operations, %llu callbacks",
                t.inputs, t.regressions, (unsigned long long)t.ops,
                (unsigned long long)t.fired);
    /* A corpus that exercises nothing would pass vacuously. */
    cr_assert_geq(t.inputs, 24, "only %zu inputs", t.inputs);
    cr_assert_geq(t.fired, 1000, "only %llu callbacks ran",
                  (unsigned long long)t.fired);
    for (unsigned i = 0; i < FUZZ_LAYOUTS; i++)
        cr_assert_gt(t.layouts[i], 0, "no input builds layout %u", i);
}

/* The decoder reads past the end as zeros and stops: nothing is too short. */
Test(core_fuzz_corpus, any_bytes_are_an_input)
{
    static const uint8_t some[] = {0x03, 0x02, 0x00, 0x07, 0x04};
    struct fuzz_stats st;
    char why[512];

    cr_assert_eq(fuzz_run(NULL, 0, why, sizeof(why), &st), 0, "%s", why);
    cr_assert(st.created);
    cr_assert_eq(st.ops, 0);
    for (size_t n = 1; n <= sizeof(some); n++)
        cr_assert_eq(fuzz_run(some, n, why, sizeof(why), NULL), 0,
                     "%zu bytes: %s", n, why);
    cr_assert_eq(fuzz_mode_of(some, 1), 0);
    cr_assert_eq(fuzz_mode_of((const uint8_t *)"\x04", 1), 1);
}

/* A layout the contract refuses is refused, and that is all such an input
 * checks: a custom hashed wheel of 9 slots with a zero tick (tick kind 3:
 * any number, here the empty one). */
Test(core_fuzz_corpus, refused_layout_ends_the_input)
{
    static const uint8_t zero_tick[] = {0x07, 0x01, 0x08, 0x03,
                                        0x00, 0x00, 0x07};
    struct fuzz_stats st;
    char why[512];

    cr_assert_eq(fuzz_run(zero_tick, sizeof(zero_tick), why, sizeof(why), &st),
                 0, "%s", why);
    cr_assert_not(st.created);
    cr_assert_eq(st.ops, 0);
}
