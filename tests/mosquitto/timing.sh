#!/bin/sh
# The timing tests of issue 18, each a run of bench/mosquitto/mqttload
# against a broker it starts on 127.0.0.1. The stock Mosquitto 2.0.20 fails
# them; the patched one passes. Bounds: never early, and late by at most
# one 1 ms tick of the broker's wheel plus SLACK_MS of scheduling slack
# (default 200 ms: a loaded, shared 2-core machine can hold a process off
# the CPU for tens of ms; the benchmark reports the true lateness).
#
#   timing.sh MQTTLOAD BROKER pass|fail
#  keepalive  20 silent clients, keepalive 2 s, connecting over 7 s (more
#             than the stock broker's 6 s scan): closed within
#             [3 s, 3 s + 1 ms + slack] of their CONNECT
#  order      the will-delay case at a fifth of its length: A closes
#             at 0 with a 6 s will delay, B at 5.6 s with 1 s; each will
#             within a tick + slack of its due time, A's first
#  expiry     10^4 sessions with expiry 3 s closed over 2 s: each expires
#             within a tick + slack of its due time
#  session-end  5 clients with session expiry 0 close with a 5 s will
#             delay: each will within a tick + slack of the close, when the
#             session ends (the patched broker runs with will_at_session_end
#             true, the stock one does not know the option)
#  restore    (pass only: the stock broker passes it too) two sessions with
#             expiry 4 s, broker restarted from persistence 1 s after the
#             close: the session is there 3.3 s after the close, gone 5.3 s
#             after (the saved expiry is whole seconds: <= 1 s late)
# With `pass` every test must pass; with `fail` every test must fail (exit
# 1 from mqttload: an event early, late or out of order), so that the
# tests are shown to catch what they are about.
set -u
load=$1 broker=$2 want=$3
slack=${SLACK_MS:-200}
bound=$((slack + 1))
bad=0

once() {
    name=$1
    shift
    "$load" --broker "$broker" --max-late-ms "$bound" --timeout 90 "$@" \
        > "$TMPDIR_T/$name.out" 2>&1
    rc=$?
    grep -v Warning "$TMPDIR_T/$name.out" | sed "s/^/  $name: /"
}

# A test the patched broker must pass gets a second run when the first
# misses: a process held off the CPU for a second on a loaded machine (seen
# once with 10^4 sessions while other builds ran: p99 977 ms, against 4 ms
# when the machine was quiet) is not what the test is about, while a broker
# that is late by design is late both times. Both runs are printed.
run() {
    once "$@"
    if [ "$want:$rc" != pass:0 ] && [ "$want" = pass ]; then
        echo "  $1: missed once; running it again"
        once "$@"
    fi
    case "$want:$rc" in
    pass:0|fail:1) echo "ok   $1 ($want as expected)" ;;
    *) echo "FAIL $1: exit $rc, expected the broker to $want"; bad=1 ;;
    esac
}

TMPDIR_T=$(mktemp -d)
trap 'rm -rf "$TMPDIR_T"' EXIT
run keepalive --n 20 --keepalive 2 --spread 7 keepalive
run order --scale 0.2 order
run expiry --n 10000 --expiry 3 --spread 2 expiry
if [ "$want" = pass ]; then
    run session-end --n 5 --spread 1 --conf "will_at_session_end true" session-end
    run restore restore
else
    run session-end --n 5 --spread 1 session-end
fi
exit $bad
