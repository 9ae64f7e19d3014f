#!/bin/bash
# Instructions a bench server spends per call, user space only, counted by callgrind: steady to
# a fraction of a percent where CPU time on a shared machine varies by ten.
#
#   bench/count/server.sh SIDE http N        # N calls, one at a time, on one keep-alive connection
#   bench/count/server.sh SIDE ws N [DEPTH]  # N calls on one WebSocket, DEPTH in flight (32)
#
# SIDE is jrpc, floor or jsonrpsee; the binary is bench's release build
# (`CARGO_TARGET_DIR=$PWD/target cargo build --release` in bench/), or $BIN. $SERVE_ARGS go to
# the server (`--observe`, `--free-idle-after MS|off` for jrpc's). Needs valgrind and python3.
# 500 calls warm the server up before the counted ones.
set -euo pipefail
side=$1 kind=$2 n=$3 depth=${4:-32}
here=$(cd "$(dirname "$0")" && pwd)
bin=${BIN:-$here/../target/release/jrpc-bench}
out=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
# The server serves until its standard input closes.
mkfifo "$out/stdin"
valgrind --tool=callgrind --callgrind-out-file="$out/cg.%p" "$bin" --serve "$side" \
    --listen "127.0.0.1:$port" --max-seconds 900 ${SERVE_ARGS:-} < "$out/stdin" > "$out/log" 2>&1 &
exec 3> "$out/stdin"
until python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2> /dev/null; do
    sleep 0.3
done
client() { python3 "$here/${kind}_client.py" "$port" "$1" "$depth"; }
client 500 > /dev/null
pid=$(pgrep -f -- "--listen 127.0.0.1:$port" | head -1)
callgrind_control -z "$pid" > /dev/null 2>&1
client "$n" > /dev/null
callgrind_control -d "$pid" > /dev/null 2>&1
exec 3>&-
wait
total=$(awk '/^summary:/ {print $2}' "$out"/cg.*.1)
echo "$side $kind: $n calls, $total instructions, $((total / n)) per call (profile: $(ls "$out"/cg.*.1))"
