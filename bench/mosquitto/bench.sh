#!/bin/sh
# Stock against patched Mosquitto in one run (issue 18; docs/brokers.md has
# the figures). Every case runs on both brokers back to back (stock, then
# patched), each through bench/mosquitto/mqttload, which starts the broker
# on 127.0.0.1, drives MQTT v5 clients from one epoll loop, reads the
# broker's CPU seconds and peak RSS from /proc and stops it.
#
#   bench.sh MQTTLOAD STOCK_BROKER PATCHED_BROKER
#
# Cases (SIZES, default "10000 50000"):
#   mixed N    N clients: a third silent with keepalive 2 s (keepalive
#              disconnects), a third closing with a will delay of 1-5 s
#              (wills), a third closing with a session expiry of 2-6 s and a
#              longer will delay (session expiries, seen as their wills);
#              2,000 connects a second, each client up 1 to 3 s, so that
#              about 10^4 are connected at once (this machine's hard limit
#              is 20,000 descriptors a process, and without
#              CAP_SYS_RESOURCE mqttload cannot raise it further)
#   churn N    N clients connect and DISCONNECT with a random session expiry
#              of 1 h to 1 day, then the same with expiry 0 (broker CPU)
#   keepalive  the keepalive case: 50 silent clients, keepalive 2 s
#   order      the case: A closes at 0 with a 30 s will delay, B at
#              28 s with 5 s
#   stream     the stream: 10 clients close 4 s apart, 10 s delay
set -u
load=$1 stock=$2 patched=$3
sizes=${SIZES:-10000 50000}

both() {
    label=$1
    shift
    for b in stock patched; do
        eval broker=\$$b
        "$load" --broker "$broker" --timeout 600 "$@" 2>/dev/null |
            sed "s/^/$label $b /"
    done
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n) $(nproc) cores"
for n in $sizes; do
    both "mixed-$n" --n "$n" mixed
    both "churn-$n-random" --n "$n" --expiry -1 churn
    both "churn-$n-expiry0" --n "$n" --expiry 0 churn
done
both keepalive-50 --n 50 --keepalive 2 --spread 7 keepalive
both order order
both stream --n 10 stream
