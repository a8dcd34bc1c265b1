# Netty's HashedWheelTimer beside the timewheel service: the Java
# harness in bench/netty/, included by the top Makefile after service.mk.
#
#   make bench-netty   install a JDK and Debian's Netty (DEPS_NETTY), build
#                      svcbench and the harness (javac into build/), run
#                      NETTY_ROUNDS interleaved rounds, print the table and
#                      write build/bench/netty/report.md, results.csv
#                      (medians, spread, ratios) and raw.csv (every row)
#
# Knobs: NETTY_ROUNDS (3), NETTY_WARMUP (Netty warm-up rounds, 5),
# NETTY_N (timers, 10^6), NETTY_JVM (JVM options), NETTY_ARGS (passed on,
# e.g. "--late-ms 5000 --idle-ms 5000", "--workloads rpc" for one
# workload, or "--impl hier --workloads schedule,cancel,memory" for a run at
# 10^7, where hashed takes hours). A full run at the defaults takes 11 to 15
# minutes on this project's 2-core machine when other jobs load it (load
# average 12-17; stopping a Netty timer that holds 10^6 timers takes
# seconds), plus the RPC pattern's 4 cells of 2 s for Netty, hier and hashed
# each per round (about 30 s a round; `NETTY_ARGS="--workloads rpc"` alone,
# 3 rounds: 95 s on 2026-11-27). make bench needs no JDK.

NETTY_DIR := $(BUILD)/bench/netty
NETTY_CLASSES := $(NETTY_DIR)/classes
NETTY_JAR ?= /usr/share/java/netty-common.jar
NETTY_SRC := $(wildcard bench/netty/*.java)
NETTY_ROUNDS ?= 3
NETTY_WARMUP ?= 5
NETTY_N ?= 1000000
NETTY_JVM ?= -Xms2g -Xmx2g -XX:+UseG1GC
NETTY_ARGS ?=

DEPS_NETTY := default-jdk-headless libnetty-java
bench-netty: DEPS_EXTRA = $(DEPS_NETTY)

.PHONY: bench-netty netty-build

bench-netty: deps
	@$(MAKE) --no-print-directory svcbench netty-build
	java $(NETTY_JVM) -cp $(NETTY_CLASSES):$(NETTY_JAR) NettyBench \
	    --svcbench $(SVC_BENCH_BIN) --out $(NETTY_DIR) --rounds $(NETTY_ROUNDS) \
	    --warmup $(NETTY_WARMUP) --n $(NETTY_N) $(NETTY_ARGS) \
	    --command "make bench-netty NETTY_ROUNDS=$(NETTY_ROUNDS) NETTY_WARMUP=$(NETTY_WARMUP) NETTY_N=$(NETTY_N)$(if $(NETTY_ARGS), NETTY_ARGS='$(NETTY_ARGS)')"

netty-build: $(NETTY_CLASSES)/NettyBench.class

$(NETTY_CLASSES)/NettyBench.class: $(NETTY_SRC)
	@mkdir -p $(NETTY_CLASSES)
	javac --release 17 -Xlint:all -Werror -cp $(NETTY_JAR) -d $(NETTY_CLASSES) $(NETTY_SRC)
