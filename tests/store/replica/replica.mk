# The store replicated through a real log: a 3-node NATS JetStream cluster
# on 127.0.0.1, started and stopped by the harness itself (tests/store/
# replica/), included by the top Makefile.
#
#   make store-failover        200 promotions (SIGKILL of the leader, SIGSTOP
#                              and SIGCONT of it, its JetStream node killed),
#                              every guarantee checked (about 4-5 min)
#   make store-failover-quick  12 promotions, in CI (.ci/run)
#
# Debian bookworm's nats-server (2.9.10) and libnats-dev (3.4.1): the
# targets install them through `make deps` (DEPS_REPLICA).

DEPS_REPLICA := nats-server libnats-dev
STORE_FAILOVER_BIN := $(B)/tests/twfailover
STORE_FAILOVER_N ?= 200
STORE_FAILOVER_QUICK_N ?= 12
STORE_FAILOVER_SEED ?= 20261128
REPLICA_SRC := tests/store/replica/jsnode.c

.PHONY: store-failover store-failover-quick store-failover-build

$(STORE_FAILOVER_BIN): tests/store/replica/failover.c $(REPLICA_SRC) \
                       tests/store/replica/jsnode.h \
                       include/timewheel/store.h $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -Itests/store/replica -o $@ \
	    tests/store/replica/failover.c $(REPLICA_SRC) $(STATIC) \
	    $(LDLIBS_LIB) -lnats

store-failover-build: DEPS_EXTRA = $(DEPS_REPLICA)
store-failover-build: deps
	@$(MAKE) --no-print-directory $(STORE_FAILOVER_BIN)

store-failover: store-failover-build
	$(STORE_FAILOVER_BIN) $(STORE_FAILOVER_N) $(STORE_FAILOVER_SEED)

store-failover-quick: store-failover-build
	$(STORE_FAILOVER_BIN) $(STORE_FAILOVER_QUICK_N) $(STORE_FAILOVER_SEED)
