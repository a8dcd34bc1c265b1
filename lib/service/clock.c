/*
 * The producers' clock: what schedule, periodic schedule and re-arm read
 * to turn a delay into a deadline (deadline = reading + delay).
 *
 * Why. clock_gettime(CLOCK_MONOTONIC) costs 22-25 ns on the 2-core KVM
 * guest the benchmarks run on (vDSO, clocksource tsc, read with rdtscp):
 * a quarter of a schedule. CLOCK_MONOTONIC_COARSE (5 ns) moves in 4 ms
 * steps and lags by more than that: timers would fire early or ms late.
 * The TSC costs 10 ns to read (rdtsc), 19 ns ordered (lfence; rdtsc).
 *
 * How. Each thread keeps a base: a real CLOCK_MONOTONIC reading `ns` and
 * the TSC `tsc` read just before it. A reading is
 *
 *     ns + ceil((TSC now - tsc) * mult) + TW__CLOCK_EARLY_NS,
 *                                         mult >= 1.25 * the kernel's rate
 *
 * while TSC now - tsc < span (about 3 us), and otherwise a real reading,
 * which becomes the new base: when the base is older than span, when the
 * TSC is behind the base (another CPU's, after suspend), when the thread
 * has none yet. `mult` (ns per cycle, 32 fraction bits) is calibrated once
 * per process from two real readings at least CAL_NS apart, taken by
 * whichever threads call; until then every reading is real. Per thread a
 * reading is never below the last one given (`last`), so one thread's
 * timers with equal delays keep their order.
 *
 * A base costs more than a plain reading (two fenced TSC reads around
 * it), so it pays only for a thread that reads several times per span: a
 * thread whose base served fewer than BURST_CALLS readings reads the plain
 * clock, and takes a base again once two of its readings come closer than
 * BURST_GAP_NS. A thread that schedules now and then costs what it did
 * with clock_gettime() alone; one in a burst pays a base every 3 us.
 *
 * Where. Only on x86-64 Linux with an invariant TSC (CPUID
 * 0x80000007:EDX[8]: constant rate, counting in every C-state) and with
 * tsc as the current clocksource, read once from sysfs at the first call;
 * and not when the environment has TW_SERVICE_CLOCK=monotonic at the first
 * call. Elsewhere every reading is clock_gettime().
 *
 * Never below CLOCK_MONOTONIC. With clocksource tsc the kernel computes
 * CLOCK_MONOTONIC from the same counter: base_k + ((TSC - cycle_last) *
 * mult_k >> shift), a continuous, piecewise linear function of the TSC
 * value whose slope mult_k changes only when NTP or adjtimex() slews the
 * clock (a drift correction of some hundred ppm, chrony's slews of up to
 * 8.3 %, a changed tick length), and which the kernel never lets stray
 * more than 11 % from its nominal value (the clocksource's maxadj).
 * Calibration measures an upper bound of the slope at that time, between
 * 0.89 and 1.11 times nominal; times 1.25 that exceeds 1.11 / 0.89 =
 * 1.247 times it, so our slope is steeper than any the kernel can take
 * later, in either direction. The base has ns >= the kernel's value at
 * tsc (ns was read after tsc, in order), so for every TSC value at or
 * after tsc our line is on or above the kernel's. Hence:
 *  - NTP slewing, either way, at any rate the kernel allows: see above.
 *    Steps (settimeofday, ADJ_SETOFFSET) move CLOCK_REALTIME only.
 *  - Migration between CPUs and TSC skew: CLOCK_MONOTONIC read on a CPU is
 *    the kernel's function of that CPU's TSC value, and our reading is our
 *    line at that same value, so the comparison holds on whichever CPU the
 *    thread runs, as long as the value is at or after the base's `tsc`; a
 *    TSC behind it gives a huge unsigned difference, so a real reading.
 *    The base's two reads must come from one CPU: a base whose TSC reads,
 *    fenced, before and after the clock_gettime(), are more than
 *    PAIR_MAX_CYCLES apart (an interrupt, a preemption, a migration) is
 *    not used. What remains is what the kernel itself relies on for the
 *    tsc clocksource: TSCs synchronised across CPUs (checked at boot; the
 *    kernel drops tsc as a clocksource where they are not).
 *  - Suspend: CLOCK_MONOTONIC stops while the TSC restarts from 0 (behind
 *    the base: real reading) or runs on (far ahead: real reading). A
 *    paused VM's TSC and CLOCK_MONOTONIC move on together.
 *  - Out-of-order execution: a reading's TSC is read with a bare rdtsc,
 *    which does not wait for older instructions to complete: it may read
 *    the counter while a load before the call (or before a clock reading
 *    the caller made just before it, or the load by which it saw another
 *    thread's reading) still waits on memory, so at a value up to that
 *    wait below theirs: 100-300 ns for a miss to memory or another core.
 *    Every reading adds TW__CLOCK_EARLY_NS (1 us) for that: a reading can
 *    be below CLOCK_MONOTONIC at the call only if an instruction before
 *    the call waited more than 1 us after the TSC was read, which no
 *    ordinary load does (a page walk through a guest's nested page tables
 *    missing every cache comes closest). The same microsecond covers a
 *    TSC skew of up to 1 us between CPUs. Ordering the read (lfence;
 *    rdtsc, as the base does) would remove the case but costs what the
 *    TSC saves (measured below). The base's reads are fenced.
 * Not covered: a clocksource changed at run time (the kernel's watchdog
 * finding the TSC unstable) is not noticed; the invariant TSC and the
 * kernel's own choice of tsc at the first call are the guards.
 *
 * Never far above. CLOCK_MONOTONIC at the call is at least the base's ns
 * (read earlier), and a reading is at most ns + span * mult + 1 +
 * TW__CLOCK_EARLY_NS, which span is chosen to keep within
 * TW_SERVICE_CLOCK_AHEAD_NS (5 us), whatever the TSC and the load do.
 * Typically it is less: 1 us, plus a quarter of the base's age (the
 * margin), plus the length of the base's clock_gettime(), so 1 to 2 us.
 * A timer fires at the first tick boundary at or after its deadline, so
 * its extra lateness is that amount on average, not a tick.
 *
 * Why one base per thread, not one shared or published by the worker. The
 * worker sleeps for milliseconds, so its reading is stale; a process-wide
 * base refreshed by whichever producer finds it old would move a written
 * cache line between producers every span. A thread's base is read and
 * written by that thread only (initial-exec TLS: %fs-relative loads).
 *
 * Measured (docs/service.md has the figures): a reading from a base costs
 * 10 ns with a bare rdtsc, 19 ns with the lfence, against 22 ns for
 * clock_gettime() (a loop of readings, best of 100), and a new base about
 * 70. CPU ns per schedule (one producer, svcbench hier, medians of 9
 * interleaved runs, loaded): 52 with clock_gettime(), 50 with lfence;
 * rdtsc, 48 with rdtscp, 36 with the bare rdtsc. With lock-free rings
 * the schedule keeps many loads and stores in flight, and a fence waits
 * for all of them.
 *
 * tw_service_now() and the worker keep reading CLOCK_MONOTONIC itself: a
 * caller comparing tw_service_now() with its own readings expects it
 * between a reading before and one after, and the worker's reading
 * decides when a timer is due.
 */
#define _DEFAULT_SOURCE 1

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

#if TW__CLOCK_TSC
#include <cpuid.h>
#endif

/* The span a base is extrapolated keeps a reading within
 * TW_SERVICE_CLOCK_AHEAD_NS (5 us) of the clock: span * mult is at most
 * EXTRAPOLATE_NS (about 3.2 us of real time at the margin's slope). */
#define EXTRAPOLATE_NS (TW_SERVICE_CLOCK_AHEAD_NS - TW__CLOCK_EARLY_NS - 1)
/* A new base costs a real reading and two fenced TSC reads (about 70 ns
 * against 23 for a plain reading): a thread keeps taking bases only while
 * each serves at least BURST_CALLS readings, and goes back to them once
 * two plain readings come less than BURST_GAP_NS apart. */
#define BURST_CALLS 4u
#define BURST_GAP_NS 1000u
/* The slope margin: mult = 1.25 * the calibrated rate (see above). */
#define MARGIN_NUM 5
#define MARGIN_DEN 4
/* Two real readings at least this far apart calibrate the rate: the TSC
 * reads around each are 1024 cycles apart at most, so the rate is known
 * to a few tenths of a percent at worst (and always rounded up). */
#define CAL_NS 1000000u
/* A base whose TSC reads are further apart than this was disturbed. */
#define PAIR_MAX_CYCLES 1024u
/* Plausible TSC rates: 100 MHz to 20 GHz (ns per cycle 10 to 0.05). */
#define RATE_MIN 0.05
#define RATE_MAX 10.0

_Thread_local struct tw__clock_base tw__clock_mine;

#define UNDECIDED (-1) /* the mode before the first reading */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_int mode = UNDECIDED;
static atomic_uint_fast64_t cal_mult, cal_span; /* span before mult */
/* The first calibration reading (taken under cal_lock). */
static pthread_mutex_t cal_lock = PTHREAD_MUTEX_INITIALIZER;
static bool have_first;
static uint64_t first_ns, first_tsc_after;

#if TW__CLOCK_TSC
/* The TSC before a clock reading: after what came before, and before
 * what comes after. */
static uint64_t tsc_before(void)
{
    uint64_t t;

    _mm_lfence();
    t = __rdtsc();
    _mm_lfence();
    return t;
}

/* The TSC after a clock reading. Not fenced after: an interrupt or a
 * migration before it is serialising anyway. */
static uint64_t tsc_after(void)
{
    _mm_lfence();
    return __rdtsc();
}

/* The TSC runs at a constant rate in every state (invariant TSC). */
static bool invariant_tsc(void)
{
    unsigned a, b, c, d;

    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return false;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1u;
}

/* The kernel computes CLOCK_MONOTONIC from the TSC. */
static bool clocksource_is_tsc(void)
{
    static const char path[] =
        "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    char buf[16] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return false;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    return n >= 3 && memcmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}
#endif

static void decide(void)
{
    const char *env = getenv("TW_SERVICE_CLOCK");
    int m = TW__CLOCK_REAL;

#if TW__CLOCK_TSC
    if (!(env && strcmp(env, "monotonic") == 0) && invariant_tsc() &&
        clocksource_is_tsc())
        m = TW__CLOCK_CALIBRATING;
#else
    (void)env;
#endif
    atomic_store_explicit(&mode, m, memory_order_release);
}

#if TW__CLOCK_TSC
/* Sets the rate from the first good reading and this one (at least CAL_NS
 * apart), under cal_lock. The kernel's value at the TSC read before the
 * second (tsc_before) is at most ns, at the TSC read after the first at
 * least first_ns: so (ns - first_ns) / (tsc_before - first_tsc_after) is at
 * least the kernel's mean rate in between. */
static void calibrate_locked(uint64_t tsc_before, uint64_t ns,
                             uint64_t tsc_after)
{
    double rate;
    uint64_t mult;

    if (!have_first || tsc_before <= first_tsc_after) {
        have_first = true; /* (again, if the TSC went backwards) */
        first_ns = ns;
        first_tsc_after = tsc_after;
        return;
    }
    if (ns - first_ns < CAL_NS)
        return;
    rate = (double)(ns - first_ns) / (double)(tsc_before - first_tsc_after);
    if (rate < RATE_MIN || rate > RATE_MAX) {
        tw__clock_disable();
        return;
    }
    /* Truncated, + 1: rounded up. */
    mult = (uint64_t)(rate * MARGIN_NUM / MARGIN_DEN * 4294967296.0) + 1;
    /* span * mult <= EXTRAPOLATE_NS << 32 < 2^64: the product in
     * tw__svc_clock_upper() cannot overflow, and a reading is at most
     * EXTRAPOLATE_NS + 1 + TW__CLOCK_EARLY_NS above its base. */
    atomic_store_explicit(&cal_span, (EXTRAPOLATE_NS << 32) / mult,
                          memory_order_relaxed);
    atomic_store_explicit(&cal_mult, mult, memory_order_release);
    atomic_store_explicit(&mode, TW__CLOCK_ON, memory_order_release);
}

/* Calibrate with this reading if the rate is not known yet; the rate, or
 * 0. A thread that finds another calibrating just reads the real clock. */
static uint64_t rate_known(uint64_t tsc_before, uint64_t ns, uint64_t tsc_after)
{
    uint64_t mult = atomic_load_explicit(&cal_mult, memory_order_acquire);

    if (mult || pthread_mutex_trylock(&cal_lock) != 0)
        return mult;
    if (atomic_load_explicit(&mode, memory_order_relaxed) ==
        TW__CLOCK_CALIBRATING)
        calibrate_locked(tsc_before, ns, tsc_after);
    pthread_mutex_unlock(&cal_lock);
    return atomic_load_explicit(&cal_mult, memory_order_acquire);
}
#endif

static int current_mode(void)
{
    int m = atomic_load_explicit(&mode, memory_order_acquire);

    if (m == UNDECIDED) {
        pthread_once(&once, decide);
        m = atomic_load_explicit(&mode, memory_order_acquire);
    }
    return m;
}

/* Never below what this thread was given last. */
static uint64_t give(struct tw__clock_base *b, uint64_t t)
{
    if (t < b->last)
        t = b->last;
    b->last = t;
    return t;
}

/* A real reading, which becomes b's base if its TSC reads were not
 * disturbed and the rate is known (or now calibrated with it). */
static uint64_t new_base(struct tw__clock_base *b)
{
#if TW__CLOCK_TSC
    uint64_t before = tsc_before(), ns = tw__mono_ns(), after = tsc_after();
    uint64_t mult;

    b->ns = ns;
    b->span = 0;
    b->calls = 0;
    if (after - before <= PAIR_MAX_CYCLES &&
        (mult = rate_known(before, ns, after)) != 0) {
        b->tsc = before;
        b->mult = mult;
        b->span = atomic_load_explicit(&cal_span, memory_order_relaxed);
    }
    return ns;
#else
    return b->ns = tw__mono_ns();
#endif
}

/* A real reading, remembered to time the next one. */
static uint64_t plain(struct tw__clock_base *b)
{
    b->span = 0;
    return b->ns = tw__mono_ns();
}

/*
 * The base ran out, or the thread has none. A thread that was served
 * BURST_CALLS readings by its last base takes another; one that was not,
 * reads the plain clock, and takes a base again once two of its plain
 * readings come less than BURST_GAP_NS apart. While the rate is being
 * calibrated every reading takes a base (and helps calibrate).
 */
uint64_t tw__clock_refresh(void)
{
    struct tw__clock_base *b = &tw__clock_mine;
    int m = current_mode();
    uint64_t prev = b->ns, ns;

    if (m == TW__CLOCK_REAL) {
        b->span = 0;
        return give(b, tw__mono_ns());
    }
    if (m == TW__CLOCK_CALIBRATING)
        return give(b, new_base(b));
    if (b->span)
        return give(b, b->calls >= BURST_CALLS ? new_base(b) : plain(b));
    ns = plain(b);
    return give(b, ns - prev < BURST_GAP_NS ? new_base(b) : ns);
}

int tw__clock_mode(void)
{
    return current_mode();
}

uint64_t tw__clock_max_ahead(void)
{
    uint64_t mult, span;

    if (current_mode() != TW__CLOCK_ON)
        return 0;
    mult = atomic_load_explicit(&cal_mult, memory_order_acquire);
    span = atomic_load_explicit(&cal_span, memory_order_relaxed);
    return (span * mult >> 32) + 1 + TW__CLOCK_EARLY_NS;
}

void tw__clock_disable(void)
{
    pthread_once(&once, decide); /* so that it cannot come after */
    atomic_store_explicit(&mode, TW__CLOCK_REAL, memory_order_release);
    tw__clock_mine.span = 0;
    tw__clock_mine.last = 0; /* plain readings from the next one */
}
