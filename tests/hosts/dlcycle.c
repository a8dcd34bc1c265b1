/*
 * dlopen() and dlclose() of one layer's installed library, 100 times in one
 * process (tests/hosts/run.sh): each cycle makes the layer's object, fires a
 * timer of it, destroys it (what docs/embedding.md, "dlclose", asks before
 * a dlclose) and closes the library. Fails unless, from the 10th cycle to
 * the 100th, the process's mappings, its RSS and its threads stay bounded,
 * and a layer's library other than the core's is unmapped by its dlclose
 * (the core's stays, -z nodelete, and is mapped once).
 *
 *   dlcycle LIBDIR core|loop|service|purgatory|store
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <timewheel.h>

#include "hostwait.h"

#define CYCLES 100

static void *lib;

static void fail(const char *what)
{
    fprintf(stderr, "dlcycle: %s\n", what);
    exit(2);
}

/* dlsym() of the open library, or fail naming the symbol. */
static void *sym(const char *name)
{
    void *p = dlsym(lib, name);

    if (!p)
        fail(name);
    return p;
}

/* The function name of the open library, as a pointer of its type. */
#define FN(ret, name, ...) ((ret(*)(__VA_ARGS__))sym(#name))

static void on_timer(struct tw_timer *t, void *arg)
{
    (void)t;
    *(int *)arg = 1;
}

static void on_service(struct tw_handle *h, void *arg)
{
    (void)h;
    __atomic_store_n((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static void core_cycle(void)
{
    struct tw_config cfg;
    struct tw_timer t;
    struct tw_wheel *w;
    int fired = 0;

    FN(void, tw_config_init, struct tw_config *, enum tw_mode)(&cfg, TW_HIER);
    w = FN(struct tw_wheel *, tw_create, const struct tw_config *, int *)(&cfg,
                                                                          NULL);
    FN(void, tw_timer_init, struct tw_timer *, tw_callback *, void *)
    (&t, on_timer, &fired);
    if (!w || FN(int, tw_schedule_after, struct tw_wheel *, struct tw_timer *,
                 uint64_t)(w, &t, 1000000) != 0)
        fail("core: schedule");
    FN(int64_t, tw_advance, struct tw_wheel *, uint64_t)(w, 1000000);
    if (!fired)
        fail("core: the timer did not fire");
    FN(void, tw_destroy, struct tw_wheel *)(w);
}

static void loop_cycle(void)
{
    struct tw_config cfg;
    struct tw_timer t;
    struct tw_wheel *w;
    uint64_t now;
    int fired = 0;

    FN(void, tw_config_init, struct tw_config *, enum tw_mode)(&cfg, TW_HIER);
    if (FN(int, tw_loop_config, struct tw_config *, int)(&cfg,
                                                         CLOCK_MONOTONIC) ||
        FN(int, tw_loop_clock, int, uint64_t *)(CLOCK_MONOTONIC, &now))
        fail("loop: config");
    w = FN(struct tw_wheel *, tw_create, const struct tw_config *, int *)(&cfg,
                                                                          NULL);
    FN(void, tw_timer_init, struct tw_timer *, tw_callback *, void *)
    (&t, on_timer, &fired);
    if (!w || FN(int, tw_loop_schedule_after, struct tw_wheel *,
                 struct tw_timer *, uint64_t, uint64_t)(w, &t, now, 1000000))
        fail("loop: schedule");
    FN(int64_t, tw_advance, struct tw_wheel *, uint64_t)(w, now + 2000000);
    if (!fired)
        fail("loop: the timer did not fire");
    FN(void, tw_destroy, struct tw_wheel *)(w);
}

static struct tw_service *service_up(void)
{
    struct tw_service_config sc;
    struct tw_service *s;
    int ran = 0;

    FN(void, tw_service_config_init, struct tw_service_config *, enum tw_mode)
    (&sc, TW_HIER);
    s = FN(struct tw_service *, tw_service_create,
           const struct tw_service_config *, int *)(&sc, NULL);
    if (!s ||
        FN(int, tw_service_schedule, struct tw_service *, uint64_t,
           tw_service_callback *, void *,
           struct tw_handle **)(s, 1000000, on_service, &ran, NULL) ||
        !wait_for(&ran))
        fail("service: the timer did not fire");
    return s;
}

static void service_down(struct tw_service *s)
{
    if (FN(int, tw_service_destroy, struct tw_service *)(s))
        fail("service: destroy");
}

static void purgatory_cycle(void)
{
    struct tw_service *s = service_up();
    struct tw_purgatory_config pc;
    struct tw_purgatory *p;
    struct tw_delayed op;
    const struct tw_key key = {"k", 1};
    int expired = 0;

    FN(void, tw_purgatory_config_init, struct tw_purgatory_config *)(&pc);
    pc.service = s;
    p = FN(struct tw_purgatory *, tw_purgatory_create,
           const struct tw_purgatory_config *, int *)(&pc, NULL);
    FN(void, tw_delayed_init, struct tw_delayed *, tw_try_complete_fn *,
       tw_delayed_fn *, tw_delayed_fn *, void *)
    (&op, never, on_expire, NULL, &expired);
    if (!p ||
        FN(int, tw_purgatory_watch, struct tw_purgatory *, struct tw_delayed *,
           const struct tw_key *, size_t, uint64_t)(p, &op, &key, 1, 1000000) ||
        !wait_for(&expired))
        fail("purgatory: the timeout did not fire");
    if (FN(int, tw_purgatory_destroy, struct tw_purgatory *)(p))
        fail("purgatory: destroy");
    service_down(s);
}

static int delivered;

static void on_deliver(struct tw_store *s, struct tw_store_id id,
                       const void *payload, size_t len, void *arg)
{
    (void)s, (void)id, (void)payload, (void)len, (void)arg;
    __atomic_store_n(&delivered, 1, __ATOMIC_SEQ_CST);
}

static void store_cycle(const char *dir)
{
    struct tw_store_config cfg;
    struct tw_store *s;

    delivered = 0;
    FN(void, tw_store_config_init, struct tw_store_config *)(&cfg);
    cfg.deliver = on_deliver;
    s = FN(struct tw_store *, tw_store_open, const char *,
           const struct tw_store_config *, int *)(dir, &cfg, NULL);
    if (!s ||
        FN(int, tw_store_schedule_after, struct tw_store *, uint64_t,
           const void *, size_t, tw_store_done_fn *, void *,
           struct tw_store_id *)(s, 0, "m", 1, NULL, NULL, NULL) ||
        !wait_for(&delivered))
        fail("store: the timer did not fire");
    if (FN(int, tw_store_close, struct tw_store *)(s))
        fail("store: close");
}

/* Lines of /proc/self/maps, and those naming `name`. */
static void maps(const char *name, long *all, long *named)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];

    *all = *named = 0;
    if (!f)
        fail("/proc/self/maps");
    while (fgets(line, sizeof(line), f)) {
        (*all)++;
        if (strstr(line, name))
            (*named)++;
    }
    fclose(f);
}

static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;

    if (!f)
        fail("/proc/self/status");
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, field, strlen(field)) == 0)
            v = atol(line + strlen(field) + 1);
    fclose(f);
    return v;
}

int main(int argc, char **argv)
{
    const char *layer, *name;
    char path[4096], dir[] = "/tmp/tw-dlcycle-XXXXXX", db[64];
    long maps10 = 0, rss10 = 0, thr10 = 0, all, named;

    if (argc != 3)
        fail("usage: dlcycle LIBDIR LAYER");
    layer = argv[2];
    name = strcmp(layer, "core") == 0        ? "libtimewheel.so"
           : strcmp(layer, "loop") == 0      ? "libtimewheel-loop.so"
           : strcmp(layer, "service") == 0   ? "libtimewheel-service.so"
           : strcmp(layer, "purgatory") == 0 ? "libtimewheel-purgatory.so"
           : strcmp(layer, "store") == 0     ? "libtimewheel-store.so"
                                             : NULL;
    if (!name)
        fail("unknown layer");
    snprintf(path, sizeof(path), "%s/%s.0", argv[1], name);
    if (!mkdtemp(dir))
        fail("mkdtemp");
    snprintf(db, sizeof(db), "%s/db", dir);
    for (int i = 1; i <= CYCLES; i++) {
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            fprintf(stderr, "dlcycle: %s\n", dlerror());
            return 2;
        }
        if (strcmp(layer, "core") == 0)
            core_cycle();
        else if (strcmp(layer, "loop") == 0)
            loop_cycle();
        else if (strcmp(layer, "service") == 0)
            service_down(service_up());
        else if (strcmp(layer, "purgatory") == 0)
            purgatory_cycle();
        else
            store_cycle(db);
        if (dlclose(lib))
            fail(dlerror());
        maps(name, &all, &named);
        if (strcmp(layer, "core") != 0 && named)
            fail("a layer's library still mapped after its dlclose");
        if (i == 10) {
            maps10 = all;
            rss10 = status_kb("VmRSS:");
            thr10 = status_kb("Threads:");
        }
    }
    maps(name, &all, &named);
    printf("dlcycle %s: %d cycles, maps %ld -> %ld, RSS %ld -> %ld kB, "
           "threads %ld -> %ld, %s mappings after the last dlclose %ld\n",
           layer, CYCLES, maps10, all, rss10, status_kb("VmRSS:"), thr10,
           status_kb("Threads:"), name, named);
    /* Bounded: from the 10th cycle to the 100th, at most 16 more mappings
     * (RocksDB keeps a few of its own), no more threads, 8 MB more RSS. */
    if (all > maps10 + 16 || status_kb("VmRSS:") > rss10 + 8192 ||
        status_kb("Threads:") > thr10)
        fail("mappings, RSS or threads grew with the cycles");
    snprintf(path, sizeof(path), "rm -rf %s", dir);
    return system(path) == 0 ? 0 : 2;
}
