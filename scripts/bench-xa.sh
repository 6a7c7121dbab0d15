#!/usr/bin/env bash
#
# scripts/bench-xa.sh — the cost of two-phase commit (issue 24): sysbench oltp_read_write over
# two dataNodes through one manx binary started twice on the same data, once with
# twoPhaseCommit off and once on, runs interleaved (off on on off off on ...).
#
#   scripts/bench-xa.sh [BINARY] [--reps N] [--time SECONDS] [--threads N]
#
# BINARY defaults to target/release/manx (build it first: cargo build --release --locked).
# Data: sbtest1 (100,000 rows: few rows locked by two transactions at once, as transactions that
# lock rows in opposite order on the two servers wait for each other until innodb_lock_wait_timeout,
# which neither server can see) split by id % 2 into databases sbtest_xa1 and sbtest_xa2 on the
# sandbox primary; configs and logs under target/bench-xa/. Prints per mode the median TPS and
# p95 latency over the reps, the paired on/off TPS ratio of each rep and their median. Not part
# of CI: it prints figures.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd -- "$SCRIPT_DIR/.." && pwd -P)
BENCH_NAME=xa
# shellcheck source=scripts/lib/bench.sh
. "$SCRIPT_DIR/lib/bench.sh"
WORK=$REPO/target/bench-xa
BIN=$REPO/target/release/manx
REPS=5
TIME=10
THREADS=4
TABLE_SIZE=100000
while (($#)); do
    case $1 in
        --reps) REPS=$2; shift ;;
        --time) TIME=$2; shift ;;
        --threads) THREADS=$2; shift ;;
        -*) echo "bench-xa.sh: unknown argument $1" >&2; exit 2 ;;
        *) BIN=$(realpath "$1") ;;
    esac
    shift
done
[[ -x $BIN ]] || { echo "bench-xa.sh: $BIN missing: cargo build --release --locked" >&2; exit 1; }
command -v sysbench >/dev/null || { echo "bench-xa.sh: sysbench missing (scripts/clients.sh installs it)" >&2; exit 1; }

"$SCRIPT_DIR/sandbox.sh" start >/dev/null
MY_HOST=127.0.0.1 MY_PORT=13306 MY_USER=manx MY_PASS=manx
mkdir -p "$WORK"

log "loading sbtest1 ($TABLE_SIZE rows) into sbtest_xa1/2 by id % 2"
sql -e "DROP DATABASE IF EXISTS sbtest_xa; CREATE DATABASE sbtest_xa"
sysbench oltp_common --mysql-host=$MY_HOST --mysql-port=$MY_PORT --mysql-user=$MY_USER \
    --mysql-password=$MY_PASS --mysql-db=sbtest_xa --tables=1 --table-size=$TABLE_SIZE \
    prepare >"$WORK/prepare.log"
for n in 1 2; do
    sql -e "DROP DATABASE IF EXISTS sbtest_xa$n; CREATE DATABASE sbtest_xa$n;
            CREATE TABLE sbtest_xa$n.sbtest1 LIKE sbtest_xa.sbtest1;
            INSERT INTO sbtest_xa$n.sbtest1 SELECT * FROM sbtest_xa.sbtest1 WHERE id % 2 = $((n - 1))"
done

write_conf() { # dir port manager-port twoPhaseCommit
    local dir=$1
    rm -rf "$dir"
    mkdir -p "$dir"
    cat >"$dir/server.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<mycat:server xmlns:mycat="http://io.mycat/">
    <system>
        <property name="serverPort">$2</property>
        <property name="managerPort">$3</property>
        <property name="bindIp">127.0.0.1</property>
        <property name="twoPhaseCommit">$4</property>
        <property name="instanceId">benchxa$2</property>
        <property name="metricsAddr">127.0.0.1:$(($2 + 100))</property>
    </system>
    <user name="bench"><property name="password">bench</property><property name="schemas">SB</property></user>
</mycat:server>
EOF
    write_mod_rules "$dir" 2
    cat >"$dir/schema.xml" <<EOF
<?xml version="1.0"?>
<mycat:schema xmlns:mycat="http://io.mycat/">
    <schema name="SB" checkSQLschema="false" dataNode="s1">
        <table name="sbtest1" dataNode="s1,s2" rule="mod2" />
    </schema>
    <dataNode name="s\$1-2" dataHost="h" database="sbtest_xa\$1-2" />
    <dataHost name="h" maxCon="200" minCon="4" balance="0" writeType="0" dbType="mysql"
              dbDriver="native" switchType="-1">
        <heartbeat>select user()</heartbeat>
        <writeHost host="m" url="$MY_HOST:$MY_PORT" user="$MY_USER" password="$MY_PASS" />
    </dataHost>
</mycat:schema>
EOF
}
declare -A PORT=([off]=13451 [on]=13452)
write_conf "$WORK/off" "${PORT[off]}" 13461 false
write_conf "$WORK/on" "${PORT[on]}" 13462 true

for mode in off on; do
    MANX_LOG=warn "$BIN" --conf "$WORK/$mode" >"$WORK/$mode.log" 2>&1 &
    PIDS+=($!)
done
for mode in off on; do
    for _ in $(seq 100); do
        sql -h127.0.0.1 -P"${PORT[$mode]}" -ubench -pbench -e "SELECT 1" SB >/dev/null 2>&1 && break
        sleep 0.1
    done
done

OUT=$WORK/results.tsv
: >"$OUT"
run() { # mode rep
    local out
    out=$(sysbench oltp_read_write --mysql-host=127.0.0.1 --mysql-port="${PORT[$1]}" \
        --mysql-user=bench --mysql-password=bench --mysql-db=SB --tables=1 \
        --table-size=$TABLE_SIZE --threads="$THREADS" --time="$TIME" --db-ps-mode=disable \
        --report-interval=0 run 2>&1) || { log "sysbench failed ($1): $(tail -3 <<<"$out")"; exit 1; }
    local tps p95
    tps=$(awk '/transactions:/ {gsub(/\(/, "", $3); print $3}' <<<"$out")
    p95=$(awk '/95th percentile:/ {print $3}' <<<"$out")
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$tps" "$p95" >>"$OUT"
    log "rep $2 $1: $tps tps, p95 $p95 ms"
}
for rep in $(seq "$REPS"); do
    if ((rep % 2)); then order=(off on); else order=(on off); fi
    for mode in "${order[@]}"; do run "$mode" "$rep"; done
done
# The coordinator log's group flush: records made durable per fdatasync, and the commit kinds.
curl -s "http://127.0.0.1:$((PORT[on] + 100))/metrics" |
    grep -E '^manx_xa_(log_appends|log_flushes|commits)_total' >"$WORK/xa-metrics.txt" || true
python3 - "$OUT" "$THREADS" "$TIME" "$WORK/xa-metrics.txt" <<'EOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
by = {}
for mode, rep, tps, p95 in rows:
    by.setdefault(mode, {})[rep] = (float(tps), float(p95))
print(f"\nsysbench oltp_read_write, 2 dataNodes, {sys.argv[2]} threads, {sys.argv[3]} s per run, "
      f"{len(by['off'])} interleaved reps")
for mode in ("off", "on"):
    t = [v[0] for v in by[mode].values()]
    p = [v[1] for v in by[mode].values()]
    print(f"  twoPhaseCommit={mode:3}: median {statistics.median(t):8.1f} tps, p95 {statistics.median(p):7.2f} ms")
ratios = [by["on"][r][0] / by["off"][r][0] for r in by["off"] if r in by["on"]]
print("  on/off tps per rep: " + " ".join(f"{x:.3f}" for x in ratios))
print(f"  median on/off: {statistics.median(ratios):.3f}")
m = {}
for line in open(sys.argv[4]).read().split("\n"):
    if line:
        name, value = line.rsplit(" ", 1)
        m[name] = float(value)
appends, flushes = m.get("manx_xa_log_appends_total", 0), m.get("manx_xa_log_flushes_total", 0)
two = m.get('manx_xa_commits_total{kind="two_phase"}', 0)
one = m.get('manx_xa_commits_total{kind="one_phase"}', 0)
if flushes:
    print(f"  twoPhaseCommit=on: {two:.0f} two-phase and {one:.0f} one-phase commits; "
          f"log: {appends:.0f} appends in {flushes:.0f} fdatasyncs ({appends / flushes:.2f} per flush)")
EOF
