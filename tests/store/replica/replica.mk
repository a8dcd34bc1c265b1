# The store replicated through a real log: a 3-node NATS JetStream cluster
# on 127.0.0.1, started and stopped by the harness itself (tests/store/
# replica/), included by the top Makefile.
#
#   make store-failover        200 promotions (SIGKILL of the leader, SIGSTOP
#                              and SIGCONT of it, its JetStream node killed),
#                              every guarantee checked (about 4-5 min)
#   make store-failover-quick  12 promotions, in CI (.ci/run)
#   make replica-example       docs/examples/replicated_store.c, built as a
#                              user builds it; both targets above run it
#                              against their cluster first
#
# Debian bookworm's nats-server (2.9.10) and libnats-dev (3.4.1): the
# targets install them through `make deps` (DEPS_REPLICA).

DEPS_REPLICA := nats-server libnats-dev
STORE_FAILOVER_BIN := $(B)/tests/twfailover
STORE_FAILOVER_N ?= 200
STORE_FAILOVER_QUICK_N ?= 12
STORE_FAILOVER_SEED ?= 20261128
REPLICA_SRC := tests/store/replica/jsnode.c

.PHONY: store-failover store-failover-quick store-failover-build \
        replica-example

$(STORE_FAILOVER_BIN): tests/store/replica/failover.c $(REPLICA_SRC) \
                       tests/store/replica/jsnode.h \
                       include/timewheel/store.h $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -Itests/store/replica -o $@ \
	    tests/store/replica/failover.c $(REPLICA_SRC) $(STATIC) \
	    $(LDLIBS_LIB) -lnats

store-failover-build: DEPS_EXTRA = $(DEPS_REPLICA)
store-failover-build: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(STORE_FAILOVER_BIN)

# The example (docs/examples/replicated_store.c), built as a user builds
# it, against an installed copy through pkg-config; the harness runs it
# against its cluster first (TW_EXAMPLE).
REPLICA_EXAMPLE := $(EX_DIR)/replicated_store

replica-example: DEPS_EXTRA = $(DEPS_REPLICA)
replica-example: deps examples-install
	$(CC) $(EX_CFLAGS) -o $(REPLICA_EXAMPLE) docs/examples/replicated_store.c \
	    $$($(EX_PC) --cflags --libs timewheel-store) -lnats

store-failover: store-failover-build replica-example
	TW_EXAMPLE=$(REPLICA_EXAMPLE) \
	    $(STORE_FAILOVER_BIN) $(STORE_FAILOVER_N) $(STORE_FAILOVER_SEED)

store-failover-quick: store-failover-build replica-example
	TW_EXAMPLE=$(REPLICA_EXAMPLE) \
	    $(STORE_FAILOVER_BIN) $(STORE_FAILOVER_QUICK_N) $(STORE_FAILOVER_SEED)
