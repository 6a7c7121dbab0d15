#!/usr/bin/env bash
#
# scripts/bench-ab.sh — compares two manx builds, interleaved in one time window (issue 8).
#
#   scripts/bench-ab.sh A_BINARY B_BINARY [--reps N] [--time SECONDS] [--threads N]
#
# Needs the data and configs scripts/bench.sh leaves under target/bench/ (run it once). Starts
# both binaries on copies of those configs (ports 13431-13433 for A, 13441-13443 for B) and runs,
# A B A B ... (the order alternating per rep):
#   - sysbench oltp_point_select and oltp_read_only on the 2-node schema (manx2), both
#     --db-ps-mode values, at --threads (16);
#   - the 1-client median latency of `SELECT id, k, c FROM big ORDER BY k DESC, id DESC LIMIT 10`
#     on the 3-node schema (manx3).
# Prints, per binary, the median QPS and manx CPU µs per statement (utime+stime from
# /proc/PID/stat), the median latency, and B/A ratios. Not part of CI: it prints figures.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd -- "$SCRIPT_DIR/.." && pwd -P)
WORK=$REPO/target/bench

(($# >= 2)) || { sed -n '2,16p' "$0"; exit 2; }
BIN_A=$(realpath "$1")
BIN_B=$(realpath "$2")
shift 2
REPS=5
TIME=5
THREADS=16
while (($#)); do
    case $1 in
        --reps) REPS=$2; shift ;;
        --time) TIME=$2; shift ;;
        --threads) THREADS=$2; shift ;;
        *) echo "bench-ab.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
for d in manx2 manx3; do
    [[ -f $WORK/$d/schema.xml ]] || { echo "bench-ab.sh: run scripts/bench.sh once first ($WORK/$d missing)" >&2; exit 1; }
done
[[ -f $WORK/one_query.lua ]] || { echo "bench-ab.sh: $WORK/one_query.lua missing: run scripts/bench.sh once" >&2; exit 1; }

log() { printf '[ab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
"$SCRIPT_DIR/sandbox.sh" start >/dev/null
CLK_TCK=$(getconf CLK_TCK)
OUT=$WORK/ab.tsv
: >"$OUT"

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

declare -A PID PORT2 PORT3
start() { # label binary base-port
    local label=$1 bin=$2 base=$3 i
    for i in 2 3; do
        local dir=$WORK/ab-$label-manx$i port=$((base + i))
        rm -rf "$dir"
        cp -r "$WORK/manx$i" "$dir"
        sed -i "s#<property name=\"serverPort\">[0-9]*<#<property name=\"serverPort\">$port<#" "$dir/server.xml"
        MANX_LOG=warn "$bin" --conf "$dir" 2>"$dir.log" &
        PIDS+=($!)
        PID[$label$i]=$!
        if ((i == 2)); then PORT2[$label]=$port; else PORT3[$label]=$port; fi
        for _ in $(seq 100); do
            (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
            sleep 0.1
        done
    done
}
start A "$BIN_A" 13430
start B "$BIN_B" 13440

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

sysbench_one() { # label workload ps rep
    local label=$1 workload=$2 ps=$3 rep=$4 pid=${PID[${1}2]} before after out queries qps
    before=$(cpu_ticks "$pid")
    out=$(sysbench "$workload" --mysql-host=127.0.0.1 --mysql-port="${PORT2[$label]}" \
        --mysql-user=bench --mysql-password=bench --mysql-db=SB --tables=1 --table-size=100000 \
        --threads="$THREADS" --time="$TIME" --db-ps-mode="$ps" --report-interval=0 run 2>&1) ||
        { log "sysbench failed against $label: $(tail -3 <<<"$out")"; return 0; }
    after=$(cpu_ticks "$pid")
    queries=$(awk '/queries:/ {print $2; exit}' <<<"$out")
    qps=$(awk '/queries:/ {gsub(/\(/, "", $3); print $3; exit}' <<<"$out")
    local us
    us=$(python3 -c "print(round(($after - $before) * 1e6 / $CLK_TCK / max($queries, 1), 1))")
    printf '%s %s\t%s\t%s\t%s\t%s\n' "$workload" "$ps" "$label" "$rep" "$qps" "$us" >>"$OUT"
    log "$workload ps=$ps rep=$rep $label: $qps qps, $us us/stmt"
}

latency_one() { # label rep
    local label=$1 rep=$2 out med
    out=$(BENCH_SQL="SELECT id, k, c FROM big ORDER BY k DESC, id DESC LIMIT 10" BENCH_DBS= \
        sysbench "$WORK/one_query.lua" --mysql-host=127.0.0.1 --mysql-port="${PORT3[$label]}" \
        --mysql-user=bench --mysql-password=bench --mysql-db=SB --threads=1 --time=3 \
        --percentile=50 run 2>&1) || { log "latency run failed against $label"; return 0; }
    med=$(awk '/50th percentile:/ {print $3; exit}' <<<"$out")
    printf 'order_by_limit ms\t%s\t%s\t%s\t\n' "$label" "$rep" "$med" >>"$OUT"
    log "order_by_limit rep=$rep $label: $med ms"
}

for label in A B; do
    TIME=2 sysbench_one "$label" oltp_point_select disable warmup >/dev/null 2>&1
done
: >"$OUT"
for rep in $(seq "$REPS"); do
    if ((rep % 2)); then order=(A B); else order=(B A); fi
    for workload in oltp_point_select oltp_read_only; do
        for ps in auto disable; do
            for label in "${order[@]}"; do sysbench_one "$label" "$workload" "$ps" "$rep"; done
        done
    done
    for label in "${order[@]}"; do latency_one "$label" "$rep"; done
done

python3 - "$OUT" "$BIN_A" "$BIN_B" <<'EOF'
import sys, statistics
from collections import defaultdict
path, a, b = sys.argv[1:]
qps = defaultdict(list); us = defaultdict(list)
for line in open(path):
    case, label, rep, value, cpu = line.rstrip("\n").split("\t")
    if value:
        qps[case, label].append(float(value))
    if cpu:
        us[case, label].append(float(cpu))
med = lambda xs: statistics.median(xs) if xs else float("nan")
print(f"A = {a}\nB = {b}\n")
print("| case (2-node sysbench: QPS; 3-node ORDER BY LIMIT 10: median ms) | A | B | B / A | A µs/stmt | B µs/stmt |")
print("|---|---:|---:|---:|---:|---:|")
for case in dict.fromkeys(c for c, _ in qps):
    va, vb = med(qps[case, "A"]), med(qps[case, "B"])
    ua, ub = med(us[case, "A"]), med(us[case, "B"])
    cpu = f"{ua:.1f} | {ub:.1f}" if us[case, "A"] else " | "
    print(f"| {case} | {va:.2f} | {vb:.2f} | {vb / va:.3f} | {cpu} |")
EOF
