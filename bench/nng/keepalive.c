/*
 * keepalive: a broker's per-client keepalive timers on nng's aio sleeps,
 * the workload NanoMQ would have with an exact timer per client instead
 * of its 10 s tick (issue 31; docs/brokers.md, "nng").
 * bench/nng/bench.sh runs it on the stock and the patched nng.
 *
 *   keepalive N SECONDS [SILENT_PERMILLE]
 *
 * N clients, each with an aio sleeping 1.5 x its keepalive (a keepalive
 * of 2 s: 3 s, plus a jitter of up to 1 s so that the deadlines spread).
 * A driver thread plays the traffic of the active clients: every packet
 * cancels the client's sleep and arms it again (nng_aio_cancel(),
 * nng_aio_wait(), nng_sleep_aio()), each active client once a second on
 * average, in random order. SILENT_PERMILLE of the clients (10: 1%) never
 * send; their sleeps expire, which is the broker noticing them. Printed:
 * how late each silent client was noticed (callback time minus arm time
 * minus its timeout: nng's millisecond clock makes up to 1 ms of it
 * unavoidable; those not noticed by the end of the traffic are waited for,
 * 30 s at most), the packets the driver managed (a slow queue slows every
 * cancel and arm), and the expire threads' CPU per second of traffic.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>

#include "expire.h"

#define TIMEOUT_MS 3000u /* 1.5 x a keepalive of 2 s */
#define JITTER_MS 1000u

struct client {
    nng_aio *aio;
    uint64_t armed;
    unsigned timeout;
    uint64_t late; /* once noticed: ns after its due time, plus one */
    bool silent;
};

static struct client *clients;
static atomic_uint noticed;

static void ka_cb(void *arg)
{
    struct client *c = arg;
    uint64_t t = now_ns(), due;

    /* A cancel by a packet: the driver arms it again. */
    if (nng_aio_result(c->aio) != 0)
        return;
    due = c->armed + (uint64_t)c->timeout * 1000000u;
    c->late = (t > due ? t - due : 0) + 1;
    if (c->silent)
        atomic_fetch_add(&noticed, 1);
}

static void arm(struct client *c)
{
    c->armed = now_ns();
    nng_sleep_aio((nng_duration)c->timeout, c->aio);
}

int main(int argc, char **argv)
{
    size_t n, silent, active, packets = 0, k = 0;
    unsigned seconds, permille;
    uint64_t t0, end, cpu0, cpu, *late;
    int rv;

    if (argc < 3) {
        fprintf(stderr, "usage: keepalive N SECONDS [SILENT_PERMILLE]\n");
        return 2;
    }
    n = strtoul(argv[1], NULL, 10);
    seconds = (unsigned)strtoul(argv[2], NULL, 10);
    permille = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 10;
    silent = n * permille / 1000;
    active = n - silent;
    if (n == 0 || silent == 0 ||
        (clients = calloc(n, sizeof(*clients))) == NULL ||
        (late = calloc(silent, 8)) == NULL) {
        fprintf(stderr, "keepalive: N too small, or out of memory\n");
        return 2;
    }
    srand(7);
    for (size_t i = 0; i < n; i++) {
        if ((rv = nng_aio_alloc(&clients[i].aio, ka_cb, &clients[i])) != 0) {
            fprintf(stderr, "keepalive: %s\n", nng_strerror(rv));
            return 1;
        }
        clients[i].timeout = TIMEOUT_MS + (unsigned)rand() % JITTER_MS;
        clients[i].silent = i >= active;
    }
    /* Clients [0, active) talk; [active, n) are silent. */
    for (size_t i = 0; i < n; i++)
        arm(&clients[i]);
    cpu0 = expire_threads().run_ns;
    t0 = now_ns();
    end = t0 + (uint64_t)seconds * 1000000000u;
    /* Each active client once a second on average: pace by the clock. */
    while (now_ns() < end) {
        uint64_t due = t0 + (uint64_t)((double)packets * 1e9 / (double)active);

        if (now_ns() < due) {
            struct timespec ts = {0, 200000};

            nanosleep(&ts, NULL);
            continue;
        }
        k = (k + 1 + (size_t)rand() % 7) % active;
        nng_aio_cancel(clients[k].aio);
        nng_aio_wait(clients[k].aio);
        arm(&clients[k]);
        packets++;
    }
    cpu = expire_threads().run_ns - cpu0;
    /* Silent clients not noticed yet are waited for (30 s at most), so
     * that a slow queue shows as lateness rather than as a smaller count;
     * the active ones start to expire too once the traffic stops. */
    end = now_ns() + 30 * 1000000000ull;
    while (atomic_load(&noticed) < silent && now_ns() < end)
        nng_msleep(10);
    {
        size_t m = 0;

        for (size_t i = active; i < n; i++)
            if (clients[i].late != 0)
                late[m++] = clients[i].late - 1;
        qsort(late, m, sizeof(*late), cmp_u64);
        printf("clients=%zu silent=%zu seconds=%u noticed=%zu "
               "late_p50_ms=%.3f late_p99_ms=%.3f late_max_ms=%.3f "
               "packets_per_s=%.0f of=%zu expire_cpu_ms_per_s=%.2f\n",
               n, silent, seconds, m, m ? (double)late[m / 2] / 1e6 : -1,
               m ? (double)late[(size_t)((double)(m - 1) * 0.99)] / 1e6 : -1,
               m ? (double)late[m - 1] / 1e6 : -1, (double)packets / seconds,
               active, (double)cpu / 1e6 / seconds);
    }
    for (size_t i = 0; i < n; i++)
        nng_aio_free(clients[i].aio);
    free(clients);
    free(late);
    return 0;
}
