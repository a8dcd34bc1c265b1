# Testing tools beyond `make test` , included by the top Makefile.
# docs/testing.md says what each one checks and what it last measured.
#
#   make fuzz         the libFuzzer target under ASan+UBSan, one process per
#                     mode, FUZZ_SECONDS each (default 60), from the corpus
#                     in tests/fuzz/corpus; a failing input is saved there
#   make fuzz-merge   add to tests/fuzz/corpus the inputs of the last `make
#                     fuzz` that cover something the corpus does not
#   make coverage     line and branch coverage of lib/ over the whole suite
#                     (gcovr), built in build/coverage
#   make soak         millions of timers through both modes and the service
#                     for SOAK_SECONDS (default 180); exact accounting and
#                     memory back to its baseline (not in CI)
#   make memcheck     the core, loop and purgatory tests under memcheck: no error, no
#                     leak (JOBS runners at once: tests/memcheck.sh)
#   make circles      no two files of a room (a folder of lib/, bench/ or
#                     tests/) call into each other, read from their objects
#                     by tests/circles.sh; pairs judged inherent to a
#                     protocol are in tests/circles.allow with their reason
#                     (and no name defined by two layers)

.PHONY: fuzz fuzz-run fuzz-merge coverage coverage-run soak soak-run \
        memcheck memcheck-run circles circles-run

# ---- circles ---------------------------------------------------------------

# Every room whose objects the build makes: SRCDIR=OBJDIR for
# tests/circles.sh. twbench's parts need the benchmark's packages
# (DEPS_BENCH), hence the deps step.
CIRCLE_ROOMS = $(foreach l,$(LAYERS),lib/$(l)=$(B)/lib/$(l)) \
    $(foreach d,$(BENCH_PARTS),bench/$(d)=$(BENCH_DIR)/obj/$(d)) \
    bench/service=$(dir $(SVC_BENCH_BIN))obj-svc \
    $(foreach d,$(filter-out ./,$(sort $(dir $(patsubst tests/%,%,$(TEST_SRC))))),tests/$(d:/=)=$(B)/tests/obj/$(d:/=)) \
    tests=$(B)/tests/obj
# Rooms whose circles are known and owned by work in progress elsewhere:
# printed, not failed (none now: `make circles CIRCLES_KNOWN=lib/x`).
CIRCLES_KNOWN ?=

circles: DEPS_EXTRA = $(DEPS_BENCH)
circles: deps
	@$(MAKE) --no-print-directory -j$(JOBS) circles-run

circles-run: lib $(BENCH_BIN) $(SVC_BENCH_BIN) $(TEST_OBJ)
	sh tests/circles.sh -a tests/circles.allow \
	    $(foreach k,$(CIRCLES_KNOWN),-k $(k)) $(CIRCLE_ROOMS)
	@# One definition per internal name across the layers: a program that
	@# links the static archives gets only the first of two (the store's
	@# tw__fork_watch() once answered the service's calls, and a child of
	@# fork() saw its service as live).
	@dup=$$(for l in $(LAYERS); do nm $(B)/lib/$$l/*.o | \
	    awk -v l=$$l '$$2 ~ /^[TDBR]$$/ {print $$3, l}'; done | \
	    sort | awk '$$1 == p {print $$1 " (" pl ", " $$2 ")"} {p = $$1; pl = $$2}'); \
	if [ -n "$$dup" ]; then echo "symbols: defined in two layers: $$dup"; exit 1; fi; \
	echo "symbols: every external name of lib/ defined once"

# ---- fuzzing ---------------------------------------------------------------

FUZZ_SECONDS ?= 60
# Inputs longer than this are cut; the committed corpus stays far below it.
FUZZ_MAX_LEN ?= 2048
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_BIN := $(FUZZ_DIR)/fuzz_wheel
# The core only: the service needs threads and a clock, and has the soak.
FUZZ_LIB := $(SRC_core)
FUZZ_SRC := $(FUZZ_LIB) tests/model.c tests/fuzz/driver.c tests/fuzz/fuzz_wheel.c
FUZZ_OBJ := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(FUZZ_SRC))
DEP_FILES += $(FUZZ_OBJ:.o=.d)
# The system allocator, so that AddressSanitizer sees every block the wheel
# allocates (it cannot see inside jemalloc's mallocx).
FUZZ_CFLAGS := $(WARN) -O2 -g -fsanitize=fuzzer,address,undefined \
               -fno-sanitize-recover=all -fno-omit-frame-pointer \
               -fsanitize-coverage-ignorelist=tests/fuzz/ignore.txt \
               $(CPPFLAGS_LIB) -Ilib/core -DTW_ALLOC_LIBC -Itests -Itests/fuzz
DEPS_FUZZ := clang libclang-rt-dev

fuzz:
	@$(MAKE) --no-print-directory deps DEPS_EXTRA="$(DEPS_FUZZ)"
	@$(MAKE) --no-print-directory fuzz-run

# Headers: derived by the compiler (DEPFLAGS, the top Makefile).
$(FUZZ_DIR)/obj/%.o: %.c tests/fuzz/ignore.txt
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(FUZZ_BIN): $(FUZZ_OBJ)
	clang $(FUZZ_CFLAGS) -o $@ $(FUZZ_OBJ)

fuzz-run: $(FUZZ_BIN)
	sh tests/fuzz/run.sh $(FUZZ_BIN) $(FUZZ_SECONDS) $(FUZZ_MAX_LEN)

# Only inputs of at most 1 KB are merged, to keep the replay in `make test`
# (which also runs under the sanitizers and valgrind) within a few seconds.
fuzz-merge: $(FUZZ_BIN)
	$(FUZZ_BIN) -merge=1 -max_len=1024 tests/fuzz/corpus \
	    $(wildcard $(FUZZ_DIR)/corpus-*)
	@echo "fuzz-merge: $$(ls tests/fuzz/corpus | wc -l) inputs in tests/fuzz/corpus"

# ---- coverage --------------------------------------------------------------

COV_DIR := $(BUILD)/coverage
# -O0 so that every line and branch of the source maps to code; atomic
# counters, since the service's threads run the same code at once (plain
# ones lose updates and gcov then reports negative counts). The suite is run
# as `make test` runs it, the fuzz corpus replay included. Only lib/ is
# instrumented: the figures are the library's, not the tests'. TW_COVERAGE
# tells the tests' child_exit() (tests/util.c) to write a forked child's
# counters, which its _exit() would drop.
COV_OPT := -O0 -g --coverage -fprofile-update=atomic -fprofile-filter-files='^lib/' \
           -DTW_COVERAGE

# lib/ only, and only branches the compiler could not prove dead. Every
# report goes under $(COV_DIR): gcovr (5.2) replaces an output path that
# exists with a regular file, and once, given --txt /dev/null by root, it
# replaced the machine's /dev/null (issue 28). No target writes to a path it
# does not own; .ci/run checks the device after the whole run.
COV_GCOVR := gcovr --root . --filter 'lib/' --exclude-unreachable-branches \
             $(COV_DIR)

coverage:
	@$(MAKE) --no-print-directory deps DEPS_EXTRA="gcovr"
	@$(MAKE) --no-print-directory coverage-run

coverage-run:
	@$(MAKE) --no-print-directory B=$(COV_DIR) OPT="$(COV_OPT)" \
	    $(COV_DIR)/tests/twtest
	find $(COV_DIR) -name '*.gcda' -delete
	@# The figures are printed even when a test fails; make fails after.
	@rc=0; $(COV_DIR)/tests/twtest $(TEST_ARGS) || rc=$$?; \
	echo "== lines of lib/"; \
	$(COV_GCOVR) --sort-percentage; \
	echo "== branches of lib/"; \
	$(COV_GCOVR) --branches --sort-percentage; \
	$(COV_GCOVR) --html-details $(COV_DIR)/index.html; \
	echo "coverage: per-line report in $(COV_DIR)/index.html"; \
	$(COV_GCOVR) --print-summary --txt $(COV_DIR)/summary.txt; \
	[ $$rc -eq 0 ] || echo "coverage: the suite FAILED (exit $$rc)"; \
	exit $$rc

# ---- valgrind --------------------------------------------------------------

MEMCHECK_DIR := $(BUILD)/memcheck
# The core, loop and purgatory suites: the service's are timing tests that valgrind's slowdown
# would break, and TSan and the soak cover its threads.
# The store's (store*) are timing tests over RocksDB, far too slow under
# valgrind: ASan and the crash harness cover them.
# purgatory_stop/stop_is_not_starved_by_refused_watches needs 100 threads
# calling while stop runs, which valgrind's one-thread-at-a-time scheduler
# does not give (the test's own premise fails, not the library): ASan and
# TSan run it. purgatory_fork/*: the child of fork() leaves the copies it
# inherited to its exit, by contract (an inherited object cannot be freed
# safely there), which memcheck, following the child, reports as lost, and
# --error-exitcode turns into the child's failure; the default build, ASan
# and TSan run them.
MEMCHECK_EXCLUDE := ^(service|store)|^core_badinput_oom/|^purgatory_stop/stop_is_not_starved|^purgatory_fork/
# Random operations per differential test (the default is 180000).
MEMCHECK_OPS ?= 20000
# The system allocator, so that memcheck sees every block: jemalloc's
# mallocx() and sdallocx() are invisible to it.
MEMCHECK_VG := valgrind --trace-children=yes --leak-check=full \
               --show-leak-kinds=definite,indirect,possible \
               --errors-for-leak-kinds=definite,indirect,possible \
               --error-exitcode=99

memcheck:
	@$(MAKE) --no-print-directory deps DEPS_EXTRA="valgrind"
	@$(MAKE) --no-print-directory memcheck-run

# tests/memcheck.sh: JOBS runners at once, each given its share of the
# tests; every process's log must be clean.
memcheck-run:
	@$(MAKE) --no-print-directory -j$(JOBS) ALLOC=libc B=$(MEMCHECK_DIR) \
	    OPT="-O1 -g" $(MEMCHECK_DIR)/tests/twtest
	TW_OPS=$(MEMCHECK_OPS) sh tests/memcheck.sh $(MEMCHECK_DIR)/tests/twtest \
	    $(MEMCHECK_DIR)/vg $(JOBS) '$(MEMCHECK_EXCLUDE)' -- $(MEMCHECK_VG)

# ---- soak ------------------------------------------------------------------

SOAK_SECONDS ?= 180
SOAK_SEED ?= 20261122
SOAK_BIN := $(BUILD)/soak/soak
# Always the optimised jemalloc build: the soak reads jemalloc's statistics.
SOAK_LIB := $(BUILD)/default/libtimewheel-service.a $(BUILD)/default/libtimewheel.a

soak:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory soak-run

soak-run:
	@$(MAKE) --no-print-directory ALLOC=jemalloc SAN= $(SOAK_LIB)
	@mkdir -p $(dir $(SOAK_BIN))
	$(CC) $(WARN) -O2 -g -Iinclude -Itests -D_POSIX_C_SOURCE=200809L -o $(SOAK_BIN) \
	    tests/soak.c $(SOAK_LIB) -ljemalloc -lurcu-common -lpthread -lm
	$(SOAK_BIN) $(SOAK_SECONDS) $(SOAK_SEED)

# ---- purgatory race at full size -------------------------------------------
# The purgatory's race test (tests/purgatory/test_race.c) with the 10^6
# operations the purgatory's design asks for, optimised build, both expiry paths (worker and
# executor): about 9 s here. `make test` runs it with 40,000 so that it
# stays within seconds under TSan and valgrind.
PURGATORY_RACE_OPS ?= 1000000
.PHONY: purgatory-race
purgatory-race: $(TEST_BIN)
	TW_PURGATORY_OPS=$(PURGATORY_RACE_OPS) $(TEST_BIN) \
	    --filter 'purgatory_race/*'
