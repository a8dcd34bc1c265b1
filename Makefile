# timewheel: build, test, install.
#
#   make                  the libraries under build/ (compiler and the libraries
#                         they link; installs nothing)
#   make test             install missing Debian packages, build, run all tests
#   make check T=PATTERN  only the Criterion tests whose suite/name match
#                         PATTERN (a glob: T='core_hier/*', T='*/rearm*'), no
#                         packaging tests; T empty runs every Criterion test
#   make test SAN=address,undefined   the same under the sanitizers (the
#                         packaging tests and the examples, which run the
#                         default build, only in the default variant)
#   make ALLOC=libc ...   the system allocator instead of jemalloc
#   make BUILD=dir ...    build somewhere other than build/
#   make JOBS=n ...       compile with n jobs (default: the machine's cores)
#   make install PREFIX=/usr/local    headers, libraries, pkg-config files
#   make bench            the comparative benchmark (bench/README.md)
#   make deps             install the Debian packages the build and tests need
#   make format           clang-format every C file; make format-check: say
#                         which differ and fail (CI)
#   The fragments included at the end add more targets; their list is there.
#
# The layers are rooms of lib/ (lib/README.md), each built into a library of
# its own so that a user links only what the layer needs:
#   core       libtimewheel             the allocator (jemalloc by default)
#   service    libtimewheel-service     the core, threads, liburcu
#   loop       libtimewheel-loop        the core (event-loop helpers)
#   purgatory  libtimewheel-purgatory   the core, the service, threads
#   store      libtimewheel-store       the core, RocksDB, threads

PREFIX ?= /usr/local
ALLOC ?= jemalloc
SAN ?=
CC ?= cc
OPT ?= -O2 -g
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

# Each variant builds in its own folder so they never mix objects.
comma := ,
VARIANT := $(if $(SAN),san-$(subst $(comma),-,$(SAN)),default)$(if $(filter libc,$(ALLOC)),-libc,)
B := $(BUILD)/$(VARIANT)

WARN := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Wpointer-arith -Wundef -Werror
SANFLAGS := $(if $(SAN),-fsanitize=$(SAN) -fno-omit-frame-pointer \
            -fno-sanitize-recover=all,)
ALLOCDEF := $(if $(filter libc,$(ALLOC)),-DTW_ALLOC_LIBC,)
# The library's own jemalloc (lib/core/jemalloc.c, lib/core/jemalloc.sh):
# Debian's source package, built once per BUILD folder (every variant
# links the same archive), its symbols hidden and prefixed tw_je_, linked
# into the core's library alone. Nothing of it is a link flag of a program.
JE_SRC := $(BUILD)/jemalloc-src
JE_OBJ := $(BUILD)/jemalloc
JE_A := $(JE_OBJ)/lib/libjemalloc_pic.a
JE_H := $(JE_OBJ)/include/jemalloc/jemalloc.h
JE_INC := $(if $(filter libc,$(ALLOC)),,-I$(JE_OBJ)/include)
JE_LINK := $(if $(filter libc,$(ALLOC)),,$(JE_A))
# Thread-locals in the default TLS model, which never stops a dlopen()
# (initial-exec needs static TLS space a library loaded later may not
# find); with TLS descriptors (x86) a library loaded at start-up reads them
# at about initial-exec's cost. Not under the sanitizers, whose runtimes
# find a thread's TLS by the classic model.
TLSFLAGS := $(if $(SAN),,$(if $(filter x86_64 i%86,$(shell uname -m)),-mtls-dialect=gnu2,))
# lib/common/: the layers' shared private toolbox (header-only, never
# installed), reachable from every layer's files and the tests.
CPPFLAGS_COMMON := -Ilib/common
CPPFLAGS_LIB := -Iinclude $(CPPFLAGS_COMMON) -DTW_BUILDING \
                -D_POSIX_C_SOURCE=200809L $(ALLOCDEF) $(JE_INC)
CFLAGS_LIB := $(WARN) $(OPT) $(SANFLAGS) $(TLSFLAGS) -fPIC -fvisibility=hidden

# The layers' rules come first; plain make still means all.
.DEFAULT_GOAL := all

# ---- the layers ------------------------------------------------------------
# For each layer: its library's name, the layers below it that it links, and
# the outside libraries it needs. Listed bottom-up.
# A layer joins the build once its folder holds code.
LAYERS := core service $(foreach l,loop purgatory store,$(if $(wildcard lib/$(l)/*.c),$(l)))
NAME_core := timewheel
NEEDS_core :=
# jemalloc's own needs (its threads; libm for its statistics' figures)
EXT_core := -lpthread -lm
NAME_service := timewheel-service
NEEDS_service := core
EXT_service := -lurcu-common -lpthread -lm
NAME_loop := timewheel-loop
NEEDS_loop := core
EXT_loop :=
NAME_purgatory := timewheel-purgatory
NEEDS_purgatory := core service
EXT_purgatory := -lpthread
NAME_store := timewheel-store
NEEDS_store := core
# libstdc++ named here, so that it comes before jemalloc (the core's need)
# in a program's symbol lookup order. Without it, a program linked against
# libtimewheel-store.so (docs/examples/broker_delayed.c) aborted in RocksDB's
# initialisation ("free(): invalid pointer"): the dynamic linker bound
# RocksDB's operator new to jemalloc's and its free() to the C library's.
EXT_store := -lrocksdb -Wl,--no-as-needed,-lstdc++ -lpthread -lm
# What librocksdb.a itself needs, for a static link (pkg-config --static):
# Debian's RocksDB is built with these compressors.
STATIC_store := -lsnappy -lgflags -lz -lbz2 -llz4 -lzstd -ldl
# A layer's needs in a static link (Libs.private): its EXT_ and STATIC_
# flags; the store's in link order (RocksDB, its compressors, then the C++
# runtime they all need).
PRIV = $(if $(PRIV_$(1)),$(PRIV_$(1)),$(EXT_$(1)) $(STATIC_$(1)))
PRIV_store := -lrocksdb $(STATIC_store) -lstdc++ -lpthread -lm
DESC_core := hierarchical and hashed timing wheels for C
DESC_service := a thread-safe timer service over timewheel
DESC_loop := helpers to drive timewheel from an event loop
DESC_purgatory := delayed operations watched by keys, over timewheel
DESC_store := delayed messages that survive a crash, over timewheel and RocksDB

# Every object's header dependencies are derived by the compiler (-MMD -MP:
# a .d file beside the object, and an empty rule per header so that a
# deleted header does not stop the build); the .d files are read at the end.
DEPFLAGS = -MMD -MP

# The core's library holds the private jemalloc (JE_A), all of it hidden
# (--exclude-libs: no symbol of the archive exported, whatever its
# visibility). It is never unloaded (-z nodelete): jemalloc keeps state a
# dlclose() cannot take back (a thread-specific key whose destructor is its
# code, its arenas' memory), so a dlclose() of the core leaves it mapped
# and the next dlopen() finds the same instance (docs/embedding.md,
# "dlclose"). The other layers unload normally.
PRIVATE_A_core := $(JE_LINK)
SO_FLAGS_core := $(if $(JE_LINK),-Wl$(comma)--exclude-libs$(comma)ALL -Wl$(comma)-z$(comma)nodelete,)
# libtimewheel.a holds the private jemalloc's objects too, so that a static
# link needs no archive of ours but the layers'. ar cannot add one archive
# to another; each object is added from a copy extracted once.
merge_archive = rm -rf $(1).x && mkdir -p $(1).x && cd $(1).x && ar x $(abspath $(2)) && \
	ar rs $(abspath $(1)) *.o >/dev/null && cd - >/dev/null && rm -rf $(1).x

$(JE_A) $(JE_H) &: lib/core/jemalloc.sh
	sh lib/core/jemalloc.sh $(JE_SRC) $(JE_OBJ)
	touch $(JE_A) $(JE_H)

# The version in the installed files' names (libtimewheel.so.0.1.0), from
# the core's header; the soname carries the major number alone.
SO_VERSION := $(shell sed -n 's/^\#define TW_VERSION_STRING "\(.*\)"/\1/p' include/timewheel/core.h)
SO_MAJOR := $(firstword $(subst ., ,$(SO_VERSION)))

# Each shared library finds the layers below it in its own folder ($ORIGIN),
# wherever they are installed: a program that links only the purgatory then
# starts without a run path to libtimewheel-service and libtimewheel, which
# only the purgatory's library needs.
SO_RUNPATH := -Wl,-rpath,'$$ORIGIN'

# $(call layer_rules,L): objects, static and shared library of layer L. A
# layer's files see its own folder's private headers, the shared toolbox
# (lib/common/, CPPFLAGS_COMMON) and the public ones.
define layer_rules
SRC_$(1) := $$(sort $$(wildcard lib/$(1)/*.c))
OBJ_$(1) := $$(patsubst lib/%.c,$$(B)/lib/%.o,$$(SRC_$(1)))
A_$(1) := $$(B)/lib$$(NAME_$(1)).a
SO_$(1) := $$(B)/lib$$(NAME_$(1)).so
$$(A_$(1)): $$(OBJ_$(1)) $$(PRIVATE_A_$(1))
	rm -f $$@
	ar rcs $$@ $$(OBJ_$(1))
	$$(if $$(PRIVATE_A_$(1)),$$(call merge_archive,$$@,$$(PRIVATE_A_$(1))))
# The Makefile too: a change of the link flags (SO_RUNPATH) relinks.
$$(SO_$(1)): $$(OBJ_$(1)) $$(PRIVATE_A_$(1)) $$(foreach n,$$(NEEDS_$(1)),$$(SO_$$(n))) Makefile
	$$(CC) -shared $$(SANFLAGS) -Wl,-soname,lib$$(NAME_$(1)).so.$$(SO_MAJOR) -o $$@ \
	    $$(OBJ_$(1)) $$(PRIVATE_A_$(1)) $$(SO_FLAGS_$(1)) -L$$(B) \
	    $$(foreach n,$$(NEEDS_$(1)),-l$$(NAME_$$(n))) \
	    $$(EXT_$(1)) $$(SO_RUNPATH) $$(if $$(SAN),,-Wl$$(comma)-z$$(comma)defs)
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rules,$(l))))
$(B)/lib/%.o: lib/%.c | $(if $(JE_LINK),$(JE_H))
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_LIB) -I$(<D) $(CFLAGS_LIB) $(DEPFLAGS) -c $< -o $@

# Every layer's archive, top layer first (link order), and every outside
# library they need: what a program linking the whole library statically
# passes to the linker (the benchmarks and the tests do).
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
STATIC := $(foreach l,$(call reverse,$(LAYERS)),$(A_$(l)))
SHARED := $(foreach l,$(LAYERS),$(SO_$(l)))
LDLIBS_LIB := $(sort $(foreach l,$(LAYERS),$(EXT_$(l))))

# Under TSan, tests/tsan.supp (races inside uninstrumented libraries) is
# added to whatever TSAN_OPTIONS the caller set (CI sets halt_on_error=1).
ifeq ($(SAN),thread)
# detect_deadlocks=0: every program here that forks (the fork tests, the
# store's crash harness) stops on TSan's own CHECK inside fork(), where the
# library's jemalloc takes more locks in its prefork handler than the
# lock-order detector allows (64); races are still reported.
export TSAN_OPTIONS := $(if $(TSAN_OPTIONS),$(TSAN_OPTIONS):)suppressions=$(CURDIR)/tests/tsan.supp:detect_deadlocks=0
endif

# ---- tests -----------------------------------------------------------------
# One Criterion binary; tests/<layer>/test_<concept>.c mirror the rooms, and
# each file's suites are named <layer>_<concept> (make check T='core_*/*').
TEST_SRC := $(sort $(wildcard tests/*/test_*.c)) tests/model.c tests/util.c
TEST_OBJ := $(patsubst tests/%.c,$(B)/tests/obj/%.o,$(TEST_SRC))
TEST_BIN := $(B)/tests/twtest
TEST_CFLAGS := $(WARN) $(OPT) $(SANFLAGS) -Iinclude $(CPPFLAGS_COMMON) -Ilib/core -Itests \
               -D_POSIX_C_SOURCE=200809L $(ALLOCDEF) $(JE_INC)

# Debian packages: the libraries' own, then what the tests need. A target
# that needs more sets DEPS_EXTRA for itself (make test: DEPS_EXAMPLES).
DEPS_CORE := dpkg-dev libjemalloc-dev liburcu-dev pkg-config libcriterion-dev
DEPS_EXTRA ?=
# The host matrix's hosts (tests/hosts/run.sh): C++, RocksDB (already the
# store's), tcmalloc, mimalloc, Debian's jemalloc, CMake, Python.
DEPS_HOSTS := g++ libgoogle-perftools-dev libmimalloc-dev libjemalloc-dev \
              cmake python3

.PHONY: all lib test test-build test-run check deps install uninstall clean
all: lib
lib: $(STATIC) $(SHARED)

$(B)/tests/obj/%.o: tests/%.c | $(if $(JE_LINK),$(JE_H))
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(TEST_BIN): $(TEST_OBJ) $(STATIC)
	$(CC) $(TEST_CFLAGS) -o $@ $(TEST_OBJ) $(STATIC) -lcriterion $(LDLIBS_LIB) -lm

# make test, in four steps: the packaging tests (tests/install_test.sh:
# installed copies built against through pkg-config, at a prefix of one's
# own and at /usr/local; tests/hosts/run.sh, the host matrix;
# tests/readme_test.sh: the README's example), the examples over real event
# loops (examples-run, docs/examples/examples.mk: libuv, libevent and epoll
# servers on 127.0.0.1, hence DEPS_EXAMPLES), then the Criterion suite,
# whose summary is the last thing printed. The first three install, build
# and run the default build whatever SAN says, so a sanitizer variant
# leaves them to the default one and runs the rest (the store's crash
# harness and the patch checks, added by their fragments, and the suite).
# The compile runs JOBS at once; the tests after it, one step at a time.
test: DEPS_EXTRA = $(DEPS_EXAMPLES) $(DEPS_HOSTS)
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) test-build
	@$(MAKE) --no-print-directory test-run

# What make test runs, built and not run (the fragments add their programs).
test-build: $(TEST_BIN)

test-run: $(TEST_BIN)
	$(if $(SAN),,sh tests/install_test.sh)
	$(if $(SAN),,sh tests/hosts/run.sh)
	$(if $(SAN),,sh tests/readme_test.sh)
	$(if $(SAN),,@$(MAKE) --no-print-directory examples-run)
	$(TEST_BIN) $(TEST_ARGS)

# One suite or test by name, nothing else: make check T='core_hier/*'.
check:
	@$(MAKE) --no-print-directory -j$(JOBS) $(TEST_BIN)
	$(TEST_BIN) $(if $(T),--filter '$(T)') $(TEST_ARGS)

# Install the Debian packages that are missing (as root), or say which.
deps:
	@missing=""; for p in $(DEPS_CORE) $(DEPS_EXTRA); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' \
	        || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ]; then \
	        echo "deps: installing$$missing"; \
	        export DEBIAN_FRONTEND=noninteractive; \
	        apt-get install -y -q $$missing >/dev/null 2>&1 || \
	        { apt-get update -q >/dev/null && apt-get install -y -q $$missing; }; \
	    else \
	        echo "deps: missing Debian packages:$$missing"; \
	        echo "deps: run as root: apt-get install$$missing"; exit 1; \
	    fi; \
	fi

# ---- install ---------------------------------------------------------------
# A pkg-config module per layer; each names the prefix, so it is written at
# install time. A layer's module requires the modules of the layers below.
# Outside /usr (where the loader looks anyway, and where Debian's policy
# wants no run paths) a module's Libs carry a run path to its libdir, so that
# `cc prog.c $(pkg-config --cflags --libs timewheel)` makes a program that
# starts, under /usr/local (no ldconfig needed) or any prefix of the user's.
# Libs.private lists everything a static link needs beyond the archives
# (`pkg-config --static --libs`: the store's RocksDB and its compressors,
# libstdc++, libm, threads), so that those flags alone link a program.
#
# LIBDIR: where the libraries, the .pc files (LIBDIR/pkgconfig) and the
# CMake package (LIBDIR/cmake/timewheel) go; a multiarch layout is
# make install PREFIX=/usr LIBDIR=/usr/lib/x86_64-linux-gnu. Each shared
# library is installed under its full version (libtimewheel.so.0.1.0),
# with the soname's link (.so.0) and the link-time name (.so).
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
# libdir as the .pc file writes it: relative to ${prefix} when under it.
PC_LIBDIR = $(if $(filter $(PREFIX)/%,$(LIBDIR)),$${prefix}/$(patsubst $(PREFIX)/%,%,$(LIBDIR)),$(LIBDIR))
PC_VERSION = $(SO_VERSION)
PC_RUNPATH = $(if $(filter /usr /usr/,$(PREFIX)),, -Wl$(comma)-rpath$(comma)$${libdir})
pc_text = prefix=$(PREFIX)\nincludedir=$${prefix}/include\nlibdir=$(PC_LIBDIR)\n\nName: $(NAME_$(1))\nDescription: $(DESC_$(1))\nVersion: $(PC_VERSION)\nRequires: $(foreach n,$(NEEDS_$(1)),$(NAME_$(n)))\nCflags: -I$${includedir}\nLibs: -L$${libdir} -l$(NAME_$(1))$(PC_RUNPATH)\nLibs.private: $(call PRIV,$(1))\n
PCDIR = $(DESTDIR)$(LIBDIR)/pkgconfig
CMAKEDIR = $(DESTDIR)$(LIBDIR)/cmake/timewheel
# The CMake package's templates (lib/cmake/), filled with the install's paths.
cmake_subst = sed -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(PREFIX)/include|' \
    -e 's|@VERSION@|$(SO_VERSION)|' -e 's|@LAYERS@|$(LAYERS)|' \
    $(foreach l,$(LAYERS),-e 's|@EXT_$(l)@|$(call PRIV,$(l))|')

install: lib
	install -d $(DESTDIR)$(PREFIX)/include/timewheel $(DESTDIR)$(LIBDIR) $(PCDIR) $(CMAKEDIR)
	install -m 644 include/timewheel.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/timewheel/*.h $(DESTDIR)$(PREFIX)/include/timewheel/
	$(foreach l,$(LAYERS),\
	install -m 644 $(A_$(l)) $(DESTDIR)$(LIBDIR)/ && \
	install -m 755 $(SO_$(l)) $(DESTDIR)$(LIBDIR)/lib$(NAME_$(l)).so.$(SO_VERSION) && \
	ln -sf lib$(NAME_$(l)).so.$(SO_VERSION) $(DESTDIR)$(LIBDIR)/lib$(NAME_$(l)).so.$(SO_MAJOR) && \
	ln -sf lib$(NAME_$(l)).so.$(SO_MAJOR) $(DESTDIR)$(LIBDIR)/lib$(NAME_$(l)).so && \
	printf '$(call pc_text,$(l))' > $(PCDIR)/$(NAME_$(l)).pc;)
	$(cmake_subst) lib/cmake/timewheelConfig.cmake.in > $(CMAKEDIR)/timewheelConfig.cmake
	$(cmake_subst) lib/cmake/timewheelConfigVersion.cmake.in > $(CMAKEDIR)/timewheelConfigVersion.cmake

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/include/timewheel $(CMAKEDIR)
	rm -f $(DESTDIR)$(PREFIX)/include/timewheel.h
	$(foreach l,$(LAYERS),rm -f $(DESTDIR)$(LIBDIR)/lib$(NAME_$(l)).a \
	    $(DESTDIR)$(LIBDIR)/lib$(NAME_$(l)).so \
	    $(DESTDIR)$(LIBDIR)/lib$(NAME_$(l)).so.$(SO_MAJOR) \
	    $(DESTDIR)$(LIBDIR)/lib$(NAME_$(l)).so.$(SO_VERSION) $(PCDIR)/$(NAME_$(l)).pc;)
	-rmdir $(PCDIR) $(DESTDIR)$(LIBDIR)/cmake 2>/dev/null

clean:
	rm -rf $(BUILD)

# ---- format ----------------------------------------------------------------
# Every C file of the tree against .clang-format, with the clang-format of
# Debian 12 (bookworm): another version formats some constructs differently,
# so the version is pinned and checked.
CLANG_FORMAT := clang-format-14
DEPS_FORMAT := clang-format-14
FORMAT_SRC = $(sort $(shell find lib include tests bench docs/examples \
                 -name '*.[ch]' -type f))
.PHONY: format format-check format-tool

format-tool:
	@$(MAKE) --no-print-directory deps DEPS_EXTRA="$(DEPS_FORMAT)"
	@$(CLANG_FORMAT) --version | grep -q 'version 14\.' || \
	    { echo "format: $(CLANG_FORMAT) is not version 14"; exit 1; }

format: format-tool
	$(CLANG_FORMAT) -i $(FORMAT_SRC)

# Fails, naming the files, when any file differs from what `make format`
# would write.
format-check: format-tool
	@bad=""; for f in $(FORMAT_SRC); do \
	    $(CLANG_FORMAT) --dry-run --Werror "$$f" >/dev/null 2>&1 || bad="$$bad $$f"; \
	done; \
	if [ -n "$$bad" ]; then \
	    echo "format-check: $$(echo $$bad | wc -w) files differ from" \
	         "$(CLANG_FORMAT) (run make format):"; \
	    for f in $$bad; do echo "  $$f"; done; exit 1; \
	fi; \
	echo "format-check: $(words $(FORMAT_SRC)) files match .clang-format"

# ---- the fragments ---------------------------------------------------------
# Each fragment adds targets of its own and variables they use; none changes
# how the libraries are built. All of them are always read.
#   bench/bench.mk             make bench, bench-full, bench-smoke (CI),
#                              bench-docs: the comparative benchmark, twbench
#   bench/service/service.mk   make svcbench, bench-service: the service's
#                              benchmark, which make bench runs first
#   bench/netty/netty.mk       make bench-netty: Netty's HashedWheelTimer
#                              beside the service (a JDK, not in CI)
#   tests/extra.mk             make fuzz, fuzz-merge, coverage, memcheck (CI),
#                              soak, purgatory-race
#   docs/examples/examples.mk  make examples, examples-run: the examples over
#                              libuv, libevent and epoll, a step of make test
#   tests/store/store.mk       make store-crash, store-crash-quick (a step of
#                              make test): SIGKILLs of a store writer
#   tests/store/replica/replica.mk  make store-failover, store-failover-quick:
#                              a store replicated through NATS JetStream
#   bench/store/store.mk       make bench-store (a step of make bench),
#                              bench-store-scale, bench-store-dbs
#   tests/mosquitto/mosquitto.mk  make mosquitto, mosquitto-test, mosquitto-ci
#                              (CI), mosquitto-bench, mosquitto-check (a step
#                              of make test): Mosquitto on timewheel
#   tests/abi/abi.mk           make abi-check (CI), abi-dump: the shared
#                              libraries' ABI against the dumps in tests/abi/
#   tests/nng/nng.mk           make nng, nng-test (CI), nng-bench, nng-check
#                              (a step of make test): nng's aio timers on
#                              timewheel
include bench/bench.mk
include bench/service/service.mk
include bench/netty/netty.mk
include tests/extra.mk
include docs/examples/examples.mk
include tests/store/store.mk
include tests/store/replica/replica.mk
include bench/store/store.mk
include tests/mosquitto/mosquitto.mk
include tests/abi/abi.mk
include tests/nng/nng.mk

# The header dependencies written by -MMD, of the objects above and of the
# fragments' (each adds its own to DEP_FILES); absent before the first
# build, hence -include.
DEP_FILES += $(foreach l,$(LAYERS),$(OBJ_$(l):.o=.d)) $(TEST_OBJ:.o=.d)
-include $(DEP_FILES)
# An object whose .d file is missing (built before -MMD, or the file
# deleted) has header dependencies nobody knows: it is rebuilt rather than
# trusted. Such stale objects of an older checkout once made `make check`
# run a purgatory built against an old struct layout.
UNTRACKED_OBJ := $(foreach d,$(DEP_FILES),$(if $(wildcard $(d)),,$(wildcard $(d:.d=.o))))
.PHONY: FORCE
FORCE:
$(UNTRACKED_OBJ): FORCE
