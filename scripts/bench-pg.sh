#!/usr/bin/env bash
#
# scripts/bench-pg.sh — what manx's PostgreSQL path costs (issue 19 item 4).
#
#   scripts/bench-pg.sh [--quick] [--reps N] [--time SECONDS]
#
# Runs sysbench against four targets, interleaved in one time window (A B C D A B C D ...,
# the order rotated each rep; medians of the paired runs), all on the same sbtest1 table:
#   pg-direct  sysbench's pgsql driver straight to the sandbox PostgreSQL (127.0.0.1:15432)
#   pg-relay   the same driver through a bare TCP relay in front of it (socat, one forked
#              process per connection)
#   manx-pg    sysbench's mysql driver through manx, schema SBPG: a single default dataNode on
#              database sbtest_pg of a dbType="postgresql" dataHost (MySQL -> PostgreSQL
#              translation on every statement)
#   manx-my    the mysql driver through the same manx process, schema SBMY: a single default
#              dataNode on MariaDB (sandbox primary, database sbtest_bench): the MySQL path,
#              the reference for manx's CPU per statement
# for oltp_point_select and oltp_read_only, with server-side prepared statements (sysbench's
# --db-ps-mode=auto, for both drivers) and with --db-ps-mode=disable.
# It prints one table: QPS and p95 latency per target, manx's CPU microseconds per statement
# (utime+stime from /proc/PID/stat over the run / statements; runs are sequential, so one manx
# process serves both schemas; for the relay, the CPU of its per-connection processes), and the
# paired ratios (medians of per-run ratios): manx-pg / pg-relay QPS (issue 19 target >= 0.8),
# manx-pg / pg-direct QPS, and manx-pg / manx-my µs per statement (target <= 1.2).
#
# --quick: 16 threads only, 3 reps of 5 s (about 6 minutes). The full run: 1, 4, 16 and 64
# threads, 3 reps of 20 s (about 70 minutes; --time 10: about 40).
#
# Needs: the sandbox (scripts/sandbox.sh; MariaDB primary and PostgreSQL), sysbench (with its
# pgsql driver) and socat (installed with apt-get when missing and we are root), psql, python3, a
# mariadb/mysql client, cargo. Creates the database sbtest_pg on the sandbox PostgreSQL and
# sbtest_bench on the sandbox primary (the same as scripts/bench.sh; both reused by later runs
# when their row counts match). Writes its configs and logs under target/bench-pg/ (a failed
# sysbench run's whole output in failed-*.log). MANX_BIN=path runs that binary instead of
# building target/release/manx. BENCH_TABLE_SIZE sets the rows (default 100000).
# Not part of CI: it prints figures, it does not pass or fail.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd -- "$SCRIPT_DIR/.." && pwd -P)
cd "$REPO"
BENCH_NAME=bench-pg
# shellcheck source=scripts/lib/bench.sh
. "$SCRIPT_DIR/lib/bench.sh"

parse_bench_args 2,36 "$@"

WORKLOADS=(oltp_point_select oltp_read_only)
if ((QUICK)); then
    THREADS=(16)
    REPS=${REPS:-3}
    TIME=${TIME:-5}
else
    THREADS=(1 4 16 64)
    REPS=${REPS:-3}
    TIME=${TIME:-20}
fi
PS_MODES=(auto disable)
TABLE_SIZE=${BENCH_TABLE_SIZE:-100000}

MY_HOST=127.0.0.1
MY_PORT=13306
MY_USER=manx
MY_PASS=manx
PG_HOST=127.0.0.1
PG_PORT=15432
PG_USER=manx
PG_PASS=manx
PG_DB=sbtest_pg
RELAY_PORT=${BENCH_PG_RELAY_PORT:-13430}
MANX_PORT=${BENCH_PG_MANX_PORT:-13431}

WORK=$REPO/target/bench-pg
mkdir -p "$WORK"
RESULTS=$WORK/results.tsv
FAILURES=$WORK/failures.tsv
: >"$RESULTS"
: >"$FAILURES"
rm -f "$WORK"/failed-*.log


# ---------------------------------------------------------------- tools
install_missing sysbench socat
sysbench --help 2>/dev/null | grep -q '^  pgsql' || die "this sysbench has no pgsql driver"
command -v psql >/dev/null || die "psql is needed (scripts/sandbox.sh installs PostgreSQL)"
command -v python3 >/dev/null || die "python3 is needed"

# ---------------------------------------------------------------- backends and data
log "starting the sandbox"
"$SCRIPT_DIR/sandbox.sh" start >/dev/null

pgsql() { # database, then psql arguments
    local db=$1
    shift
    PGPASSWORD=$PG_PASS PGOPTIONS="-c client_min_messages=warning" \
        psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d "$db" -X -q -t -A -v ON_ERROR_STOP=1 "$@"
}
count_pg_rows() { pgsql "$PG_DB" -c "SELECT COUNT(*) FROM sbtest1" 2>/dev/null || echo -1; }

if [[ $(count_rows sbtest_bench.sbtest1) != "$TABLE_SIZE" ]]; then
    log "loading sbtest_bench.sbtest1 on MariaDB ($TABLE_SIZE rows)"
    sql -e "DROP DATABASE IF EXISTS sbtest_bench; CREATE DATABASE sbtest_bench"
    sysbench oltp_common --mysql-host="$MY_HOST" --mysql-port="$MY_PORT" --mysql-user="$MY_USER" \
        --mysql-password="$MY_PASS" --mysql-db=sbtest_bench \
        --tables=1 --table-size="$TABLE_SIZE" prepare >"$WORK/prepare-my.log"
fi
if [[ $(count_pg_rows) != "$TABLE_SIZE" ]]; then
    log "loading $PG_DB.sbtest1 on PostgreSQL ($TABLE_SIZE rows)"
    pgsql postgres -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)"
    pgsql postgres -c "CREATE DATABASE $PG_DB"
    sysbench oltp_common --db-driver=pgsql --pgsql-host="$PG_HOST" --pgsql-port="$PG_PORT" \
        --pgsql-user="$PG_USER" --pgsql-password="$PG_PASS" --pgsql-db="$PG_DB" \
        --tables=1 --table-size="$TABLE_SIZE" prepare >"$WORK/prepare-pg.log"
    # Statistics and the visibility map now, not when autovacuum gets to them mid-run.
    pgsql "$PG_DB" -c "VACUUM ANALYZE sbtest1"
fi

# ---------------------------------------------------------------- manx config
# One manx, two schemas: SBPG on PostgreSQL, SBMY on MariaDB. Runs are sequential, so the
# CPU delta of the process over a run belongs to that run's target.
mkdir -p "$WORK/manx"
bench_server_xml "$MANX_PORT" SBPG,SBMY >"$WORK/manx/server.xml"
cat >"$WORK/manx/rule.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<mycat:rule xmlns:mycat="http://io.mycat/">
</mycat:rule>
EOF
cat >"$WORK/manx/schema.xml" <<EOF
<?xml version="1.0"?>
<mycat:schema xmlns:mycat="http://io.mycat/">
    <schema name="SBPG" checkSQLschema="false" dataNode="pg1" />
    <schema name="SBMY" checkSQLschema="false" dataNode="my1" />
    <dataNode name="pg1" dataHost="pgh" database="$PG_DB" />
    <dataNode name="my1" dataHost="myh" database="sbtest_bench" />
    <dataHost name="pgh" maxCon="200" minCon="4" balance="0" writeType="0" dbType="postgresql"
              dbDriver="native" switchType="-1">
        <heartbeat>select 1</heartbeat>
        <writeHost host="pgM" url="jdbc:postgresql://$PG_HOST:$PG_PORT/postgres" user="$PG_USER"
                   password="$PG_PASS" />
    </dataHost>
$(mysql_data_host myh)
</mycat:schema>
EOF

# ---------------------------------------------------------------- processes
build_manx

socat TCP-LISTEN:"$RELAY_PORT",bind=127.0.0.1,reuseaddr,fork,backlog=1024,nodelay \
    TCP:"$PG_HOST:$PG_PORT",nodelay 2>"$WORK/socat.log" &
PIDS+=($!)
RELAY_PID=$!
MANX_LOG=warn "$MANX" --conf "$WORK/manx" --manager-port 0 2>"$WORK/manx.log" &
PIDS+=($!)
MANX_PID=$!
wait_port "$RELAY_PORT"
wait_port "$MANX_PORT"

# Both schemas answer, with the whole table, before any timing.
manx_sql() { "$MYSQL_CLI" -h127.0.0.1 -P"$MANX_PORT" -ubench -pbench -N -B "$@"; }
for schema in SBPG SBMY; do
    n=""
    for _ in $(seq 50); do
        n=$(manx_sql "$schema" -e "SELECT COUNT(*) FROM sbtest1" 2>&1) && break
        sleep 0.2
    done
    [[ $n == "$TABLE_SIZE" ]] || die "manx schema $schema: SELECT COUNT(*) FROM sbtest1 gave: $n (see $WORK/manx.log)"
done

# ---------------------------------------------------------------- sysbench runs
# run_one TARGET WORKLOAD THREADS PSMODE REP: one sysbench run, one line in results.tsv
run_one() {
    local target=$1 workload=$2 threads=$3 ps=$4 rep=$5 pid="" conn
    case $target in
        pg-direct) conn=(--db-driver=pgsql --pgsql-host="$PG_HOST" --pgsql-port="$PG_PORT"
            --pgsql-user="$PG_USER" --pgsql-password="$PG_PASS" --pgsql-db="$PG_DB") ;;
        pg-relay) conn=(--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$RELAY_PORT"
            --pgsql-user="$PG_USER" --pgsql-password="$PG_PASS" --pgsql-db="$PG_DB") ;;
        manx-pg) pid=$MANX_PID conn=(--db-driver=mysql --mysql-host=127.0.0.1
            --mysql-port="$MANX_PORT" --mysql-user=bench --mysql-password=bench --mysql-db=SBPG) ;;
        manx-my) pid=$MANX_PID conn=(--db-driver=mysql --mysql-host=127.0.0.1
            --mysql-port="$MANX_PORT" --mysql-user=bench --mysql-password=bench --mysql-db=SBMY) ;;
    esac
    local before=0 out
    [[ -n $pid ]] && before=$(cpu_ticks "$pid")
    [[ $target == pg-relay ]] && before=$(child_cpu_ticks "$RELAY_PID")
    if ! out=$(sysbench "$workload" "${conn[@]}" \
        --tables=1 --table-size="$TABLE_SIZE" --threads="$threads" --time="$TIME" \
        --db-ps-mode="$ps" --percentile=95 --report-interval=0 run 2>&1); then
        local file=$WORK/failed-$target-$workload-t$threads-$ps-$rep.log first
        printf '%s\n' "$out" >"$file"
        first=$(grep -m1 -E 'FATAL|error' <<<"$out" || tail -1 <<<"$out")
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$workload" "$threads" "$ps" "$target" "$rep" "$first" >>"$FAILURES"
        log "sysbench failed against $target ($workload ps=$ps): $first (whole output: $file)"
        return 0
    fi
    local queries qps p95 cpu_us=""
    read -r queries qps p95 <<<"$(sysbench_figures "$out")"
    if [[ -n $pid ]]; then
        local after
        after=$(cpu_ticks "$pid")
        cpu_us=$(us_per_stmt "$before" "$after" "$queries")
    elif [[ $target == pg-relay ]]; then
        local after
        sleep 0.5 # sysbench has disconnected: let the relay's processes exit and be reaped
        after=$(child_cpu_ticks "$RELAY_PID")
        cpu_us=$(us_per_stmt "$before" "$after" "$queries")
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$workload" "$threads" "$ps" "$target" "$rep" \
        "$qps" "$p95" "$cpu_us" >>"$RESULTS"
    log "$workload t=$threads ps=$ps rep=$rep $target: $qps qps, p95 $p95 ms${cpu_us:+, $cpu_us us/stmt}"
}

TARGETS=(pg-direct pg-relay manx-pg manx-my)
log "warming up"
for t in "${TARGETS[@]}"; do
    for ps in "${PS_MODES[@]}"; do
        TIME=2 run_one "$t" oltp_read_only 4 "$ps" warmup
    done
done
: >"$RESULTS"
: >"$FAILURES"
run_matrix
MANX_RSS=$(rss_kb "$MANX_PID")

# ---------------------------------------------------------------- report
python3 - "$RESULTS" "$FAILURES" "$TIME" "$REPS" "$TABLE_SIZE" "$MANX_RSS" <<'EOF'
import collections, statistics, sys

results, failures, run_time, reps, table_size, rss = sys.argv[1:7]

runs = collections.defaultdict(dict)  # (workload, threads, ps) -> rep -> target -> (qps, p95, cpu)
for line in open(results):
    w, t, ps, target, rep, qps, p95, cpu = line.rstrip("\n").split("\t")
    f = lambda v: float(v) if v else None
    runs[(w, int(t), ps)].setdefault(rep, {})[target] = (f(qps), f(p95), f(cpu))
failed = [line.rstrip("\n").split("\t") for line in open(failures) if line.strip()]
for w, t, ps, target, rep, _ in failed:
    runs[(w, int(t), ps)].setdefault(rep, {})

def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

def fmt(v, spec="{:.0f}"):
    return "-" if v is None else spec.format(v)

def paired(reps, a, b, i=0):
    return med([r[a][i] / r[b][i] for r in reps
                if a in r and b in r and r[a][i] is not None and r[b][i]])

print(f"\nsysbench, sbtest1 of {table_size} rows, {run_time} s per run, median of {reps} interleaved "
      f"paired runs; QPS (p95 ms); µs/stmt: the proxy's CPU per statement")
print("| workload | thr | ps | pg-direct | pg-relay | relay µs/stmt | manx-pg | µs/stmt | ×pg-direct | "
      "×pg-relay (≥ 0.8) | manx-my | µs/stmt | pg µs ÷ my µs (≤ 1.2) |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (w, t, ps), by_rep in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] != "auto")):
    reps_ = list(by_rep.values())
    def col(target):
        q = med([r[target][0] for r in reps_ if target in r])
        p = med([r[target][1] for r in reps_ if target in r])
        return f"{fmt(q)} ({fmt(p, '{:.2f}')})"
    def cpu(target):
        return fmt(med([r[target][2] for r in reps_ if target in r]), "{:.1f}")
    r2 = lambda a, b, i=0: fmt(paired(reps_, a, b, i), "{:.2f}")
    print(f"| {w.replace('oltp_', '')} | {t} | {'on' if ps == 'auto' else 'off'} | {col('pg-direct')} | "
          f"{col('pg-relay')} | {cpu('pg-relay')} | {col('manx-pg')} | {cpu('manx-pg')} | "
          f"{r2('manx-pg', 'pg-direct')} | {r2('manx-pg', 'pg-relay')} | {col('manx-my')} | {cpu('manx-my')} | "
          f"{r2('manx-pg', 'manx-my', 2)} |")
print(f"\nmanx RSS after the runs: {int(rss) / 1024:.1f} MB")
if failed:
    print(f"\nfailed sysbench runs ({len(failed)}; their output: target/bench-pg/failed-*.log):")
    seen = set()
    for w, t, ps, target, rep, first in failed:
        key = (w, ps, target, first)
        if key in seen:
            continue
        seen.add(key)
        print(f"- {target} {w} ps={'on' if ps == 'auto' else 'off'}: {first}")
EOF
