#!/bin/sh
# Install the library as a user would and build programs against it with
# nothing but pkg-config, as the README says:
#   1. a prefix of the user's own (PKG_CONFIG_PATH, no LD_LIBRARY_PATH): a
#      core program, and a program that uses only the purgatory, which must
#      find the service's and the core's libraries (indirect dependencies)
#      through the libraries' own run path ($ORIGIN), also when it is
#      linked with -ltimewheel-purgatory alone;
#   2. /usr/local, staged with DESTDIR so that the machine is left alone:
#      the flags pkg-config gives are the documented ones, and a program
#      built through them runs against the staged copy;
#   3. /usr, staged: no run path (the loader looks there, Debian forbids it);
#   4. uninstall leaves nothing behind.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "install test: $*" >&2; exit 1; }

cat > "$tmp/core.c" <<'PROG'
#include <stdio.h>
#include <timewheel.h>

static int fired;

static void on_fire(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
    fired++;
}

int main(void)
{
    struct tw_config cfg;
    struct tw_timer t;
    struct tw_wheel *w;

    tw_config_init(&cfg, TW_HIER);
    w = tw_create(&cfg, NULL);
    tw_timer_init(&t, on_fire, NULL);
    if (!w || tw_schedule_after(w, &t, 5000000) != 0)
        return 1;
    if (tw_advance(w, 5000000) != 1 || fired != 1)
        return 2;
    tw_destroy(w);
    printf("installed timewheel %s works\n", tw_version_string());
    return 0;
}
PROG

# Only the purgatory's API, over a timer of the program's own: nothing in
# the program calls the core or the service.
cat > "$tmp/purgatory.c" <<'PROG'
#include <stdbool.h>
#include <stdio.h>
#include <timewheel/purgatory.h>

static int ready, done, armed;

static bool try_complete(struct tw_delayed *op, void *arg)
{
    (void)op;
    (void)arg;
    return ready;
}

static void on_complete(struct tw_delayed *op, void *arg)
{
    (void)op;
    (void)arg;
    done++;
}

static int arm(void *ctx, struct tw_delayed *op, uint64_t timeout_ns)
{
    (void)ctx;
    (void)op;
    (void)timeout_ns;
    armed++;
    return 0;
}

static void disarm(void *ctx, struct tw_delayed *op)
{
    (void)ctx;
    (void)op;
    armed--;
}

int main(void)
{
    const struct tw_purgatory_timer timer = {arm, disarm, NULL};
    const struct tw_key key = {"topic-0", 7};
    struct tw_purgatory_config cfg;
    struct tw_purgatory *p;
    struct tw_delayed op;

    tw_purgatory_config_init(&cfg);
    cfg.timer = &timer;
    p = tw_purgatory_create(&cfg, NULL);
    tw_delayed_init(&op, try_complete, on_complete, NULL, NULL);
    if (!p || tw_purgatory_watch(p, &op, &key, 1, 1000000) != 0)
        return 1;
    ready = 1;
    if (tw_purgatory_check(p, "topic-0", 7) != 1 || done != 1 || armed != 0)
        return 2;
    if (tw_purgatory_destroy(p) != 0)
        return 3;
    printf("installed purgatory works alone\n");
    return 0;
}
PROG

# build NAME SOURCE FLAGS...: compile with -Werror, as a user's program.
build() {
    out=$1 src=$2
    shift 2
    cc -std=c11 -Wall -Werror -o "$tmp/$out" "$tmp/$src" "$@"
}

# 1. A prefix of one's own: the documented commands, and nothing else.
own="$tmp/own"
make -s --no-print-directory install PREFIX="$own" SAN= >/dev/null
export PKG_CONFIG_PATH="$own/lib/pkgconfig"
unset LD_LIBRARY_PATH
# shellcheck disable=SC2046 # pkg-config output is meant to be split
build core core.c $(pkg-config --cflags --libs timewheel)
"$tmp/core"
# shellcheck disable=SC2046
build purgatory purgatory.c $(pkg-config --cflags --libs timewheel-purgatory)
"$tmp/purgatory"
# The purgatory's library alone on the command line: the other two are
# found through its run path, not the program's.
build purgatory_alone purgatory.c -I"$own/include" -L"$own/lib" \
    -ltimewheel-purgatory -Wl,-rpath,"$own/lib"
"$tmp/purgatory_alone"

# 2. /usr/local, staged: the flags, then a program against the staged copy.
stage="$tmp/stage"
make -s --no-print-directory install PREFIX=/usr/local DESTDIR="$stage" SAN= \
    >/dev/null
export PKG_CONFIG_PATH="$stage/usr/local/lib/pkgconfig"
flags=$(pkg-config --cflags --libs timewheel)
want="-I/usr/local/include -L/usr/local/lib -ltimewheel -Wl,-rpath,/usr/local/lib"
[ "$(echo $flags)" = "$want" ] || fail "/usr/local: '$flags', not '$want'"
# shellcheck disable=SC2046
build staged core.c $(PKG_CONFIG_SYSROOT_DIR="$stage" pkg-config --cflags \
    --libs timewheel)
LD_LIBRARY_PATH="$stage/usr/local/lib" "$tmp/staged" >/dev/null

# 3. /usr, staged: no run path.
make -s --no-print-directory install PREFIX=/usr DESTDIR="$tmp/usr" SAN= \
    >/dev/null
export PKG_CONFIG_PATH="$tmp/usr/usr/lib/pkgconfig"
flags=$(pkg-config --libs timewheel-purgatory)
case "$flags" in *rpath*) fail "/usr: a run path in '$flags'" ;; esac

# 4. Uninstall.
make -s --no-print-directory uninstall PREFIX="$own"
[ -z "$(find "$own" -type f)" ] || fail "uninstall left $(find "$own" -type f)"
echo "install test: passed (own prefix, purgatory alone, /usr/local, /usr)"
