/*
 * Not a test: lets Criterion start under ThreadSanitizer, so that
 * `make test SAN=thread` can run the whole suite (not only the service's).
 * It lives here because the service needed it first; it belongs to the test
 * harness and can move to any file linked into the test binary.
 *
 * The problem (Criterion issue #274). Criterion's sandbox, BoxFort, maps a
 * shared "inheritable arena" for every test at a random fixed address in
 * [0x2000'0000'0000, 0x7f00'0000'0000): it asks mincore() whether the pages
 * are free, then maps them with MAP_FIXED. TSan reserves almost all of that
 * window for its shadow and metadata and refuses application mappings there,
 * so only about 1 pick in 40 lands where TSan allows it, and the run aborts
 * with "Could not initialize inheritable arena".
 *
 * The fix, in TSan builds only: while BoxFort looks for a free spot, every
 * address in its window reads as free, so it takes its first pick; its
 * MAP_FIXED shared mapping is then moved to the first free range of a window
 * that TSan treats as application memory and that the kernel does not use
 * for PIE executables (which load below 0x5656'0000'0000). BoxFort keeps the
 * address it gets back. Every other call goes straight to TSan's own
 * interceptors. These functions run before TSan is initialised, so they are
 * not instrumented.
 */
#if defined(__SANITIZE_THREAD__)
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

#define BOXFORT_LO UINT64_C(0x200000000000)
#define BOXFORT_HI UINT64_C(0x7f0000000000)
/* Application memory for TSan, above where the kernel places PIE images. */
#define SAFE_LO UINT64_C(0x566000000000)
#define SAFE_HI UINT64_C(0x568000000000)
#define PAGE 4096u
#define STEP (UINT64_C(1) << 24) /* BoxFort's own spacing */

#define NO_TSAN __attribute__((no_sanitize_thread))

/* TSan's interceptors, exported by libtsan under these names. */
void *__interceptor_mmap64(void *addr, size_t len, int prot, int flags, int fd,
                           off_t off);
int __interceptor_mincore(void *addr, size_t len, unsigned char *vec);

/* Criterion's library binds to these two (mmap64, not mmap). */
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int mincore(void *addr, size_t len, unsigned char *vec);

NO_TSAN static int in_boxfort_window(uint64_t a)
{
    return a >= BOXFORT_LO && a < BOXFORT_HI && !(a >= SAFE_LO && a < SAFE_HI);
}

NO_TSAN static int range_free(uint64_t at, size_t len)
{
    unsigned char v;

    for (uint64_t a = at; a < at + len; a += PAGE)
        if (__interceptor_mincore((void *)(uintptr_t)a, PAGE, &v) == 0 ||
            errno != ENOMEM)
            return 0;
    return 1;
}

NO_TSAN int mincore(void *addr, size_t len, unsigned char *vec)
{
    if (in_boxfort_window((uintptr_t)addr)) {
        errno = ENOMEM;
        return -1;
    }
    return __interceptor_mincore(addr, len, vec);
}

NO_TSAN void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
                     off_t off)
{
    static uint64_t next = SAFE_LO;

    if (!(flags & MAP_FIXED) || !(flags & MAP_SHARED) || fd < 0 ||
        !in_boxfort_window((uintptr_t)addr))
        return __interceptor_mmap64(addr, len, prot, flags, fd, off);
    for (; next + len < SAFE_HI; next += (len + STEP - 1) / STEP * STEP)
        if (range_free(next, len))
            return __interceptor_mmap64((void *)(uintptr_t)next, len, prot,
                                        flags, fd, off);
    errno = ENOMEM;
    return MAP_FAILED;
}
#else
/* ISO C wants something in every translation unit. */
typedef int tw_tsan_shim_unused;
#endif
