# timewheel: build, test, install.
#
#   make                  static and shared library under build/
#   make test             install missing Debian packages, build, run tests
#   make test SAN=address,undefined   the same under the sanitizers
#   make ALLOC=libc ...   the system allocator instead of jemalloc
#   make install PREFIX=/usr/local    header, libraries, timewheel.pc
#   make bench            the comparative benchmark (see bench/bench.mk)
#   make deps             install the Debian packages the build needs

PREFIX ?= /usr/local
ALLOC ?= jemalloc
SAN ?=
CC ?= cc
OPT ?= -O2 -g

# Each variant builds in its own folder so they never mix objects.
comma := ,
VARIANT := $(if $(SAN),san-$(subst $(comma),-,$(SAN)),default)$(if $(filter libc,$(ALLOC)),-libc,)
B := build/$(VARIANT)

WARN := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Wpointer-arith -Wundef -Werror
SANFLAGS := $(if $(SAN),-fsanitize=$(SAN) -fno-omit-frame-pointer \
            -fno-sanitize-recover=all,)
ALLOCDEF := $(if $(filter libc,$(ALLOC)),-DTW_ALLOC_LIBC,)
ALLOCLIB := $(if $(filter libc,$(ALLOC)),,-ljemalloc)
CPPFLAGS_LIB := -Iinclude -Ilib -DTW_BUILDING -D_POSIX_C_SOURCE=200809L $(ALLOCDEF)
CFLAGS_LIB := $(WARN) $(OPT) $(SANFLAGS) -fPIC -fvisibility=hidden
LDLIBS_LIB := $(ALLOCLIB) -lurcu-common -lpthread

LIB_SRC := $(sort $(wildcard lib/*.c))
LIB_OBJ := $(patsubst lib/%.c,$(B)/lib/%.o,$(LIB_SRC))
LIB_HDR := $(wildcard lib/*.h) include/timewheel.h
STATIC := $(B)/libtimewheel.a
SHARED := $(B)/libtimewheel.so

TEST_SRC := $(sort $(wildcard tests/test_*.c)) tests/model.c tests/util.c
TEST_BIN := $(B)/tests/twtest
TEST_CFLAGS := $(WARN) $(OPT) $(SANFLAGS) -Iinclude -Ilib -D_POSIX_C_SOURCE=200809L $(ALLOCDEF)

# Debian packages: what the library and its tests need.
DEPS_CORE := libjemalloc-dev libcriterion-dev pkg-config liburcu-dev
DEPS_EXTRA ?=

.PHONY: all lib test test-run deps install uninstall clean
all: deps
	@$(MAKE) --no-print-directory lib
lib: $(STATIC) $(SHARED)

$(B)/lib/%.o: lib/%.c $(LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_LIB) $(CFLAGS_LIB) -c $< -o $@

$(STATIC): $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(SHARED): $(LIB_OBJ)
	$(CC) -shared $(SANFLAGS) -Wl,-soname,libtimewheel.so.0 -o $@ $^ $(LDLIBS_LIB)

$(TEST_BIN): $(TEST_SRC) tests/model.h tests/util.h $(STATIC)
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

# The pkg-config file names the prefix, so it is written at install time.
PC_VERSION = $(shell sed -n 's/^\#define TW_VERSION_STRING "\(.*\)"/\1/p' include/timewheel.h)
define PC_TEXT
prefix=$(PREFIX)
includedir=$${prefix}/include
libdir=$${prefix}/lib

Name: timewheel
Description: hierarchical and hashed timing wheels for C
Version: $(PC_VERSION)
Cflags: -I$${includedir}
Libs: -L$${libdir} -ltimewheel
Libs.private: $(LDLIBS_LIB)
endef
export PC_TEXT

install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/timewheel.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(STATIC) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED) $(DESTDIR)$(PREFIX)/lib/libtimewheel.so.0
	ln -sf libtimewheel.so.0 $(DESTDIR)$(PREFIX)/lib/libtimewheel.so
	printf '%s\n' "$$PC_TEXT" > $(DESTDIR)$(PREFIX)/lib/pkgconfig/timewheel.pc

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/timewheel.h \
	    $(DESTDIR)$(PREFIX)/lib/libtimewheel.a \
	    $(DESTDIR)$(PREFIX)/lib/libtimewheel.so \
	    $(DESTDIR)$(PREFIX)/lib/libtimewheel.so.0 \
	    $(DESTDIR)$(PREFIX)/lib/pkgconfig/timewheel.pc

clean:
	rm -rf build

# Later parts of the project add their own targets here.
-include bench/bench.mk
-include bench/service/service.mk
-include tests/extra.mk
