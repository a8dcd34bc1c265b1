/*
 * The libFuzzer target: every input goes through the driver, which checks
 * the wheel against the reference model; a broken promise aborts, so that
 * libFuzzer saves the input (docs/testing.md says what to do with it).
 *
 * TW_FUZZ_MODE=hier or hashed keeps a process to the inputs of one mode
 * (the others are rejected, not decoded differently), so that `make fuzz`
 * can give each mode a core of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int only_mode = -1; /* -1: both */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *mode = getenv("TW_FUZZ_MODE");

    (void)argc;
    (void)argv;
    if (mode && strcmp(mode, "hier") == 0)
        only_mode = 0;
    else if (mode && strcmp(mode, "hashed") == 0)
        only_mode = 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[512];

    if (only_mode >= 0 && fuzz_mode_of(data, size) != only_mode)
        return -1; /* not for this process: keep it out of its corpus */
    if (fuzz_run(data, size, why, sizeof(why), NULL)) {
        fprintf(stderr,
                "timewheel fuzz: %s\n"
                "replay with TW_FUZZ_TRACE=1 to see every step\n",
                why);
        abort();
    }
    return 0;
}
