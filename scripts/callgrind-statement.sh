#!/usr/bin/env bash
#
# scripts/callgrind-statement.sh — instructions per statement of manx, counted by callgrind.
#
#   scripts/callgrind-statement.sh [--bin PATH] [--target manx1|manx2] [--ps auto|disable]
#                                  [--workload oltp_point_select] [--events N] [--out FILE]
#
# Runs manx under `valgrind --tool=callgrind` with instrumentation off, warms it up with 200 sysbench
# events (1 thread), turns it on for N events (default 2000), and prints the instructions
# per statement and the 25 costliest functions (inclusive). Instruction counts are deterministic
# for the same binary and inputs, whatever else the machine does: use them to compare builds.
# Needs scripts/bench.sh to have run once (its configs under target/bench/ and the sbtest data).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd -- "$SCRIPT_DIR/.." && pwd -P)
BIN=$REPO/target/release/manx
TARGET=manx1
PS=disable
WORKLOAD=oltp_point_select
EVENTS=2000
OUT=""
PORT=${CALLGRIND_PORT:-13431}
while (($#)); do
    case $1 in
        --bin) BIN=$2; shift ;;
        --target) TARGET=$2; shift ;;
        --ps) PS=$2; shift ;;
        --workload) WORKLOAD=$2; shift ;;
        --events) EVENTS=$2; shift ;;
        --out) OUT=$2; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
CONF=$REPO/target/bench/$TARGET
[[ -f $CONF/schema.xml ]] || { echo "run scripts/bench.sh first ($CONF missing)" >&2; exit 1; }
WORK=$(mktemp -d "$REPO/target/bench/callgrind.XXXXXX")
OUT=${OUT:-$WORK/callgrind.out}
cp "$CONF"/*.xml "$WORK/"
sed -i "s|<property name=\"serverPort\">[0-9]*<|<property name=\"serverPort\">$PORT<|" "$WORK/server.xml"

MANX_LOG=warn valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT" \
    "$BIN" --conf "$WORK" --manager-port 0 2>"$WORK/valgrind.log" &
VG=$!
trap 'kill $VG 2>/dev/null || true' EXIT
for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.2
done
sb() {
    sysbench "$WORKLOAD" --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=bench \
        --mysql-password=bench --mysql-db=SB --tables=1 --table-size="${BENCH_TABLE_SIZE:-100000}" \
        --threads=1 --time=0 --events="$1" --db-ps-mode="$PS" run
}
sb 200 >/dev/null
callgrind_control -i on "$VG" >/dev/null 2>&1
out=$(sb "$EVENTS")
callgrind_control -i off "$VG" >/dev/null 2>&1
callgrind_control -d "$VG" >/dev/null 2>&1
kill "$VG"
wait "$VG" 2>/dev/null || true
queries=$(awk '/queries:/ {print $2; exit}' <<<"$out")
total=$(callgrind_annotate "$OUT.1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(/,/, "", $1); print $1}' | head -1)
echo "$WORKLOAD ps=$PS $TARGET: $queries statements, $total instructions, $((total / queries)) per statement"
callgrind_annotate --inclusive=yes "$OUT.1" 2>/dev/null | sed -n '/file:function/,$p' | head -30 || true
