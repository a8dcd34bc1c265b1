# nng 1.12.0 (nanomsg-next-gen, the messaging library under NanoMQ) with its
# aio expire queues on timewheel (issue 31; docs/brokers.md, "nng").
# Included by the top Makefile. Nothing of nng is in this tree: the source
# comes from NNG_SRC (its .tar.gz or a checkout), the patch series from
# docs/examples/nng/ (applied with git am), and everything is built under
# build/nng/.
#
#   make nng          the stock and the patched library side by side
#                     (build/nng/stock, build/nng/patched), each with its
#                     tests, the patched one linking an install of this
#                     tree (build/nng/timewheel) through pkg-config
#   make nng-test     nng's own ctest on both (tests/nng/ctest.sh): the
#                     same tests must pass on both; the two that need the
#                     internet are excluded by name (NNG_CTEST_EXCLUDE);
#                     failures are run again on both builds alike and
#                     reported as flakes when they pass.
#   make nng-ci       CI's: the patched build's ctest, with the stock build
#                     only configured for its list of tests and built only
#                     when a test fails (tests/nng/ci.sh); a skip without
#                     NNG_SRC
#   make nng-bench    stock against patched in one run (bench/nng/bench.sh;
#                     also the first patch alone, build/nng/fix, whose
#                     library it builds once): the figures of
#                     docs/brokers.md, into build/nng/bench/ (12 minutes
#                     on 2026-11-28 on the loaded machine, with the first
#                     build of build/nng/fix; the runs alone about 5);
#                     NNG_BENCH_RT=1 make nng-bench-run: the same under
#                     SCHED_FIFO, into build/nng/bench-rt/
#   make nng-check    the patch series applies with git am (make test runs
#                     it; without the source it says so and skips)
#
# Without NNG_SRC the targets say what to set and stop (make test's part
# skips with that message instead).

NNG_SRC ?= ../shared/vendor/nng-1.12.0.tar.gz
NNG_DIR := $(BUILD)/nng
NNG_PREFIX := $(abspath $(NNG_DIR)/timewheel)
NNG_STOCK := $(NNG_DIR)/stock
NNG_PATCHED := $(NNG_DIR)/patched
# The first patch alone (the expire loop's wait), for the benchmark.
NNG_FIX := $(NNG_DIR)/fix
NNG_PATCHES := $(sort $(wildcard docs/examples/nng/*.patch))
DEPS_NNG := cmake ninja-build pkg-config git
DEPS_NNG_BENCH := python3 gnuplot-nox
NNG_JOBS ?= 2
NNG_BENCH := bench/nng/nngbench.c

NNG_NO_SRC := no nng source at NNG_SRC=$(NNG_SRC): set NNG_SRC to nng \
1.12.0 (its .tar.gz, e.g. from https://github.com/nanomsg/nng/archive/refs/tags/v1.12.0.tar.gz, or a checkout)

.PHONY: nng nng-build nng-build-patched nng-tw nng-test nng-test-run nng-ci nng-bench \
        nng-bench-run nng-check

# ---- building ----------------------------------------------------------------

nng:
	@test -e "$(NNG_SRC)" || { echo "nng: $(NNG_NO_SRC)"; exit 1; }
	@$(MAKE) --no-print-directory deps DEPS_EXTRA="$(DEPS_NNG)"
	@$(MAKE) --no-print-directory nng-build

# This tree, installed with the system allocator, as for Mosquitto: linked
# with jemalloc, libtimewheel would replace nng's malloc, and the
# comparison with the stock library would measure that.
nng-tw:
	@$(MAKE) -s --no-print-directory install ALLOC=libc SAN= \
	    PREFIX=$(NNG_PREFIX) >/dev/null

# A tree is made again only when the source or the series changes; the
# builds are incremental (ninja), so the tests and the benchmark reuse them.
$(NNG_STOCK)/.tree: $(NNG_SRC) tests/nng/tree.sh
	sh tests/nng/tree.sh $(NNG_SRC) $(NNG_STOCK)
	@touch $@

$(NNG_PATCHED)/.tree: $(NNG_SRC) $(NNG_PATCHES) tests/nng/tree.sh
	sh tests/nng/tree.sh $(NNG_SRC) $(NNG_PATCHED) $(NNG_PATCHES)
	@touch $@

$(NNG_FIX)/.tree: $(NNG_SRC) $(NNG_PATCHES) tests/nng/tree.sh
	sh tests/nng/tree.sh $(NNG_SRC) $(NNG_FIX) $(firstword $(NNG_PATCHES))
	@touch $@

nng-build: nng-build-patched $(NNG_STOCK)/.tree
	sh tests/nng/build.sh $(NNG_STOCK) $(NNG_JOBS)
	@echo "nng: $(NNG_STOCK)/build and $(NNG_PATCHED)/build"

nng-build-patched: nng-tw $(NNG_PATCHED)/.tree
	PKG_CONFIG_PATH=$(NNG_PREFIX)/lib/pkgconfig \
	    sh tests/nng/build.sh $(NNG_PATCHED) $(NNG_JOBS)

# ---- nng's own tests ---------------------------------------------------------

nng-test: nng
	@$(MAKE) --no-print-directory nng-test-run

nng-test-run:
	sh tests/nng/ctest.sh $(NNG_STOCK) $(NNG_PATCHED) $(NNG_DIR)

# CI: tests/nng/ci.sh, or a line saying why it was skipped.
nng-ci:
	@if test -e "$(NNG_SRC)"; then \
	    $(MAKE) --no-print-directory deps DEPS_EXTRA="$(DEPS_NNG)" && \
	    $(MAKE) --no-print-directory nng-build-patched $(NNG_STOCK)/.tree && \
	    NNG_JOBS=$(NNG_JOBS) sh tests/nng/ci.sh $(NNG_STOCK) $(NNG_PATCHED) $(NNG_DIR); \
	else echo "nng-ci: skipped: $(NNG_NO_SRC)"; fi

# ---- the benchmark ---------------------------------------------------------------

nng-bench: nng
	@$(MAKE) --no-print-directory deps DEPS_EXTRA="$(DEPS_NNG_BENCH)"
	@$(MAKE) --no-print-directory nng-bench-run

nng-bench-run: $(NNG_FIX)/.tree
	sh tests/nng/build.sh $(NNG_FIX) $(NNG_JOBS) nng
	PKG_CONFIG_PATH=$(NNG_PREFIX)/lib/pkgconfig sh bench/nng/bench.sh \
	    $(NNG_BENCH) $(NNG_STOCK) $(NNG_PATCHED) $(NNG_DIR)/bench $(NNG_FIX)

# ---- make test: the series applies ------------------------------------------------

nng-check:
	@if test -e "$(NNG_SRC)"; then \
	    sh tests/nng/tree.sh $(NNG_SRC) $(NNG_DIR)/check $(NNG_PATCHES) && \
	    rm -rf $(NNG_DIR)/check && \
	    echo "nng-check: the $(words $(NNG_PATCHES)) patches apply with git am"; \
	else echo "nng-check: skipped: $(NNG_NO_SRC)"; fi

test-run: nng-check
