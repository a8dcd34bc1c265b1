#!/bin/sh
# Mosquitto's broker tests (test/broker), one script at a time in the order
# its Makefile lists them, as README-tests.md runs them, on the broker built
# in TREE. Each script runs
#  - in a network namespace of its own with only a loopback interface: the
#    brokers the scripts start listen on every address and on fixed ports
#    (1888...), so nothing is reachable from outside and two runs cannot
#    collide;
#  - as an unprivileged user (uid MQ_TEST_UID, default 64123, no passwd
#    entry needed, so the machine is left as found): as root the broker
#    drops to `nobody` and cannot write the files the tests expect;
#  - in TREE, which is handed to that uid first.
# /dev/null is checked before the run and after every script: nothing may
# replace it (`make coverage` once did, through gcovr, until issue 28 fixed
# the cause). If it is no longer a character device, OUT gets a line
# DEVNULL naming the script that was running, which compare.sh reports as
# a failure; the device is not made again here, so that the cause is found.
#
#   suite.sh TREE OUT [SCRIPT...]   no SCRIPT: every script
# OUT gets one line per script: PASS|FAIL name seconds.
set -eu
tree=$(cd "$1" && pwd) out=$2
shift 2
uid=${MQ_TEST_UID:-64123}
per_test=${MQ_TEST_TIMEOUT:-300}
dir=$tree/test/broker

if [ "$(id -u)" != 0 ]; then
    echo "suite.sh: needs root (a network namespace, then uid $uid)" >&2
    exit 1
fi
if ! unshare -n true; then
    echo "suite.sh: no network namespaces here: the suite's brokers would" \
         "listen on every address; not run" >&2
    exit 1
fi
[ -c /dev/null ] || { echo "suite.sh: /dev/null is not a character device" >&2; exit 1; }

# Say which script replaced /dev/null, if one did. $1: that script.
devnull_check() {
    [ -c /dev/null ] && return 0
    echo "DEVNULL $1 replaced /dev/null during this script" | tee -a "$out" >&2
}

if [ $# = 0 ]; then
    # The scripts the Makefile runs (a commented-out line is not one).
    set -- msg_sequence_test.py $(grep -E '^\s+\./[0-9][0-9]-[^ ]*\.py' \
        "$dir/Makefile" | sed 's|^\s*\./||')
fi
chown -R "$uid:$uid" "$tree"
# Every directory above TREE must let that uid through (a clone under
# `mktemp -d` does not: 0700): say so once instead of failing each script.
if ! setpriv --reuid="$uid" --regid="$uid" --clear-groups test -x "$dir"; then
    echo "suite.sh: uid $uid cannot reach $dir: a directory above it is" \
         "not searchable by others (chmod o+x it, e.g. a mktemp -d parent)" >&2
    exit 1
fi
: > "$out"
for t in "$@"; do
    start=$(date +%s.%N)
    if unshare -n sh -c 'ip link set lo up && cd "$1" &&
            exec setpriv --reuid="$2" --regid="$2" --clear-groups \
            env -i PATH=/usr/bin:/bin HOME="$1" LANG=C.UTF-8 \
            timeout "$3" ./"$4"' sh "$dir" "$uid" "$per_test" "$t" \
            > "$out.$t.log" 2>&1; then
        r=PASS
        rm -f "$out.$t.log"
    else
        r=FAIL
    fi
    echo "$r $t $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }")" | tee -a "$out"
    devnull_check "$t"
done
