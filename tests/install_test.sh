#!/bin/sh
# Install the library into a temporary prefix, build a small program against
# it with nothing but `pkg-config --cflags --libs timewheel`, and run it.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
make -s --no-print-directory install PREFIX="$tmp/usr" SAN= >/dev/null
cat > "$tmp/prog.c" <<'PROG'
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
export PKG_CONFIG_PATH="$tmp/usr/lib/pkgconfig"
# shellcheck disable=SC2046 # pkg-config output is meant to be split
cc -std=c11 -Wall -Werror -o "$tmp/prog" "$tmp/prog.c" \
    $(pkg-config --cflags --libs timewheel)
LD_LIBRARY_PATH="$tmp/usr/lib" "$tmp/prog"
make -s --no-print-directory uninstall PREFIX="$tmp/usr"
test ! -e "$tmp/usr/include/timewheel.h"
echo "install test: passed"
