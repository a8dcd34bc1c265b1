# The durable timer store's crash harness (tests/store/crash.c), included
# by the top Makefile.
#
#   make store-crash        1,000 SIGKILLs of a writer at random moments, a
#                           check of the guarantees after each (a few min)
#   make store-crash-quick  25 of them (seconds): `make test` runs it
#
# It is built in the variant being tested (SAN=... included), against the
# static archives, and runs in a scratch directory under /tmp.

STORE_CRASH_BIN := $(B)/tests/storecrash
STORE_CRASH_KILLS ?= 1000
STORE_CRASH_QUICK_KILLS ?= 25
STORE_CRASH_SEED ?= 20261126
DEPS_CORE += librocksdb-dev

.PHONY: store-crash store-crash-quick

$(STORE_CRASH_BIN): tests/store/crash.c include/timewheel/store.h $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ tests/store/crash.c $(STATIC) $(LDLIBS_LIB)

# The earliest kill after a writer's start, in ms: under a sanitizer a
# writer takes 100-200 ms to open the store, and a kill before that tests
# little.
STORE_CRASH_MIN_MS ?= $(if $(SAN),150,20)

# $(call store_crash,KILLS): run the harness in a fresh directory.
store_crash = d=$$(mktemp -d /tmp/twstore-crash-XXXXXX) && \
	$(STORE_CRASH_BIN) $$d/store $(1) $(STORE_CRASH_SEED) \
	    $(STORE_CRASH_MIN_MS); rc=$$?; \
	rm -rf $$d; exit $$rc

store-crash: $(STORE_CRASH_BIN)
	@$(call store_crash,$(STORE_CRASH_KILLS))

store-crash-quick: $(STORE_CRASH_BIN)
	@$(call store_crash,$(STORE_CRASH_QUICK_KILLS))

# Before the Criterion suite, so that its summary is still printed last.
test-run: store-crash-quick
test-build: $(STORE_CRASH_BIN)
store-crash-quick: | $(TEST_BIN)

# `make memcheck` (tests/extra.mk) builds the test binary in
# $(BUILD)/memcheck and asks every process to free every heap block; the
# mere loading of librocksdb leaves some of its static objects reachable at
# exit (14 kB in 375 blocks), so that binary is built without the store:
# its suites are left out of memcheck anyway (ASan and TSan run them).
ifeq ($(B),$(BUILD)/memcheck)
TEST_SRC := $(filter-out tests/store/%,$(TEST_SRC))
TEST_OBJ := $(filter-out $(B)/tests/obj/store/%,$(TEST_OBJ))
STATIC := $(filter-out $(A_store),$(STATIC))
LDLIBS_LIB := $(filter-out -lrocksdb -Wl$(comma)--no-as-needed$(comma)-lstdc++,$(LDLIBS_LIB))
endif

# The I/O-error shim of the suite store_diskfull (tests/store/eioshim.c),
# LD_PRELOADed into a child of the test binary, which finds it beside
# itself: built with the test binary, never linked into it.
STORE_EIOSHIM := $(B)/tests/eioshim.so

$(STORE_EIOSHIM): tests/store/eioshim.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -fPIC -shared -o $@ $< -ldl

$(TEST_BIN): | $(STORE_EIOSHIM)
