# docs/examples/: built as a user builds them, against an installed copy of
# the library through pkg-config, and run by `make test` as a step of its
# own: each server through the loopback test (tests/loop/loopback.c) as a
# real process on 127.0.0.1 with 2,000 client connections, and
# libevent_timers and broker_delayed (the durable store: a broker's delayed
# messages across a restart) on their own. The layers composed with real
# event loops.
# Included by the top Makefile.
#
#   make examples       build the examples and the loopback client
#   make examples-run   run them (about 7 s per server); `make test` runs
#                       this after the packaging tests, before the suite
#
# DEPS_EXAMPLES: the event loops the examples use. The libraries need
# neither; `make test` installs them (DEPS_EXTRA), `make examples` too.

EX_DIR := $(BUILD)/examples
EX_PREFIX := $(abspath $(EX_DIR)/usr)
EX_PC := PKG_CONFIG_PATH=$(EX_PREFIX)/lib/pkgconfig pkg-config
EX_CFLAGS := -std=c11 -Wall -Wextra -Wpedantic -Werror -O2 -g
DEPS_EXAMPLES := libuv1-dev libevent-dev

.PHONY: examples examples-run examples-install

# Always reinstalled (quick), so the examples build against this tree. The
# sanitizers are off: these are user programs, and the loopback bound is
# about the server's timers, not an instrumented build.
examples-install:
	@$(MAKE) -s --no-print-directory install PREFIX=$(EX_PREFIX) SAN= >/dev/null

examples: DEPS_EXTRA = $(DEPS_EXAMPLES)
examples: deps examples-install
	$(CC) $(EX_CFLAGS) -o $(EX_DIR)/epoll_server docs/examples/epoll_server.c \
	    $$($(EX_PC) --cflags --libs timewheel-loop)
	$(CC) $(EX_CFLAGS) -o $(EX_DIR)/uv_server docs/examples/uv_server.c \
	    $$($(EX_PC) --cflags --libs timewheel-loop libuv)
	$(CC) $(EX_CFLAGS) -o $(EX_DIR)/libevent_timers \
	    docs/examples/libevent_timers.c \
	    $$($(EX_PC) --cflags --libs timewheel-loop libevent)
	$(CC) $(EX_CFLAGS) -o $(EX_DIR)/loopback tests/loop/loopback.c \
	    $$($(EX_PC) --cflags --libs timewheel-loop)
	$(CC) $(EX_CFLAGS) -o $(EX_DIR)/broker_delayed \
	    docs/examples/broker_delayed.c \
	    $$($(EX_PC) --cflags --libs timewheel-store)

# No LD_LIBRARY_PATH: the programs find the library through the run path
# its pkg-config modules give them (the top Makefile, "install").
examples-run: examples
	$(EX_DIR)/libevent_timers
	$(EX_DIR)/broker_delayed
	$(EX_DIR)/loopback $(EX_DIR)/epoll_server
	$(EX_DIR)/loopback $(EX_DIR)/uv_server
