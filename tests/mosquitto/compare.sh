#!/bin/sh
# Compare two suite.sh results, stock then patched: the patched broker must
# pass every script the stock one passes. Lists the scripts failing on
# both. Exit 1 on a script that passes on stock and not on patched, or if
# /dev/null was replaced during either run (a DEVNULL line).
#
#   compare.sh STOCK_OUT PATCHED_OUT
set -eu
stock=$1 patched=$2
echo "stock:   $(grep -c '^PASS' "$stock") of $(grep -c '^[PF]' "$stock") scripts pass"
echo "patched: $(grep -c '^PASS' "$patched") of $(grep -c '^[PF]' "$patched") scripts pass"
both=$(awk 'NR==FNR { if ($1 == "FAIL") f[$2] = 1; next }
            $1 == "FAIL" && f[$2] { print $2 }' "$stock" "$patched")
[ -z "$both" ] || echo "failing on both: $(echo $both)"
worse=$(awk 'NR==FNR { if ($1 == "PASS") p[$2] = 1; next }
             $1 != "PASS" && p[$2] { print $2 }' "$stock" "$patched")
if [ -n "$worse" ]; then
    echo "FAIL: passing on stock, failing on patched: $(echo $worse)"
    exit 1
fi
echo "no script passes on stock and fails on patched"
if grep -h '^DEVNULL' "$stock" "$patched"; then
    echo "FAIL: /dev/null was replaced during the suite (see suite.sh)"
    exit 1
fi
