#!/bin/sh
# Configure (once) and build an nng tree made by tree.sh, with its tests:
# cmake -G Ninja -DNNG_TESTS=ON, optimised (-O2 -g) but with nng's
# assertions (NNI_ASSERT) kept on, so that one build serves nng's own
# tests (make nng-test) and the benchmark (make nng-bench). The patched
# tree finds timewheel through PKG_CONFIG_PATH, set by the caller.
#
#   build.sh TREE JOBS [TARGET]   the log goes to TREE/build.log; TARGET
#                                  (ninja's, default all): nng, the library
#                                  alone; configure: cmake's step alone
set -eu
tree=$1 jobs=$2 target=${3:-all}
log=$tree/build.log
{
    if [ ! -f "$tree/build/build.ninja" ]; then
        cmake -S "$tree" -B "$tree/build" -G Ninja -DNNG_TESTS=ON \
            -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g"
    fi
    [ "$target" = configure ] || ninja -C "$tree/build" -j"$jobs" "$target"
} > "$log" 2>&1 || { tail -30 "$log"; echo "build.sh: building $tree failed (log: $log)" >&2; exit 1; }
