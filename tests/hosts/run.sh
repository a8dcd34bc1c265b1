#!/bin/sh
# The host matrix (a step of make test): the installed default build of
# every layer, loaded the ways hosts load libraries. For each host, the
# same program is built without timewheel too, and the line it prints
# (tests/hosts/host.c: which object the host's malloc, free and operator
# new come from, its thread's jemalloc arena and the number of arenas where
# the host runs on jemalloc) must be the same with timewheel: the library
# leaves the process as it found it. With timewheel, a timer of each layer
# (core, loop, service, purgatory, store) must fire.
#
#   sh tests/hosts/run.sh [MAKE ARGS...]
#
# Hosts: C linked through pkg-config; C++; C with RocksDB's C API linked
# before and after timewheel, and after the core alone (only the core's
# timer then); C++ with the core alone; C on tcmalloc, mimalloc, jemalloc (linked, and
# LD_PRELOAD); a static C program through pkg-config --static alone; a
# CMake project through find_package(timewheel); Python's ctypes.CDLL; and
# dlopen/dlclose of each layer's library 100 times in one process
# (tests/hosts/dlcycle.c).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "host matrix: $*" >&2; exit 1; }

prefix="$tmp/prefix"
make -s --no-print-directory install PREFIX="$prefix" SAN= "$@" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
unset LD_LIBRARY_PATH LD_PRELOAD
libdir="$prefix/lib"
tw="timewheel-store timewheel-purgatory timewheel-loop"
# shellcheck disable=SC2046,SC2086 # pkg-config output is meant to be split
twflags="-DTW $(pkg-config --cflags --libs $tw)"
src="$here/host.c"
multi=$(gcc -print-multiarch)
jemalloc_so="/usr/lib/$multi/libjemalloc.so.2"
passed=0

# host NAME COMPILER [ENV] -- BARE_FLAGS -- TW_FLAGS: build the host twice,
# run both, compare their last lines; the timewheel one must report every
# layer's timer.
host() {
    name=$1 cc=$2 env=$3
    shift 3
    [ "$1" = -- ] && shift
    bare="" twf=""
    while [ "$1" != -- ]; do bare="$bare $1"; shift; done
    shift
    twf="$*"
    # shellcheck disable=SC2086
    $cc -O1 -o "$tmp/$name-bare" "$src" $bare -ldl ||
        fail "$name: the host without timewheel does not build"
    # shellcheck disable=SC2086
    $cc -O1 -o "$tmp/$name-tw" "$src" $twf -ldl ||
        fail "$name: the host with timewheel does not build"
    # shellcheck disable=SC2086
    want=$(env $env "$tmp/$name-bare" | tail -n 1) ||
        fail "$name: the host without timewheel failed"
    # shellcheck disable=SC2086
    out=$(env $env "$tmp/$name-tw") || fail "$name: the host failed: $out"
    got=$(echo "$out" | tail -n 1)
    for l in ${layers:-core loop service purgatory store}; do
        echo "$out" | grep -qx "$l timer fired" || fail "$name: no $l timer"
    done
    # A C host without a C++ library has no operator new; timewheel's store
    # brings libstdc++'s, never one of its own.
    case $want in *new=none*)
        got=$(echo "$got" | sed 's/new=libstdc++\.so\.6/new=none/') ;;
    esac
    [ "$got" = "$want" ] || fail "$name: '$got' with timewheel, '$want' without"
    echo "  $name: $got"
    passed=$((passed + 1))
}

echo "host matrix: against $prefix"
host c cc "" -- -- $twflags
host c++ "c++ -x c++" "" -- -- $twflags
host rocksdb-first cc "" -- -DROCKS -lrocksdb -- -DROCKS -lrocksdb $twflags
host rocksdb-last cc "" -- -DROCKS -lrocksdb -- $twflags -DROCKS -lrocksdb
host c++-rocksdb "c++ -x c++" "" -- -DROCKS -lrocksdb -- -DROCKS $twflags -lrocksdb
# The core alone with RocksDB after it, as a C broker using RocksDB's C API
# links (with Debian's jemalloc as the core's allocator, this aborted
# before main: jemalloc's operator new took libstdc++'s place).
# shellcheck disable=SC2046
layers=core
host rocksdb-core cc "" -- -DROCKS -lrocksdb -- -DTW -DTW_CORE_ONLY \
    $(pkg-config --cflags --libs timewheel) -DROCKS -lrocksdb
# shellcheck disable=SC2046
host c++-core "c++ -x c++" "" -- -- -DTW -DTW_CORE_ONLY \
    $(pkg-config --cflags --libs timewheel)
layers=
host tcmalloc cc "" -- -ltcmalloc -- -ltcmalloc $twflags
host tcmalloc-last cc "" -- -ltcmalloc -- $twflags -ltcmalloc
host mimalloc cc "" -- -lmimalloc -- -lmimalloc $twflags
host jemalloc cc "" -- -ljemalloc -- -ljemalloc $twflags
host jemalloc-last cc "" -- -ljemalloc -- $twflags -ljemalloc
host jemalloc-preload cc "LD_PRELOAD=$jemalloc_so" -- -- $twflags
host c++-jemalloc-preload "c++ -x c++" "LD_PRELOAD=$jemalloc_so" -- -- $twflags

# A static program through pkg-config --static alone (every layer's
# archive, RocksDB's and the C++ runtime's included), and it must hold no
# dynamic symbol of jemalloc's or an operator new of ours.
# shellcheck disable=SC2046,SC2086
cc -O1 -o "$tmp/static" "$src" -DTW -static $(pkg-config --cflags --static \
    --libs $tw) -ldl 2>"$tmp/static.log" ||
    { cat "$tmp/static.log" >&2; fail "static: pkg-config --static does not link"; }
out=$("$tmp/static")
echo "$out" | grep -q "store timer fired" || fail "static: $out"
# dladdr() knows no objects in a static program: the symbol table says
# whose malloc it is (the C library's: malloc at __libc_malloc's address).
addr() { nm "$tmp/static" | awk -v s="$1" '$3 == s { print $1 }'; }
[ -n "$(addr malloc)" ] && [ "$(addr malloc)" = "$(addr __libc_malloc)" ] ||
    fail "static: malloc is not the C library's"
echo "  static (pkg-config --static): $(echo "$out" | tail -n 1)"
passed=$((passed + 1))

# CMake: find_package(timewheel) and the imported targets.
mkdir -p "$tmp/cmake"
cat >"$tmp/cmake/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(host C)
find_package(timewheel 0.1 REQUIRED)
add_executable(host $src)
target_compile_definitions(host PRIVATE TW)
target_link_libraries(host PRIVATE timewheel::store timewheel::purgatory
                      timewheel::loop \${CMAKE_DL_LIBS})
CMAKE
(cd "$tmp/cmake" && cmake -S . -B b -DCMAKE_PREFIX_PATH="$prefix" \
    >cmake.log 2>&1 && cmake --build b >>cmake.log 2>&1) ||
    { cat "$tmp/cmake/cmake.log" >&2; fail "cmake: find_package(timewheel)"; }
out=$("$tmp/cmake/b/host")
echo "$out" | grep -q "store timer fired" || fail "cmake: $out"
echo "  cmake find_package: $(echo "$out" | tail -n 1)"
passed=$((passed + 1))

# Python: ctypes.CDLL of every library, a wheel's timer fired through it.
python3 "$here/ctypes_host.py" "$libdir" || fail "python ctypes"
passed=$((passed + 1))

# dlopen/dlclose 100 times of each layer's library.
# shellcheck disable=SC2046
cc -O1 -o "$tmp/dlcycle" "$here/dlcycle.c" -I"$prefix/include" -ldl
for l in core loop service purgatory store; do
    "$tmp/dlcycle" "$libdir" $l || fail "dlcycle $l"
    passed=$((passed + 1))
done
echo "host matrix: $passed passed, 0 failed"
