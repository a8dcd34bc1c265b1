# timewheel: build, test, install.
#
#   make                  the libraries under build/ (compiler and the libraries
#                         they link; installs nothing)
#   make test             install missing Debian packages, build, run all tests
#   make check T=PATTERN  only the Criterion tests whose suite/name match
#                         PATTERN (a glob: T='hier/*', T='*/rearm*'), no
#                         packaging tests; T empty runs every Criterion test
#   make test SAN=address,undefined   the same under the sanitizers
#   make ALLOC=libc ...   the system allocator instead of jemalloc
#   make BUILD=dir ...    build somewhere other than build/
#   make install PREFIX=/usr/local    headers, libraries, pkg-config files
#   make bench            the comparative benchmark (bench/README.md)
#   make deps             install the Debian packages the build and tests need
#
# The layers are rooms of lib/ (lib/README.md), each built into a library of
# its own so that a user links only what the layer needs:
#   core       libtimewheel             the allocator (jemalloc by default)
#   service    libtimewheel-service     the core, threads, liburcu
#   loop       libtimewheel-loop        the core (event-loop helpers)
#   purgatory  libtimewheel-purgatory   the core, the service, threads

PREFIX ?= /usr/local
ALLOC ?= jemalloc
SAN ?=
CC ?= cc
OPT ?= -O2 -g
BUILD ?= build

# Each variant builds in its own folder so they never mix objects.
comma := ,
VARIANT := $(if $(SAN),san-$(subst $(comma),-,$(SAN)),default)$(if $(filter libc,$(ALLOC)),-libc,)
B := $(BUILD)/$(VARIANT)

WARN := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Wpointer-arith -Wundef -Werror
SANFLAGS := $(if $(SAN),-fsanitize=$(SAN) -fno-omit-frame-pointer \
            -fno-sanitize-recover=all,)
ALLOCDEF := $(if $(filter libc,$(ALLOC)),-DTW_ALLOC_LIBC,)
ALLOCLIB := $(if $(filter libc,$(ALLOC)),,-ljemalloc)
CPPFLAGS_LIB := -Iinclude -DTW_BUILDING -D_POSIX_C_SOURCE=200809L $(ALLOCDEF)
CFLAGS_LIB := $(WARN) $(OPT) $(SANFLAGS) -fPIC -fvisibility=hidden

# The layers' rules come first; plain make still means all.
.DEFAULT_GOAL := all

# ---- the layers ------------------------------------------------------------
# For each layer: its library's name, the layers below it that it links, and
# the outside libraries it needs. Listed bottom-up.
# A layer joins the build once its folder holds code.
LAYERS := core service $(foreach l,loop purgatory,$(if $(wildcard lib/$(l)/*.c),$(l)))
NAME_core := timewheel
NEEDS_core :=
EXT_core := $(ALLOCLIB)
NAME_service := timewheel-service
NEEDS_service := core
EXT_service := -lurcu-common -lpthread
NAME_loop := timewheel-loop
NEEDS_loop := core
EXT_loop :=
NAME_purgatory := timewheel-purgatory
NEEDS_purgatory := core service
EXT_purgatory := -lpthread
DESC_core := hierarchical and hashed timing wheels for C
DESC_service := a thread-safe timer service over timewheel
DESC_loop := helpers to drive timewheel from an event loop
DESC_purgatory := delayed operations watched by keys, over timewheel

LIB_HDR := $(wildcard lib/*/*.h) include/timewheel.h $(wildcard include/timewheel/*.h)

# $(call layer_rules,L): objects, static and shared library of layer L. A
# layer's files see its own folder's private headers and the public ones.
define layer_rules
SRC_$(1) := $$(sort $$(wildcard lib/$(1)/*.c))
OBJ_$(1) := $$(patsubst lib/%.c,$$(B)/lib/%.o,$$(SRC_$(1)))
A_$(1) := $$(B)/lib$$(NAME_$(1)).a
SO_$(1) := $$(B)/lib$$(NAME_$(1)).so
$$(A_$(1)): $$(OBJ_$(1))
	rm -f $$@
	ar rcs $$@ $$^
$$(SO_$(1)): $$(OBJ_$(1)) $$(foreach n,$$(NEEDS_$(1)),$$(SO_$$(n)))
	$$(CC) -shared $$(SANFLAGS) -Wl,-soname,lib$$(NAME_$(1)).so.0 -o $$@ \
	    $$(OBJ_$(1)) -L$$(B) $$(foreach n,$$(NEEDS_$(1)),-l$$(NAME_$$(n))) \
	    $$(EXT_$(1))
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rules,$(l))))

$(B)/lib/%.o: lib/%.c $(LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_LIB) -I$(<D) $(CFLAGS_LIB) -c $< -o $@

# Every layer's archive, top layer first (link order), and every outside
# library they need: what a program linking the whole library statically
# passes to the linker (the benchmarks and the tests do).
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
STATIC := $(foreach l,$(call reverse,$(LAYERS)),$(A_$(l)))
SHARED := $(foreach l,$(LAYERS),$(SO_$(l)))
LDLIBS_LIB := $(sort $(foreach l,$(LAYERS),$(EXT_$(l))))

# ---- tests -----------------------------------------------------------------
# One Criterion binary; tests/<layer>/test_<concept>.c mirror the rooms.
TEST_SRC := $(sort $(wildcard tests/*/test_*.c)) tests/model.c tests/util.c
TEST_BIN := $(B)/tests/twtest
TEST_CFLAGS := $(WARN) $(OPT) $(SANFLAGS) -Iinclude -Ilib/core -Itests \
               -D_POSIX_C_SOURCE=200809L $(ALLOCDEF)

# Debian packages: the libraries' own, then what the tests need.
DEPS_CORE := libjemalloc-dev liburcu-dev pkg-config libcriterion-dev
DEPS_EXTRA ?=

.PHONY: all lib test test-run check deps install uninstall clean
all: lib
lib: $(STATIC) $(SHARED)

$(TEST_BIN): $(TEST_SRC) $(wildcard tests/*.h) $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $(TEST_SRC) $(STATIC) -lcriterion $(LDLIBS_LIB) -lm

# The packaging tests (pkg-config build of an installed copy, the README
# example) run first, so that Criterion's summary is the last thing printed.
test: deps
	@$(MAKE) --no-print-directory test-run

test-run: $(TEST_BIN)
	sh tests/install_test.sh
	sh tests/readme_test.sh
	$(TEST_BIN) $(TEST_ARGS)

# One suite or test by name, nothing else: make check T='hier/*'.
check: $(TEST_BIN)
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
PC_VERSION = $(shell sed -n 's/^\#define TW_VERSION_STRING "\(.*\)"/\1/p' include/timewheel/core.h)
pc_text = prefix=$(PREFIX)\nincludedir=$${prefix}/include\nlibdir=$${prefix}/lib\n\nName: $(NAME_$(1))\nDescription: $(DESC_$(1))\nVersion: $(PC_VERSION)\nRequires: $(foreach n,$(NEEDS_$(1)),$(NAME_$(n)))\nCflags: -I$${includedir}\nLibs: -L$${libdir} -l$(NAME_$(1))\nLibs.private: $(EXT_$(1))\n
PCDIR = $(DESTDIR)$(PREFIX)/lib/pkgconfig

install: lib
	install -d $(DESTDIR)$(PREFIX)/include/timewheel $(PCDIR)
	install -m 644 include/timewheel.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/timewheel/*.h $(DESTDIR)$(PREFIX)/include/timewheel/
	$(foreach l,$(LAYERS),\
	install -m 644 $(A_$(l)) $(DESTDIR)$(PREFIX)/lib/ && \
	install -m 755 $(SO_$(l)) $(DESTDIR)$(PREFIX)/lib/lib$(NAME_$(l)).so.0 && \
	ln -sf lib$(NAME_$(l)).so.0 $(DESTDIR)$(PREFIX)/lib/lib$(NAME_$(l)).so && \
	printf '$(call pc_text,$(l))' > $(PCDIR)/$(NAME_$(l)).pc;)

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/include/timewheel
	rm -f $(DESTDIR)$(PREFIX)/include/timewheel.h
	$(foreach l,$(LAYERS),rm -f $(DESTDIR)$(PREFIX)/lib/lib$(NAME_$(l)).a \
	    $(DESTDIR)$(PREFIX)/lib/lib$(NAME_$(l)).so \
	    $(DESTDIR)$(PREFIX)/lib/lib$(NAME_$(l)).so.0 $(PCDIR)/$(NAME_$(l)).pc;)

clean:
	rm -rf $(BUILD)

# Later parts of the project add their own targets here.
-include bench/bench.mk
-include bench/service/service.mk
-include bench/netty/netty.mk
-include tests/extra.mk
-include docs/examples/examples.mk
-include tests/mosquitto/mosquitto.mk
