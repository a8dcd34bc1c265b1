# The timer service benchmark: bench/service/svcbench.c.
# Meant to be included by the top Makefile or bench/bench.mk, after them.
#
#   make svcbench            build build/bench/svcbench (in a sanitizer
#                            variant: build/<variant>/bench/svcbench)
#   make bench-service       run it in full, appending to build/bench/service.csv
#   make bench-service-quick the same, short (CI)
#   make svcbench-stress     the accounting stress only; with SAN=thread it is
#                            the ThreadSanitizer check that needs no Criterion
#
# It links the static library with the library's own dependencies
# (LDLIBS_LIB), so it follows whatever the library needs, and Debian's
# jemalloc as the program's own malloc (as before the library's jemalloc
# became private: the program's blocks beside the library's are then
# allocated as they were); it reads the library's private jemalloc by its
# header (JE_INC) and prefixed names.

SVC_BENCH_BIN := $(if $(SAN),$(B)/bench/svcbench,$(BUILD)/bench/svcbench)
SVC_BENCH_CSV ?= $(BUILD)/bench/service.csv

.PHONY: svcbench bench-service bench-service-quick svcbench-stress

SVC_BENCH_SRC := $(wildcard bench/service/*.c)
SVC_BENCH_OBJ := $(patsubst bench/service/%.c,$(dir $(SVC_BENCH_BIN))obj-svc/%.o,$(SVC_BENCH_SRC))
SVC_BENCH_CFLAGS := $(WARN) -O2 -g $(SANFLAGS) -Iinclude -D_POSIX_C_SOURCE=200809L \
                    $(ALLOCDEF) $(JE_INC)
SVC_BENCH_MALLOC := $(if $(filter libc,$(ALLOC)),,-ljemalloc)
DEP_FILES += $(SVC_BENCH_OBJ:.o=.d)

# Headers: derived by the compiler (DEPFLAGS, the top Makefile).
$(dir $(SVC_BENCH_BIN))obj-svc/%.o: bench/service/%.c | $(if $(JE_LINK),$(JE_H))
	@mkdir -p $(@D)
	$(CC) $(SVC_BENCH_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(SVC_BENCH_BIN): $(SVC_BENCH_OBJ) $(STATIC)
	$(CC) $(SVC_BENCH_CFLAGS) -o $@ $(SVC_BENCH_OBJ) $(STATIC) $(LDLIBS_LIB) \
	    $(SVC_BENCH_MALLOC) -lpthread -lm

svcbench: $(SVC_BENCH_BIN)

bench-service: $(SVC_BENCH_BIN)
	@mkdir -p $(dir $(SVC_BENCH_CSV))
	$(SVC_BENCH_BIN) --csv $(SVC_BENCH_CSV)

bench-service-quick: $(SVC_BENCH_BIN)
	@mkdir -p $(dir $(SVC_BENCH_CSV))
	$(SVC_BENCH_BIN) --quick --csv $(SVC_BENCH_CSV)

svcbench-stress: $(SVC_BENCH_BIN)
	$(SVC_BENCH_BIN) --quick stress
