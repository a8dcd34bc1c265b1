# Eclipse Mosquitto 2.0.20 with its keepalive, will delay and session expiry
# timers on timewheel (issue 18; docs/brokers.md). Included by the top
# Makefile. Nothing of Mosquitto is in this tree: the source comes from
# MOSQUITTO_SRC (its .tar.gz or a checkout), the patch series from
# docs/examples/mosquitto/, and everything is built under build/mosquitto/.
#
#   make mosquitto        the stock and the patched broker side by side
#                         (build/mosquitto/stock, build/mosquitto/patched),
#                         the patched one linking an install of this tree
#                         (build/mosquitto/timewheel) through pkg-config
#   make mosquitto-test   all of it, on both brokers: Mosquitto's unit tests,
#                         its 181 broker scripts (tests/mosquitto/suite.sh),
#                         our timing tests (tests/mosquitto/timing.sh: the
#                         stock broker must fail them, the patched pass);
#                         about 17 minutes on 2 cores (15.6 for the tests
#                         on 2026-11-26)
#   make mosquitto-ci     the part CI runs on the patched broker: the unit
#                         tests, the timer-related broker scripts and a smoke
#                         of the rest (MQ_CI_SCRIPTS), our timing tests
#   make mosquitto-bench  stock against patched in one run, 10^4 and
#                         5 x 10^4 clients (bench/mosquitto/bench.sh)
#   make mosquitto-check  the patch series applies cleanly (make test runs
#                         it; without the source it says so and skips)
#
# Without MOSQUITTO_SRC the targets say what to set and stop (CI's and make
# test's parts skip with that message instead).

MOSQUITTO_SRC ?= ../shared/vendor/mosquitto-2.0.20.tar.gz
MQ_DIR := $(BUILD)/mosquitto
MQ_PREFIX := $(abspath $(MQ_DIR)/timewheel)
MQ_STOCK := $(MQ_DIR)/stock
MQ_PATCHED := $(MQ_DIR)/patched
MQ_PATCHES := $(sort $(wildcard docs/examples/mosquitto/*.patch))
MQ_LOAD := $(MQ_DIR)/mqttload
DEPS_MOSQUITTO := libssl-dev libcjson-dev libcunit1-dev python3-psutil \
                  util-linux iproute2 patch
MQ_JOBS ?= 2

# Mosquitto's own make, without this Makefile's command-line variables
# (BUILD, SAN, ...), which MAKEFLAGS would hand down to it.
MQ_MAKE := env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -j$(MQ_JOBS) WITH_DOCS=no
# The patched broker finds timewheel through pkg-config and at run time
# through an RPATH (not RUNPATH: libtimewheel-loop's own dependency on
# libtimewheel must be found from the same directory too). LDFLAGS goes
# through the environment, so that Mosquitto's makefiles still add theirs
# (the unit tests add -coverage).
MQ_PATCHED_MAKE := PKG_CONFIG_PATH=$(MQ_PREFIX)/lib/pkgconfig \
    LDFLAGS="-Wl,-rpath,$(MQ_PREFIX)/lib -Wl,--disable-new-dtags" $(MQ_MAKE)

MQ_NO_SRC := no Mosquitto source at MOSQUITTO_SRC=$(MOSQUITTO_SRC): \
set MOSQUITTO_SRC to Mosquitto 2.0.20 (its .tar.gz or a checkout)

# The timer-related scripts of Mosquitto's suite (keepalive, wills, session
# expiry, persistence of sessions), then one script of each other group.
MQ_CI_SCRIPTS := \
    01-connect-max-keepalive.py 12-prop-server-keepalive.py \
    05-session-expiry-v5.py 05-clean-session-qos1.py \
    07-will-delay.py 07-will-delay-reconnect.py 07-will-delay-recover.py \
    07-will-delay-session-expiry.py 07-will-delay-session-expiry2.py \
    07-will-delay-invalid-573191.py 07-will-takeover.py \
    07-will-reconnect-1273.py 07-will-qos0.py 07-will-disconnect-with-will.py \
    02-subpub-recover-subscriptions.py 11-persistent-subscription.py \
    11-persistent-subscription-v5.py 11-message-expiry.py \
    01-connect-take-over.py 02-subpub-qos1.py 03-publish-qos2.py \
    04-retain-qos0.py 06-bridge-b2br-disconnect-qos1.py 09-plugin-tick.py \
    10-listener-mount-point.py 13-malformed-publish-v5.py 14-dynsec-client.py

.PHONY: mosquitto mosquitto-build mosquitto-tw mosquitto-test \
        mosquitto-test-run mosquitto-ci mosquitto-ci-run mosquitto-bench \
        mosquitto-bench-run mosquitto-check

# ---- building ----------------------------------------------------------------

mosquitto:
	@test -e "$(MOSQUITTO_SRC)" || { echo "mosquitto: $(MQ_NO_SRC)"; exit 1; }
	@$(MAKE) --no-print-directory deps DEPS_EXTRA="$(DEPS_MOSQUITTO)"
	@$(MAKE) --no-print-directory mosquitto-build

# This tree, installed with the system allocator: linked with jemalloc,
# libtimewheel would bring it into the broker and replace the broker's
# malloc, and the comparison with the stock broker would measure that.
mosquitto-tw:
	@$(MAKE) -s --no-print-directory install ALLOC=libc SAN= \
	    PREFIX=$(MQ_PREFIX) >/dev/null

$(MQ_LOAD): bench/mosquitto/mqttload.c
	@mkdir -p $(@D)
	$(CC) $(WARN) -O2 -g -o $@ $<

mosquitto-build: mosquitto-tw $(MQ_LOAD)
	sh tests/mosquitto/tree.sh $(MOSQUITTO_SRC) $(MQ_STOCK)
	sh tests/mosquitto/tree.sh $(MOSQUITTO_SRC) $(MQ_PATCHED) $(MQ_PATCHES)
	$(MQ_MAKE) -C $(MQ_STOCK) binary > $(MQ_DIR)/stock-build.log 2>&1 \
	    || { tail -20 $(MQ_DIR)/stock-build.log; exit 1; }
	$(MQ_PATCHED_MAKE) -C $(MQ_PATCHED) binary > $(MQ_DIR)/patched-build.log \
	    2>&1 || { tail -20 $(MQ_DIR)/patched-build.log; exit 1; }
	@echo "mosquitto: $(MQ_STOCK)/src/mosquitto and $(MQ_PATCHED)/src/mosquitto"

# ---- Mosquitto's tests and ours --------------------------------------------------

# $(call mq_unit,TREE,MAKE): Mosquitto's unit tests (CUnit), the summary.
mq_unit = $(2) -C $(1)/test/unit test > $(1)/unit.log 2>&1 \
    || { tail -30 $(1)/unit.log; exit 1; }; \
    echo "unit tests of $(1):"; grep -A4 '^Run Summary' $(1)/unit.log \
    | grep 'tests' | sed 's/^/   /'

mosquitto-test: mosquitto
	@$(MAKE) --no-print-directory mosquitto-test-run

mosquitto-test-run:
	@$(call mq_unit,$(MQ_STOCK),$(MQ_MAKE))
	@$(call mq_unit,$(MQ_PATCHED),$(MQ_PATCHED_MAKE))
	$(MQ_MAKE) -C $(MQ_STOCK)/test/broker test-compile >/dev/null
	$(MQ_PATCHED_MAKE) -C $(MQ_PATCHED)/test/broker test-compile >/dev/null
	sh tests/mosquitto/suite.sh $(MQ_STOCK) $(MQ_DIR)/suite-stock.txt
	sh tests/mosquitto/suite.sh $(MQ_PATCHED) $(MQ_DIR)/suite-patched.txt
	sh tests/mosquitto/compare.sh $(MQ_DIR)/suite-stock.txt \
	    $(MQ_DIR)/suite-patched.txt
	sh tests/mosquitto/timing.sh $(MQ_LOAD) $(MQ_STOCK)/src/mosquitto fail
	sh tests/mosquitto/timing.sh $(MQ_LOAD) $(MQ_PATCHED)/src/mosquitto pass

# CI: the patched broker only (the stock one's failures are shown by
# mosquitto-test), a few minutes on 2 cores.
mosquitto-ci:
	@if test -e "$(MOSQUITTO_SRC)"; then \
	    $(MAKE) --no-print-directory deps DEPS_EXTRA="$(DEPS_MOSQUITTO)" && \
	    $(MAKE) --no-print-directory mosquitto-ci-run; \
	else echo "mosquitto-ci: skipped: $(MQ_NO_SRC)"; fi

mosquitto-ci-run: mosquitto-tw $(MQ_LOAD)
	sh tests/mosquitto/tree.sh $(MOSQUITTO_SRC) $(MQ_PATCHED) $(MQ_PATCHES)
	$(MQ_PATCHED_MAKE) -C $(MQ_PATCHED) binary > $(MQ_DIR)/patched-build.log \
	    2>&1 || { tail -20 $(MQ_DIR)/patched-build.log; exit 1; }
	@$(call mq_unit,$(MQ_PATCHED),$(MQ_PATCHED_MAKE))
	$(MQ_PATCHED_MAKE) -C $(MQ_PATCHED)/test/broker test-compile >/dev/null
	sh tests/mosquitto/suite.sh $(MQ_PATCHED) $(MQ_DIR)/suite-ci.txt \
	    $(MQ_CI_SCRIPTS)
	@! grep -q '^FAIL' $(MQ_DIR)/suite-ci.txt || \
	    { echo "mosquitto-ci: a broker script failed"; exit 1; }
	sh tests/mosquitto/timing.sh $(MQ_LOAD) $(MQ_PATCHED)/src/mosquitto pass

# ---- the benchmark ---------------------------------------------------------------

mosquitto-bench: mosquitto
	sh bench/mosquitto/bench.sh $(MQ_LOAD) $(MQ_STOCK)/src/mosquitto \
	    $(MQ_PATCHED)/src/mosquitto

# ---- make test: the series applies ------------------------------------------------

mosquitto-check:
	@if test -e "$(MOSQUITTO_SRC)"; then \
	    sh tests/mosquitto/tree.sh $(MOSQUITTO_SRC) $(MQ_DIR)/check \
	        $(MQ_PATCHES) && rm -rf $(MQ_DIR)/check && \
	    echo "mosquitto-check: the $(words $(MQ_PATCHES)) patches apply cleanly"; \
	else echo "mosquitto-check: skipped: $(MQ_NO_SRC)"; fi

test-run: mosquitto-check
