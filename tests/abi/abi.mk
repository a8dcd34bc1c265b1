# The ABI check, included by the top Makefile (docs/embedding.md, "ABI").
#
#   make abi-check   compare each layer's shared library (the default build)
#                    with its dump committed in tests/abi/ (abidiff, Debian's
#                    abigail-tools); fails on any change to an existing
#                    function, variable or type of the public headers. New
#                    functions are a compatible addition and pass. CI runs it.
#   make abi-dump    write the dumps anew from the current build: after a
#                    deliberate change (a new minor version taking words off
#                    a TW_RESERVED_WORDS tail, or a new soname), or to record
#                    functions added since, so that the next check compares
#                    against them too. Commit tests/abi/ with the change.
#
# Only the public headers' types are compared (--headers-dir include): the
# library's private structures, and its private jemalloc (built without
# debug information for that reason, lib/core/jemalloc.sh), are not its ABI.
ABI_DIR := tests/abi
DEPS_ABI := abigail-tools
ABI_LAYERS := $(LAYERS)
# tests/abi/private.suppr: no change is reported of the layers' private types
# (lib/), which the public headers only declare.
ABI_SUPPR := $(ABI_DIR)/private.suppr
ABIDW_FLAGS := --headers-dir include --drop-private-types --no-corpus-path \
               --no-comp-dir-path
# --no-added-syms: a function added since the dump is not a change that
# breaks a program built against it.
ABIDIFF_FLAGS := --no-added-syms --headers-dir1 include --headers-dir2 include \
                 --suppressions $(ABI_SUPPR)

.PHONY: abi-dump abi-check abi-run-dump abi-run-check

abi-dump:
	@$(MAKE) --no-print-directory deps DEPS_EXTRA="$(DEPS_ABI)"
	@$(MAKE) --no-print-directory SAN= ALLOC=jemalloc abi-run-dump

abi-check:
	@$(MAKE) --no-print-directory deps DEPS_EXTRA="$(DEPS_ABI)"
	@$(MAKE) --no-print-directory SAN= ALLOC=jemalloc abi-run-check

abi-run-dump: $(SHARED)
	@$(foreach l,$(ABI_LAYERS),abidw $(ABIDW_FLAGS) \
	    --out-file $(ABI_DIR)/lib$(NAME_$(l)).abi $(SO_$(l)) && \
	    echo "abi-dump: $(ABI_DIR)/lib$(NAME_$(l)).abi" &&) true

abi-run-check: $(SHARED)
	@bad=""; for l in $(foreach l,$(ABI_LAYERS),$(NAME_$(l))); do \
	    if [ ! -f $(ABI_DIR)/lib$$l.abi ]; then \
	        echo "abi-check: no $(ABI_DIR)/lib$$l.abi (make abi-dump)"; bad="$$bad $$l"; \
	    elif ! abidiff $(ABIDIFF_FLAGS) $(ABI_DIR)/lib$$l.abi $(B)/lib$$l.so; then \
	        bad="$$bad $$l"; \
	    fi; \
	done; \
	if [ -n "$$bad" ]; then \
	    echo "abi-check: the ABI of$$bad changed (above). If that is meant," \
	         "bump the version as docs/embedding.md says and run make abi-dump."; \
	    exit 1; \
	fi; \
	echo "abi-check: $(words $(ABI_LAYERS)) libraries match $(ABI_DIR)/"
