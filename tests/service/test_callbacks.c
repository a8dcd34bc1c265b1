/*
 * The service's table of callbacks (lib/service/callbacks.c): a handle
 * names its callback by an index into a table of the service, and a
 * callback the table cannot take travels in the handle's tail instead.
 * Either way each timer must run its own callback with its own argument,
 * stop must hand each back with its own, and the table must take the few
 * callbacks of a real program (here 64, put in by 4 threads at once) so
 * that their handles stay at the small size.
 *
 * CALLBACKS distinct functions (macros below) are more than the table's
 * 1,023 slots, so some of them must go to the tail.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "timewheel.h"
#include "util.h"

#define CALLBACKS 1100

static atomic_int ran[CALLBACKS];
static atomic_int wrong; /* a callback that got another's argument */
static atomic_int total;

static void note(int mine, void *arg)
{
    if ((int)(intptr_t)arg != mine)
        atomic_fetch_add(&wrong, 1);
    atomic_fetch_add(&ran[mine], 1);
    atomic_fetch_add(&total, 1);
}

/* CALLBACKS functions cb_<a><b><c>, each knowing its own number. */
/* clang-format 14 reflows these lists differently on every run. */
/* clang-format off */
#define CB(a, b, c)                                                           \
    static void cb_##a##b##c(struct tw_handle *h, void *arg)                  \
    {                                                                         \
        (void)h;                                                              \
        note((a) * 100 + (b) * 10 + (c), arg);                                \
    }
#define CB10(a, b)                                                            \
    CB(a, b, 0) CB(a, b, 1) CB(a, b, 2) CB(a, b, 3) CB(a, b, 4) CB(a, b, 5)   \
        CB(a, b, 6) CB(a, b, 7) CB(a, b, 8) CB(a, b, 9)
#define CB100(a)                                                              \
    CB10(a, 0) CB10(a, 1) CB10(a, 2) CB10(a, 3) CB10(a, 4) CB10(a, 5)         \
        CB10(a, 6) CB10(a, 7) CB10(a, 8) CB10(a, 9)
CB100(0) CB100(1) CB100(2) CB100(3) CB100(4) CB100(5) CB100(6) CB100(7)
    CB100(8) CB100(9) CB100(10)

#define P(a, b, c) cb_##a##b##c,
#define P10(a, b)                                                             \
    P(a, b, 0) P(a, b, 1) P(a, b, 2) P(a, b, 3) P(a, b, 4) P(a, b, 5)         \
        P(a, b, 6) P(a, b, 7) P(a, b, 8) P(a, b, 9)
#define P100(a)                                                               \
    P10(a, 0) P10(a, 1) P10(a, 2) P10(a, 3) P10(a, 4) P10(a, 5) P10(a, 6)     \
        P10(a, 7) P10(a, 8) P10(a, 9)

static tw_service_callback *const cbs[CALLBACKS] = {
    P100(0) P100(1) P100(2) P100(3) P100(4) P100(5) P100(6) P100(7) P100(8)
        P100(9) P100(10)};
/* clang-format on */

static void counted(void)
{
    alloc_install(false);
}

static void ignore(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
}

/* The size of the block the next schedule allocates (its handle); 0 when
 * it also took a new block for its ring (every 511 schedules). */
static unsigned long scheduled_size(struct tw_service *s, uint64_t delay, int i)
{
    unsigned long calls = atomic_load(&alloc_log.calls);

    cr_assert_eq(
        tw_service_schedule(s, delay, cbs[i], (void *)(intptr_t)i, NULL), 0);
    if (atomic_load(&alloc_log.calls) != calls + 1)
        return 0;
    return atomic_load(&alloc_log.last_size);
}

/* Schedule one timer per callback and return how many handles were of the
 * smallest size seen; *sizes gets how many sizes there were. */
static int schedule_all(struct tw_service *s, uint64_t delay, int *sizes)
{
    unsigned long small = ~0ul, big = 0, size[CALLBACKS];
    int n = 0;

    cr_assert_eq(tw_service_schedule(s, 3600 * SEC, ignore, NULL, NULL), 0);
    for (int i = 0; i < CALLBACKS; i++) {
        size[i] = scheduled_size(s, delay, i);
        if (size[i])
            small = size[i] < small ? size[i] : small;
        big = size[i] > big ? size[i] : big;
    }
    for (int i = 0; i < CALLBACKS; i++)
        n += size[i] == small;
    *sizes = 1 + (big != small);
    return n;
}

Test(service_callbacks, more_than_the_table_each_run_their_own, .init = counted)
{
    struct tw_service *s = default_service(TW_HIER);
    int sizes, small = schedule_all(s, MS, &sizes);

    wait_for(&total, CALLBACKS, "every callback's timer");
    cr_assert_eq(atomic_load(&wrong), 0, "a callback got another's arg");
    for (int i = 0; i < CALLBACKS; i++)
        cr_assert_eq(atomic_load(&ran[i]), 1, "callback %d ran %d times", i,
                     atomic_load(&ran[i]));
    cr_assert_eq(sizes, 2, "both small handles and handles with a tail");
    cr_assert_leq(small, 1023, "the table has 1,023 slots: %d", small);
    cr_assert_geq(small, 512, "the table took only %d callbacks", small);
    cr_assert_eq(tw_service_destroy(s), 0);
}

struct back {
    int seen;
    int wrong;
};

static void check_back(const struct tw_handback *t, void *ctx)
{
    struct back *b = ctx;
    int i = (int)(intptr_t)t->arg;

    if (i < 0 || i >= CALLBACKS || t->cb != cbs[i])
        b->wrong++;
    b->seen++;
}

Test(service_callbacks, stop_hands_each_back_with_its_own, .init = counted)
{
    struct tw_service *s = default_service(TW_HIER);
    struct back b = {0};
    int sizes;

    schedule_all(s, 3600 * SEC, &sizes);
    cr_assert_eq(sizes, 2, "both small handles and handles with a tail");
    cr_assert_eq(tw_service_stop(s, check_back, &b), 0);
    cr_assert_eq(b.seen, CALLBACKS + 1, "handed back: %d", b.seen);
    cr_assert_eq(b.wrong, 1, "only the `ignore` timer is not ours: %d",
                 b.wrong);
    cr_assert_eq(atomic_load(&total), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* Four threads put the same 64 callbacks in at once, in different orders:
 * every timer runs its own, and every handle is small (none needed the
 * tail: a callback has one index, whoever put it in). */
#define THREADS 4
#define FEW 64

static struct tw_service *shared;
static atomic_int ready;

static void *race(void *arg)
{
    int t = (int)(intptr_t)arg;

    atomic_fetch_add(&ready, 1);
    while (atomic_load(&ready) < THREADS)
        ;
    for (int k = 0; k < FEW; k++) {
        int i = (k * (2 * t + 1) + t) % FEW;

        cr_assert_eq(
            tw_service_schedule(shared, MS, cbs[i], (void *)(intptr_t)i, NULL),
            0);
    }
    return NULL;
}

Test(service_callbacks, threads_putting_the_same_in_at_once_agree,
     .init = counted)
{
    pthread_t th[THREADS];
    unsigned long plain;
    int extra = 0;

    shared = default_service(TW_HIER);
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_create(&th[t], NULL, race, (void *)(intptr_t)t),
                     0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    wait_for(&total, THREADS * FEW, "every thread's timers");
    cr_assert_eq(atomic_load(&wrong), 0, "a callback got another's arg");
    for (int i = 0; i < FEW; i++)
        cr_assert_eq(atomic_load(&ran[i]), THREADS, "callback %d ran %d times",
                     i, atomic_load(&ran[i]));
    /* Each of them has its index: one more timer of each is as small as
     * that of the first callback this thread schedules. */
    cr_assert_eq(tw_service_schedule(shared, MS, ignore, NULL, NULL), 0);
    if (!(plain = scheduled_size(shared, MS, 0))) /* a ring block too */
        plain = scheduled_size(shared, MS, 0), extra = 1;
    for (int i = 1; i < FEW; i++) {
        unsigned long size = scheduled_size(shared, MS, i);

        cr_assert(size == plain || size == 0, "callback %d has no index", i);
    }
    wait_for(&total, THREADS * FEW + FEW + extra, "the last timers");
    cr_assert_eq(tw_service_destroy(shared), 0);
}
