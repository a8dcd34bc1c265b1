/*
 * A host program of the host matrix (tests/hosts/run.sh), built as C or
 * C++, with or without timewheel (TW), with or without RocksDB's C API
 * (ROCKS), over whatever malloc the link or LD_PRELOAD gives it.
 *
 * With TW it first makes a timer of every layer fire (core, loop, service,
 * purgatory over the service, store) and says so (with TW_CORE_ONLY too, a
 * host linked with the core's library alone: the core's timer only); then every
 * variant prints one line that tells what the host's own calls reach:
 *
 *   malloc=<object> free=<object> new=<object|none> arena=<n|-> narenas=<n|->
 *
 * the object (dladdr) holding the malloc, free and operator new that the
 * host's calls are bound to, and, when the host's malloc is jemalloc's, the
 * jemalloc arena its thread is bound to after a malloc of 1 MiB and the
 * number of arenas. run.sh compares the line with the same host built
 * without timewheel: it must not differ.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef TW
#include <timewheel.h>
#include <unistd.h>

#include "hostwait.h"
#endif
#ifdef ROCKS
#include <rocksdb/c.h>
#endif
#ifdef __cplusplus
#include <new>
#endif

typedef int ctl_fn(const char *, void *, size_t *, void *, size_t);

static const char *object_of(void *addr)
{
    Dl_info info;
    const char *slash;

    if (!addr || !dladdr(addr, &info) || !info.dli_fname)
        return "none";
    slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
}

#ifdef TW
static int fired;

static void fail(const char *what)
{
    fprintf(stderr, "host: %s\n", what);
    exit(2);
}

static void on_timer(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
    fired++;
}

static void on_service(struct tw_handle *h, void *arg)
{
    (void)h;
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

#ifdef TW_CORE_ONLY
static void core_only(void)
{
    struct tw_config cfg;
    struct tw_timer t;
    struct tw_wheel *w;

    tw_config_init(&cfg, TW_HIER);
    w = tw_create(&cfg, NULL);
    tw_timer_init(&t, on_timer, NULL);
    if (!w || tw_schedule_after(w, &t, 1000000) != 0 ||
        tw_advance(w, 1000000) != 1 || !fired)
        fail("core: the timer did not fire");
    tw_destroy(w);
    printf("core timer fired\n");
}
#else
static void core_and_loop(void)
{
    struct tw_config cfg;
    struct tw_timer t;
    struct tw_wheel *w;
    uint64_t now = 0;

    tw_config_init(&cfg, TW_HIER);
    if (tw_loop_config(&cfg, CLOCK_MONOTONIC) != 0)
        fail("tw_loop_config");
    w = tw_create(&cfg, NULL);
    tw_timer_init(&t, on_timer, NULL);
    if (!w || tw_loop_schedule_after(w, &t, cfg.start_ns, 1000000) != 0)
        fail("core/loop: schedule");
    while (!fired) {
        sleep_ms(1);
        if (tw_loop_clock(CLOCK_MONOTONIC, &now) == 0)
            tw_advance(w, now);
    }
    tw_destroy(w);
    printf("core timer fired\nloop timer fired\n");
}

static void service_and_purgatory(void)
{
    struct tw_service_config sc;
    struct tw_purgatory_config pc;
    struct tw_service *s;
    struct tw_purgatory *p;
    struct tw_delayed op;
    const struct tw_key key = {"k", 1};
    int ran = 0, expired = 0;

    tw_service_config_init(&sc, TW_HIER);
    s = tw_service_create(&sc, NULL);
    if (!s || tw_service_schedule(s, 1000000, on_service, &ran, NULL) != 0 ||
        !wait_for(&ran))
        fail("service timer");
    printf("service timer fired\n");
    tw_purgatory_config_init(&pc);
    pc.service = s;
    p = tw_purgatory_create(&pc, NULL);
    tw_delayed_init(&op, never, on_expire, NULL, &expired);
    if (!p || tw_purgatory_watch(p, &op, &key, 1, 1000000) != 0 ||
        !wait_for(&expired))
        fail("purgatory timeout");
    printf("purgatory timer fired\n");
    if (tw_purgatory_destroy(p) != 0 || tw_service_destroy(s) != 0)
        fail("service/purgatory destroy");
}

static void on_deliver(struct tw_store *s, struct tw_store_id id,
                       const void *payload, size_t len, void *arg)
{
    (void)payload;
    (void)len;
    tw_store_ack(s, id, NULL, NULL);
    __atomic_store_n((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static void store(void)
{
    char dir[] = "/tmp/tw-host-XXXXXX", path[64];
    struct tw_store_config cfg;
    struct tw_store *s;
    int delivered = 0, err = 0;

    if (!mkdtemp(dir))
        fail("mkdtemp");
    snprintf(path, sizeof(path), "%s/db", dir);
    tw_store_config_init(&cfg);
    cfg.deliver = on_deliver;
    cfg.deliver_arg = &delivered;
    s = tw_store_open(path, &cfg, &err);
    if (!s || tw_store_schedule_after(s, 1000000, "m", 1, NULL, NULL, NULL) ||
        !wait_for(&delivered))
        fail("store timer");
    printf("store timer fired\n");
    if (tw_store_close(s) != 0)
        fail("store close");
    if (system("rm -rf /tmp/tw-host-??????") != 0)
        fail("rm");
    (void)dir;
}
#endif /* TW_CORE_ONLY */
#endif /* TW */

int main(void)
{
    void *(*m)(size_t) = malloc;
    void (*f)(void *) = free;
    void *nw, *big;
    ctl_fn *ctl = (ctl_fn *)dlsym(RTLD_DEFAULT, "mallctl");
    unsigned arena = 0, narenas = 0;
    size_t len = sizeof(unsigned);
    char arena_s[16] = "-", narenas_s[16] = "-";

#ifdef ROCKS
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_destroy(o);
#endif
#if defined(TW) && defined(TW_CORE_ONLY)
    core_only();
#elif defined(TW)
    core_and_loop();
    service_and_purgatory();
    store();
#endif
#ifdef __cplusplus
    void *(*n)(std::size_t) = &::operator new;
    nw = (void *)n;
    delete new int(1);
#else
    nw = dlsym(RTLD_DEFAULT, "_Znwm");
#endif
    big = m(1 << 20);
    /* jemalloc's thread.arena only where the host's malloc is jemalloc's. */
    if (ctl && strcmp(object_of((void *)ctl), object_of((void *)m)) == 0) {
        if (ctl("thread.arena", &arena, &len, NULL, 0) == 0)
            snprintf(arena_s, sizeof(arena_s), "%u", arena);
        len = sizeof(narenas);
        if (ctl("arenas.narenas", &narenas, &len, NULL, 0) == 0)
            snprintf(narenas_s, sizeof(narenas_s), "%u", narenas);
    }
    f(big);
    printf("malloc=%s free=%s new=%s arena=%s narenas=%s\n",
           object_of((void *)m), object_of((void *)f), object_of(nw), arena_s,
           narenas_s);
    return 0;
}
