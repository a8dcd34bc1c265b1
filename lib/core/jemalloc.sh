#!/bin/sh
# The library's private jemalloc (docs/design.md, "The allocator"): Debian's
# own jemalloc source package, configured so that nothing of it is visible
# outside libtimewheel, and built as a PIC static archive that the core's
# library links in.
#
#   lib/core/jemalloc.sh SRCDIR OBJDIR
#
# SRCDIR receives `apt-get source jemalloc` (the version of the suite's
# binary package; a deb-src entry for the same suite is added when the
# machine has none, as root); OBJDIR the configured tree, whose
# lib/libjemalloc_pic.a and include/jemalloc/jemalloc.h the Makefile uses.
#
# The options, each for a reason:
#   --with-jemalloc-prefix=tw_je_  the API is tw_je_malloc(), tw_je_mallctl()...:
#                                  no name of the host's malloc or jemalloc
#   --with-private-namespace=tw_   internal names tw_je_*, apart from any
#                                  other jemalloc linked into the same program
#   --without-export               every symbol hidden: nothing enters the
#                                  global scope of a process that loads us
#   --disable-cxx                  no operator new/delete of ours
#   --disable-initial-exec-tls     the thread state in dynamic TLS, so that
#                                  dlopen() never needs static TLS space; with
#                                  -mtls-dialect=gnu2 (TLS descriptors) a
#                                  library loaded at start-up still reads it
#                                  at about initial-exec's cost
#   --with-lg-page=12 --with-lg-hugepage=21 (x86; 16 elsewhere)  Debian's
#                                  own choices (debian/rules), so that the
#                                  figures stay comparable with its package
#   --disable-libdl                its background threads start through
#                                  pthread_create() as linked, not one looked
#                                  up with dlsym(RTLD_NEXT): no -ldl needed
#   -g0                            no debug information of jemalloc's own
#                                  in libtimewheel: the ABI dump (tests/abi/, make
#                                  abi-check) then holds the library's types
#                                  only, the same on every machine
#   no --enable-prof               Debian's has it; a private heap has no
#                                  one to profile it with jeprof
set -eu
src=$1 obj=$2
mkdir -p "$src" "$obj"
src=$(cd "$src" && pwd) obj=$(cd "$obj" && pwd)

tree() { find "$src" -maxdepth 2 -name configure -path '*jemalloc-*' | head -n 1; }

fetch() {
    if ! apt-get source --print-uris jemalloc >/dev/null 2>&1 ||
        [ -z "$(apt-get source --print-uris jemalloc 2>/dev/null | grep dsc)" ]; then
        [ "$(id -u)" = 0 ] || {
            echo "jemalloc.sh: no deb-src entry; as root, run make deps" >&2
            exit 1
        }
        list=/etc/apt/sources.list.d/debian.sources
        [ -f "$list" ] || { echo "jemalloc.sh: no $list to copy" >&2; exit 1; }
        sed 's/^Types: deb$/Types: deb-src/' "$list" \
            >/etc/apt/sources.list.d/timewheel-deb-src.sources
        apt-get update -q >/dev/null
    fi
    command -v dpkg-source >/dev/null || {
        echo "jemalloc.sh: dpkg-source missing (make deps installs dpkg-dev)" >&2
        exit 1
    }
    (cd "$src" && apt-get source -q jemalloc >/dev/null 2>&1) || {
        echo "jemalloc.sh: apt-get source jemalloc failed" >&2
        exit 1
    }
}

[ -n "$(tree)" ] || fetch
conf=$(tree)
[ -n "$conf" ] || { echo "jemalloc.sh: no jemalloc source in $src" >&2; exit 1; }

case $(uname -m) in
i?86 | x86_64) page=12 tls=-mtls-dialect=gnu2 ;;
*) page=16 tls= ;;
esac
cd "$obj"
if [ ! -f Makefile ]; then
    "$conf" --with-jemalloc-prefix=tw_je_ --with-private-namespace=tw_ \
        --without-export --disable-cxx --disable-initial-exec-tls \
        --with-lg-page=$page --with-lg-hugepage=21 --disable-doc --disable-libdl \
        EXTRA_CFLAGS="$tls -g0" >configure.log 2>&1 || {
        tail -n 20 configure.log >&2
        exit 1
    }
fi
make -s -j2 lib/libjemalloc_pic.a >build.log 2>&1 || {
    tail -n 20 build.log >&2
    exit 1
}
