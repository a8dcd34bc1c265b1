# The durable timer store's benchmarks (bench/store/), included by the top
# Makefile.
#
#   make bench-store        storebench --n 1000000: durable schedules/s from
#                           one producer, bytes on disk per timer, restart
#                           time and RSS with 10^6 pending, deliveries/s of
#                           10^6 due at once (about 20 s); then replbench:
#                           the same schedules through a 3-node NATS
#                           JetStream cluster beside the store alone,
#                           interleaved, and a follower's apply rate
#                           (about 1 min); `make bench` runs it
#   make bench-store-scale  the same with 10^7 pending (about 2 min)
#   make bench-store-dbs    dbcmp: RocksDB, LMDB and SQLite (WAL) on the
#                           store's workload, the measurement that chose
#                           RocksDB (docs/store.md)

STORE_BENCH_BIN := $(BUILD)/bench/storebench
STORE_REPL_BIN := $(BUILD)/bench/replbench
STORE_DBCMP_BIN := $(BUILD)/bench/dbcmp
STORE_BENCH_DIR ?= /tmp/twstore-bench
DEPS_BENCH += liblmdb-dev libsqlite3-dev

.PHONY: bench-store bench-store-scale bench-store-dbs store-bench-build

# Always the optimised, unsanitised build, as the other benchmarks: the
# targets below build it through a make of that variant.
$(STORE_BENCH_BIN): bench/store/storebench.c bench/store/diskbytes.h \
                    bench/store/benchclock.h \
                    include/timewheel/store.h \
                    $(A_store) $(A_core)
	@mkdir -p $(@D)
	$(CC) $(WARN) -O2 -g -Iinclude -D_POSIX_C_SOURCE=200809L -o $@ $< \
	    $(A_store) $(A_core) $(EXT_core) $(EXT_store)

# The replicated rows (replbench): the store through a 3-node NATS
# JetStream cluster on 127.0.0.1 beside the store alone, interleaved.
$(STORE_REPL_BIN): bench/store/replbench.c bench/store/benchclock.h \
                   tests/store/replica/jsnode.c \
                   tests/store/replica/jsnode.h include/timewheel/store.h \
                   $(A_store) $(A_core)
	@mkdir -p $(@D)
	$(CC) $(WARN) -O2 -g -Iinclude -Itests/store/replica \
	    -D_POSIX_C_SOURCE=200809L -o $@ $< tests/store/replica/jsnode.c \
	    $(A_store) $(A_core) $(EXT_core) $(EXT_store) -lnats

store-bench-build:
	@$(MAKE) --no-print-directory -j$(JOBS) SAN= ALLOC=jemalloc $(STORE_BENCH_BIN) \
	    $(STORE_REPL_BIN)

$(STORE_DBCMP_BIN): bench/store/dbcmp.c bench/store/diskbytes.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror -O2 -g -o $@ $< \
	    -llmdb -lrocksdb -lsqlite3

bench-store: store-bench-build
	@mkdir -p $(BUILD)/bench
	$(STORE_BENCH_BIN) --n 1000000 --dir $(STORE_BENCH_DIR) \
	    --csv $(BUILD)/bench/store.csv
	$(STORE_REPL_BIN) --n 1000000 --reps 3 --dir $(STORE_BENCH_DIR)-repl

bench-store-scale: store-bench-build
	@mkdir -p $(BUILD)/bench
	$(STORE_BENCH_BIN) --n 10000000 --dir $(STORE_BENCH_DIR) \
	    --csv $(BUILD)/bench/store-scale.csv

bench-store-dbs: $(STORE_DBCMP_BIN)
	$(STORE_DBCMP_BIN) --n 200000 --batch 2000 --dir $(STORE_BENCH_DIR)-dbs

# The store's part of `make bench`, before the wheels' suite.
bench: bench-store
bench-store: DEPS_EXTRA = $(DEPS_REPLICA)
bench-store: | deps
