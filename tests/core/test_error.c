/*
 * Error messages and version numbers.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "timewheel.h"

Test(core_error, every_code_has_a_message)
{
    const int codes[] = {0,       -EINVAL,    -ENOMEM,  -EBUSY, -ERANGE,
                         -EPROTO, -ESHUTDOWN, -EDEADLK, -EAGAIN};

    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        const char *msg = tw_strerror(codes[i]);

        cr_assert_not_null(msg);
        cr_assert_neq(strcmp(msg, "unknown error"), 0, "code %d", codes[i]);
    }
    cr_assert_str_eq(tw_strerror(-12345), "unknown error");
    cr_assert_str_eq(tw_strerror(7), "unknown error");
}

Test(core_error, version_matches_header)
{
    cr_assert_eq(tw_version(), TW_VERSION_HEX);
    cr_assert_str_eq(tw_version_string(), TW_VERSION_STRING);
    cr_assert_eq(TW_VERSION_HEX, (TW_VERSION_MAJOR << 16) |
                                     (TW_VERSION_MINOR << 8) |
                                     TW_VERSION_PATCH);
}
