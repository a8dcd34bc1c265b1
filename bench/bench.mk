# The comparative benchmark, included by the top Makefile. bench/README.md
# indexes the sources (main.c and the sub-folders harness, impl, workloads,
# report) and says how to add a workload.
#
#   make bench          install what it needs, build build/bench/twbench, run
#                       the service benchmark (bench/service, 10 s), then the
#                       quick suite (about 2 min 30 s on 2 cores); prints a
#                       progress line on a terminal, nothing else until the
#                       summary table at the end
#   make bench-full     the same at full sizes, up to 10^7 timers, and the
#                       scale and stall workloads up to 10^8 (long)
#   make bench-scale    only those two: the cost of each operation from 10^3
#                       to 10^8 pending (hier, hashed, heap, libev), and the
#                       longest advance call at 10^6 and 10^7, 3 repetitions,
#                       320 s per cell (25 min on 2026-11-26, niced, loaded)
#   make bench-smoke    build twbench and run it once on tiny sizes (CI)
#   make bench-docs     copy the last full run's plots into docs/img/
#
# twbench and the library are built with the same optimisation (-O2) and the
# project's warnings; libuv, libevent and libev come from Debian. BENCH_ARGS
# passes extra options, e.g. make bench BENCH_ARGS="-w churn -i hier,libuv".

BENCH_DIR := $(BUILD)/bench
BENCH_BIN := $(BENCH_DIR)/twbench
# twbench's sources: main.c and the sub-folders (bench/README.md); the
# service's benchmark (bench/service/) builds on its own.
BENCH_PARTS := harness impl workloads report
BENCH_SRC := bench/main.c $(sort $(foreach d,$(BENCH_PARTS),$(wildcard bench/$(d)/*.c)))
BENCH_OBJ := $(patsubst bench/%.c,$(BENCH_DIR)/obj/%.o,$(BENCH_SRC))
BENCH_OPT := -O2 -g
BENCH_CFLAGS := $(WARN) $(BENCH_OPT) -Iinclude $(addprefix -Ibench/,$(BENCH_PARTS)) \
                -D_POSIX_C_SOURCE=200809L
# Recorded in the report: the optimisation of twbench and of the library.
BENCH_FLAGS_STR := twbench $(BENCH_OPT), libtimewheel $(OPT) -fPIC, both -std=c11
# Debian's jemalloc is the program's malloc, which the other implementations
# allocate from; the library has its own, private (lib/core/jemalloc.c).
BENCH_LIBS := $(STATIC) -luv -levent_core -lev $(LDLIBS_LIB) -ljemalloc -ldl -lm
BENCH_ARGS ?=

DEPS_BENCH := libuv1-dev libevent-dev libev-dev gnuplot-nox
bench bench-full bench-smoke bench-scale: DEPS_EXTRA = $(DEPS_BENCH)

.PHONY: bench bench-full bench-smoke bench-scale bench-build bench-docs

# First the threaded service's own benchmark (bench/service/): throughput,
# lateness and idle wake-ups, into service.csv (its table into service.txt),
# which twbench then puts in report.md beside the wheels' results. Quiet
# builds; twbench shows a progress line on a terminal and ends with one
# table (every table: BENCH_ARGS=--tables, or report.md).
bench: deps
	@$(MAKE) -s --no-print-directory -j$(JOBS) bench-build svcbench
	@mkdir -p $(BENCH_DIR)
	@rm -f $(BENCH_DIR)/service.csv
	@echo "bench: the service (svcbench --quick, about 10 s): $(BENCH_DIR)/service.csv"
	@$(SVC_BENCH_BIN) --quick --csv $(BENCH_DIR)/service.csv \
	    > $(BENCH_DIR)/service.txt
	@$(BENCH_BIN) --suite quick --out $(BENCH_DIR) $(BENCH_ARGS)

bench-full: deps
	@$(MAKE) -s --no-print-directory -j$(JOBS) bench-build svcbench
	@mkdir -p $(BENCH_DIR)/full
	@rm -f $(BENCH_DIR)/full/service.csv
	@echo "bench: the service (svcbench): $(BENCH_DIR)/full/service.csv"
	@$(SVC_BENCH_BIN) --csv $(BENCH_DIR)/full/service.csv \
	    > $(BENCH_DIR)/full/service.txt
	@$(BENCH_BIN) --suite full --out $(BENCH_DIR)/full $(BENCH_ARGS)

# A repetition at 10^8 takes minutes: a cell gets 320 s, not the full
# suite's 60 (where the 10^8 cells are noted as over the budget).
SCALE_BUDGET ?= 320
bench-scale: deps
	@$(MAKE) --no-print-directory -j$(JOBS) bench-build
	@mkdir -p $(BENCH_DIR)/scale
	$(BENCH_BIN) --suite full -w scale,stall -i hier,hashed,heap,libev \
	    --budget $(SCALE_BUDGET) --reps 3 --out $(BENCH_DIR)/scale $(BENCH_ARGS)

bench-smoke: deps
	@$(MAKE) --no-print-directory -j$(JOBS) bench-build
	$(BENCH_BIN) --suite smoke --out $(BENCH_DIR)/smoke --quiet $(BENCH_ARGS)

bench-build: $(BENCH_BIN)
DEP_FILES += $(BENCH_OBJ:.o=.d)

# The library is built first by its own rules; twbench links it statically.
# Headers: derived by the compiler (DEPFLAGS, the top Makefile).
$(BENCH_DIR)/obj/%.o: bench/%.c bench/bench.mk
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) $(BENCH_DEFS) $(DEPFLAGS) -c $< -o $@

$(BENCH_DIR)/obj/harness/machine.o: BENCH_DEFS = -DBENCH_CFLAGS='"$(BENCH_FLAGS_STR)"'

$(BENCH_BIN): $(BENCH_OBJ) $(STATIC)
	$(CC) -o $@ $(BENCH_OBJ) $(BENCH_LIBS)

# The plots in docs/ come from the full suite (BENCH_DOCS_SRC to change).
BENCH_DOCS_SRC ?= $(BENCH_DIR)/full
bench-docs:
	@mkdir -p docs/img
	cp $(BENCH_DOCS_SRC)/plots/*.png docs/img/
