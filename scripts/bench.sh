#!/usr/bin/env bash
#
# scripts/bench.sh — manx's overhead benchmark (issue 8).
#
#   scripts/bench.sh [--quick] [--reps N] [--time SECONDS]
#
# Runs sysbench against four targets, interleaved in one time window (A B C D A B C D ...,
# medians of the paired runs), so that the ratios compare runs made under the same machine load:
#   direct   MariaDB (the sandbox primary, 127.0.0.1:13306)
#   relay    a bare TCP relay in front of it (socat, one forked process per connection)
#   manx-1   manx, single-node schema (its default dataNode holds the sbtest tables)
#   manx-2   manx, sbtest tables sharded over two dataNodes (id mod 2)
# for oltp_point_select, oltp_read_only and oltp_read_write at 1, 4, 16 and 64 threads, with
# server-side prepared statements (sysbench's default) and with --db-ps-mode=disable.
# It prints one table: QPS, p95 latency, the paired ratios manx/direct and manx/relay, manx's
# CPU microseconds per statement (utime+stime from /proc/PID/stat over the run / statements; for
# the relay, the CPU of its per-connection processes)
# and its RSS after the run.
#
# Then, against a third manx whose table `big` is sharded over 3 dataNodes:
#   - median latency of cross-shard ORDER BY ... LIMIT 10, GROUP BY and COUNT(*) next to the
#     same statement on each node directly (the slowest node is the reference);
#   - RSS while one client streams 3 x ROWS rows (SELECT of the whole table);
#   - RSS with 5,000 idle, authenticated client connections.
#
# --quick: point_select and read_only at 16 threads only, 3 reps of 5 s, 3 x 200,000 rows for the
# 3-node part (about 5 minutes). The full run takes about 1 h 45 min (--time 10: about an hour).
#
# Needs: the sandbox (scripts/sandbox.sh; honours MANX_SANDBOX_DIR), sysbench and socat (installed
# with apt-get when missing and we are root), python3, a mariadb/mysql client, cargo. Creates the
# databases sbtest_bench, sbtest_s1, sbtest_s2, sbtest_x1..3 on the sandbox primary (reused by later
# runs when their row counts match). Writes its configs and logs under target/bench/.
# MANX_BIN=path runs that binary instead of building target/release/manx.
# Not part of CI: it prints figures, it does not pass or fail.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd -- "$SCRIPT_DIR/.." && pwd -P)
cd "$REPO"
BENCH_NAME=bench
# shellcheck source=scripts/lib/bench.sh
. "$SCRIPT_DIR/lib/bench.sh"

parse_bench_args 2,32 "$@"

if ((QUICK)); then
    WORKLOADS=(oltp_point_select oltp_read_only)
    THREADS=(16)
    REPS=${REPS:-3}
    TIME=${TIME:-5}
    BIG_ROWS=${BENCH_BIG_ROWS:-200000}
    LAT_TIME=2
else
    WORKLOADS=(oltp_point_select oltp_read_only oltp_read_write)
    THREADS=(1 4 16 64)
    REPS=${REPS:-3}
    TIME=${TIME:-20}
    BIG_ROWS=${BENCH_BIG_ROWS:-1000000}
    LAT_TIME=5
fi
PS_MODES=(auto disable)
TABLE_SIZE=${BENCH_TABLE_SIZE:-100000}
IDLE_CLIENTS=${BENCH_IDLE_CLIENTS:-5000}

MY_HOST=127.0.0.1
MY_PORT=13306
MY_USER=manx
MY_PASS=manx
RELAY_PORT=${BENCH_RELAY_PORT:-13420}
MANX1_PORT=${BENCH_MANX1_PORT:-13421}
MANX2_PORT=${BENCH_MANX2_PORT:-13422}
MANX3_PORT=${BENCH_MANX3_PORT:-13423}

WORK=$REPO/target/bench
mkdir -p "$WORK"
RESULTS=$WORK/results.tsv
LATENCY=$WORK/latency.tsv
: >"$RESULTS"
: >"$LATENCY"


# ---------------------------------------------------------------- tools
install_missing sysbench socat
command -v python3 >/dev/null || die "python3 is needed"

# ---------------------------------------------------------------- backends and data
log "starting the sandbox"
"$SCRIPT_DIR/sandbox.sh" start >/dev/null

SB_CONN=(--mysql-host="$MY_HOST" --mysql-user="$MY_USER" --mysql-password="$MY_PASS")
if [[ $(count_rows sbtest_bench.sbtest1) != "$TABLE_SIZE" ]]; then
    log "loading sbtest_bench.sbtest1 ($TABLE_SIZE rows)"
    sql -e "DROP DATABASE IF EXISTS sbtest_bench; CREATE DATABASE sbtest_bench"
    sysbench oltp_common "${SB_CONN[@]}" --mysql-port="$MY_PORT" --mysql-db=sbtest_bench \
        --tables=1 --table-size="$TABLE_SIZE" prepare >"$WORK/prepare.log"
fi
half=$((TABLE_SIZE / 2))
for n in 1 2; do
    db=sbtest_s$n
    if [[ $(count_rows $db.sbtest1) != "$half" ]]; then
        log "loading $db.sbtest1 (ids with id % 2 = $((n - 1)))"
        sql -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db;
                CREATE TABLE $db.sbtest1 LIKE sbtest_bench.sbtest1;
                INSERT INTO $db.sbtest1 SELECT * FROM sbtest_bench.sbtest1 WHERE id % 2 = $((n - 1))"
    fi
done
for n in 1 2 3; do
    db=sbtest_x$n
    if [[ $(count_rows $db.big) != "$BIG_ROWS" ]]; then
        log "loading $db.big ($BIG_ROWS rows, ids with id % 3 = $((n - 1)))"
        sql -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db;
                CREATE TABLE $db.big (id BIGINT NOT NULL PRIMARY KEY, k INT NOT NULL,
                    c CHAR(32) NOT NULL, KEY k (k));
                INSERT INTO $db.big SELECT seq * 3 + $((n - 1)), seq % 1000, md5(seq)
                    FROM $db.seq_1_to_$BIG_ROWS"
    fi
done

# ---------------------------------------------------------------- manx configs
write_conf() { # dir port schema.xml-body
    local dir=$1 port=$2 body=$3
    mkdir -p "$dir"
    bench_server_xml "$port" SB >"$dir/server.xml"
    write_mod_rules "$dir" 2 3
    cat >"$dir/schema.xml" <<EOF
<?xml version="1.0"?>
<mycat:schema xmlns:mycat="http://io.mycat/">
$body
$(mysql_data_host h)
</mycat:schema>
EOF
}
write_conf "$WORK/manx1" "$MANX1_PORT" '
    <schema name="SB" checkSQLschema="false" dataNode="d1" />
    <dataNode name="d1" dataHost="h" database="sbtest_bench" />'
write_conf "$WORK/manx2" "$MANX2_PORT" '
    <schema name="SB" checkSQLschema="false" dataNode="s1">
        <table name="sbtest1" dataNode="s1,s2" rule="mod2" />
    </schema>
    <dataNode name="s$1-2" dataHost="h" database="sbtest_s$1-2" />'
write_conf "$WORK/manx3" "$MANX3_PORT" '
    <schema name="SB" checkSQLschema="false">
        <table name="big" dataNode="x1,x2,x3" rule="mod3" />
    </schema>
    <dataNode name="x$1-3" dataHost="h" database="sbtest_x$1-3" />'

# ---------------------------------------------------------------- processes
build_manx

# 5,000 idle clients need as many descriptors in manx (and in the client).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true

socat TCP-LISTEN:"$RELAY_PORT",bind=127.0.0.1,reuseaddr,fork,backlog=1024,nodelay \
    TCP:"$MY_HOST:$MY_PORT",nodelay 2>"$WORK/socat.log" &
PIDS+=($!)
RELAY_PID=$!
for i in 1 2 3; do
    MANX_LOG=warn "$MANX" --conf "$WORK/manx$i" --manager-port 0 2>"$WORK/manx$i.log" &
    PIDS+=($!)
    eval "MANX${i}_PID=$!"
done
wait_port "$RELAY_PORT"
wait_port "$MANX1_PORT"
wait_port "$MANX2_PORT"
wait_port "$MANX3_PORT"

# ---------------------------------------------------------------- sysbench runs
# run_one TARGET WORKLOAD THREADS PSMODE REP: one sysbench run, one line in results.tsv
run_one() {
    local target=$1 workload=$2 threads=$3 ps=$4 rep=$5 port db user pass pid=""
    case $target in
        direct) port=$MY_PORT db=sbtest_bench user=$MY_USER pass=$MY_PASS ;;
        relay) port=$RELAY_PORT db=sbtest_bench user=$MY_USER pass=$MY_PASS ;;
        manx1) port=$MANX1_PORT db=SB user=bench pass=bench pid=$MANX1_PID ;;
        manx2) port=$MANX2_PORT db=SB user=bench pass=bench pid=$MANX2_PID ;;
    esac
    local before=0 out
    [[ -n $pid ]] && before=$(cpu_ticks "$pid")
    [[ $target == relay ]] && before=$(child_cpu_ticks "$RELAY_PID")
    out=$(sysbench "$workload" --mysql-host="$MY_HOST" --mysql-port="$port" \
        --mysql-user="$user" --mysql-password="$pass" --mysql-db="$db" \
        --tables=1 --table-size="$TABLE_SIZE" --threads="$threads" --time="$TIME" \
        --db-ps-mode="$ps" --percentile=95 --report-interval=0 \
        run 2>&1) || { log "sysbench failed against $target: $(tail -3 <<<"$out")"; return 0; }
    local queries qps p95 cpu_us="" rss=""
    read -r queries qps p95 <<<"$(sysbench_figures "$out")"
    if [[ -n $pid ]]; then
        local after
        after=$(cpu_ticks "$pid")
        cpu_us=$(us_per_stmt "$before" "$after" "$queries")
        rss=$(rss_kb "$pid")
    elif [[ $target == relay ]]; then
        local after
        sleep 0.5 # sysbench has disconnected: let the relay's processes exit and be reaped
        after=$(child_cpu_ticks "$RELAY_PID")
        cpu_us=$(us_per_stmt "$before" "$after" "$queries")
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$workload" "$threads" "$ps" "$target" "$rep" \
        "$qps" "$p95" "$cpu_us" "$rss" >>"$RESULTS"
    log "$workload t=$threads ps=$ps rep=$rep $target: $qps qps, p95 $p95 ms${cpu_us:+, $cpu_us us/stmt}"
}

TARGETS=(direct relay manx1 manx2)
log "warming up"
for t in "${TARGETS[@]}"; do
    TIME=2 run_one "$t" oltp_point_select 4 disable warmup >/dev/null 2>&1
done
: >"$RESULTS"
run_matrix

# ---------------------------------------------------------------- cross-shard latency
cat >"$WORK/one_query.lua" <<'EOF'
-- Runs the statement in $BENCH_SQL once per event and reads its whole result. With
-- $BENCH_DBS (comma-separated), thread i works in the i-th database.
function thread_init()
    drv = sysbench.sql.driver()
    con = drv:connect()
    local dbs = os.getenv("BENCH_DBS")
    if dbs ~= nil and dbs ~= "" then
        local list = {}
        for db in string.gmatch(dbs, "[^,]+") do list[#list + 1] = db end
        con:query("USE " .. list[(sysbench.tid % #list) + 1])
    end
end
function thread_done()
    con:disconnect()
end
function event()
    con:query(os.getenv("BENCH_SQL"))
end
EOF
QUERIES=(
    "order_by_limit	SELECT id, k, c FROM big ORDER BY k DESC, id DESC LIMIT 10"
    "order_by_filesort	SELECT id, k, c FROM big ORDER BY c LIMIT 10"
    "group_by	SELECT k, COUNT(*), SUM(id) FROM big GROUP BY k"
    "count	SELECT COUNT(*) FROM big"
)
latency_one() { # name target rep sql
    local name=$1 target=$2 rep=$3 q=$4 port db user pass out dbs="" threads=1
    case $target in
        manx3) port=$MANX3_PORT db=SB user=bench pass=bench ;;
        x*) port=$MY_PORT db=sbtest_$target user=$MY_USER pass=$MY_PASS ;;
        # The three nodes queried directly at the same time (one client each): the backend
        # work manx causes, on the same shared server.
        parallel) port=$MY_PORT db=sbtest_x1 user=$MY_USER pass=$MY_PASS threads=3
            dbs=sbtest_x1,sbtest_x2,sbtest_x3 ;;
    esac
    out=$(BENCH_SQL=$q BENCH_DBS=$dbs sysbench "$WORK/one_query.lua" --mysql-host="$MY_HOST" --mysql-port="$port" \
        --mysql-user="$user" --mysql-password="$pass" --mysql-db="$db" --threads="$threads" \
        --time="$LAT_TIME" --percentile=50 run 2>&1) || { log "latency run failed: $out"; return 0; }
    local med
    med=$(awk '/50th percentile:/ {print $3; exit}' <<<"$out")
    printf '%s\t%s\t%s\t%s\n' "$name" "$target" "$rep" "$med" >>"$LATENCY"
}
log "cross-shard latency (3 nodes x $BIG_ROWS rows)"
for entry in "${QUERIES[@]}"; do
    name=${entry%%	*}
    q=${entry#*	}
    for rep in $(seq "$REPS"); do
        for target in manx3 x1 x2 x3 parallel; do latency_one "$name" "$target" "$rep" "$q"; done
    done
done

# ---------------------------------------------------------------- memory
sleep 1
STREAM_IDLE=$(rss_kb "$MANX3_PID")
log "streaming 3 x $BIG_ROWS rows through manx"
STREAM_PEAK=$STREAM_IDLE
"$MYSQL_CLI" --quick -h127.0.0.1 -P"$MANX3_PORT" -ubench -pbench SB -N -B \
    -e "SELECT id, k, c FROM big" >"$WORK/stream.count.tmp" 2>"$WORK/stream.err" &
client=$!
STREAM_START=$(date +%s.%N)
while kill -0 "$client" 2>/dev/null; do
    r=$(rss_kb "$MANX3_PID")
    ((r > STREAM_PEAK)) && STREAM_PEAK=$r
    sleep 0.05
done
wait "$client" || log "streaming client failed: $(cat "$WORK/stream.err")"
STREAM_SECS=$(python3 -c "print(round($(date +%s.%N) - $STREAM_START, 1))")
STREAM_ROWS=$(wc -l <"$WORK/stream.count.tmp")
rm -f "$WORK/stream.count.tmp"

log "opening $IDLE_CLIENTS idle client connections"
cat >"$WORK/idle_clients.py" <<'EOF'
"""Opens N authenticated MySQL connections (mysql_native_password), holds them until stdin
closes. Prints 'ready <n>' once all are logged in."""
import hashlib, socket, struct, sys

host, port, user, password, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])

def read_packet(s):
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk:
            raise EOFError("connection closed")
        head += chunk
    length = head[0] | head[1] << 8 | head[2] << 16
    body = b""
    while len(body) < length:
        chunk = s.recv(length - len(body))
        if not chunk:
            raise EOFError("connection closed")
        body += chunk
    return head[3], body

def token(salt):
    h1 = hashlib.sha1(password.encode()).digest()
    h2 = hashlib.sha1(h1).digest()
    h3 = hashlib.sha1(salt + h2).digest()
    return bytes(a ^ b for a, b in zip(h1, h3))

def login():
    s = socket.create_connection((host, port))
    seq, hs = read_packet(s)
    p = hs.index(b"\0", 1) + 1 + 4
    salt1 = hs[p:p + 8]
    p += 8 + 1 + 2 + 1 + 2 + 2
    auth_len = hs[p]
    p += 1 + 10
    salt2 = hs[p:p + max(13, auth_len - 8)][:12]
    caps = 0x00000001 | 0x00000200 | 0x00008000 | 0x00080000  # LONG_PASSWORD PROTOCOL_41 SECURE_CONN PLUGIN_AUTH
    auth = token(salt1 + salt2)
    body = struct.pack("<IIB23x", caps, 1 << 24, 33) + user.encode() + b"\0" + bytes([len(auth)]) + auth + b"mysql_native_password\0"
    s.sendall(struct.pack("<I", len(body))[:3] + bytes([seq + 1]) + body)
    seq, resp = read_packet(s)
    if resp[0] == 0xFE:  # auth switch: answer with the new salt
        plugin_end = resp.index(b"\0", 1)
        salt = resp[plugin_end + 1:].rstrip(b"\0")
        auth = token(salt[:20])
        s.sendall(struct.pack("<I", len(auth))[:3] + bytes([seq + 1]) + auth)
        seq, resp = read_packet(s)
    if resp[0] != 0x00:
        raise RuntimeError("login refused: %r" % resp)
    return s

conns = [login() for _ in range(n)]
print("ready", len(conns), flush=True)
sys.stdin.read()
EOF
sleep 1
IDLE_BEFORE=$(rss_kb "$MANX3_PID")
coproc IDLE { python3 "$WORK/idle_clients.py" 127.0.0.1 "$MANX3_PORT" bench bench "$IDLE_CLIENTS" 2>&1; }
IDLE_LINE=""
read -r IDLE_LINE <&"${IDLE[0]}" || true
sleep 2
IDLE_AFTER=$(rss_kb "$MANX3_PID")
exec {IDLE[1]}>&-
wait "$IDLE_PID" 2>/dev/null || true
[[ $IDLE_LINE == ready* ]] || log "idle clients: $IDLE_LINE"

# ---------------------------------------------------------------- report
python3 - "$RESULTS" "$LATENCY" "$STREAM_IDLE" "$STREAM_PEAK" "$STREAM_ROWS" "$STREAM_SECS" \
    "$IDLE_BEFORE" "$IDLE_AFTER" "$IDLE_LINE" "$BIG_ROWS" "$TIME" "$REPS" <<'EOF'
import collections, statistics, sys

results, latency = sys.argv[1], sys.argv[2]
stream_idle, stream_peak, stream_rows = map(int, sys.argv[3:6])
stream_secs = float(sys.argv[6])
idle_before, idle_after = int(sys.argv[7]), int(sys.argv[8])
idle_line, big_rows, run_time, reps = sys.argv[9], int(sys.argv[10]), sys.argv[11], sys.argv[12]

runs = collections.defaultdict(dict)  # (workload, threads, ps) -> rep -> target -> (qps, p95, cpu, rss)
for line in open(results):
    w, t, ps, target, rep, qps, p95, cpu, rss = line.rstrip("\n").split("\t")
    f = lambda v: float(v) if v else None
    runs[(w, int(t), ps)].setdefault(rep, {})[target] = (f(qps), f(p95), f(cpu), f(rss))

def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

def fmt(v, spec="{:.0f}"):
    return "-" if v is None else spec.format(v)

def paired(reps, a, b):
    return med([r[a][0] / r[b][0] for r in reps if a in r and b in r and r[b][0]])

print(f"\nsysbench, {run_time} s per run, median of {reps} interleaved paired runs; QPS (p95 ms)")
print("| workload | thr | ps | direct | relay | relay µs/stmt | manx 1-node | ×direct | ×relay | µs/stmt | RSS MB | manx 2-node | ×relay | µs/stmt | RSS MB |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (w, t, ps), by_rep in runs.items():
    reps_ = list(by_rep.values())
    def col(target):
        q = med([r[target][0] for r in reps_ if target in r])
        p = med([r[target][1] for r in reps_ if target in r])
        return f"{fmt(q)} ({fmt(p, '{:.2f}')})"
    def stat(target, i, spec):
        return fmt(med([r[target][i] for r in reps_ if target in r]), spec)
    rss = lambda target: fmt(med([r[target][3] / 1024 for r in reps_ if target in r and r[target][3]]), "{:.0f}")
    print(f"| {w.replace('oltp_', '')} | {t} | {'on' if ps == 'auto' else 'off'} | {col('direct')} | {col('relay')} | {stat('relay', 2, '{:.1f}')} | "
          f"{col('manx1')} | {fmt(paired(reps_, 'manx1', 'direct'), '{:.2f}')} | {fmt(paired(reps_, 'manx1', 'relay'), '{:.2f}')} | "
          f"{stat('manx1', 2, '{:.1f}')} | {rss('manx1')} | {col('manx2')} | {fmt(paired(reps_, 'manx2', 'relay'), '{:.2f}')} | "
          f"{stat('manx2', 2, '{:.1f}')} | {rss('manx2')} |")

lat = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(latency):
    name, target, rep, ms = line.rstrip("\n").split("\t")
    if ms:
        lat[name][target].append(float(ms))
print(f"\ncross-shard statements over 3 nodes x {big_rows} rows, median latency ms (1 client)")
print("| statement | manx (3 nodes) | node x1 | node x2 | node x3 | manx / slowest node | 3 nodes directly in parallel | manx / parallel |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name, by_target in lat.items():
    m = {t: med(v) for t, v in by_target.items()}
    nodes = [m.get(x) for x in ("x1", "x2", "x3") if m.get(x) is not None]
    slowest = max(nodes) if nodes else None
    ratio = m.get("manx3") / slowest if slowest and m.get("manx3") else None
    par = m.get("parallel")
    pratio = m.get("manx3") / par if par and m.get("manx3") else None
    print(f"| {name} | {fmt(m.get('manx3'), '{:.2f}')} | {fmt(m.get('x1'), '{:.2f}')} | {fmt(m.get('x2'), '{:.2f}')} | "
          f"{fmt(m.get('x3'), '{:.2f}')} | {fmt(ratio, '{:.2f}')} | {fmt(par, '{:.2f}')} | {fmt(pratio, '{:.2f}')} |")

print("\nmemory (manx RSS)")
print(f"- streaming {stream_rows} rows (3 nodes x {big_rows}) to one client in {stream_secs} s: "
      f"idle {stream_idle / 1024:.1f} MB, peak {stream_peak / 1024:.1f} MB, growth {(stream_peak - stream_idle) / 1024:.1f} MB")
n = idle_line.split()[1] if idle_line.startswith("ready") else "?"
print(f"- {n} idle authenticated clients: {idle_before / 1024:.1f} MB before, {idle_after / 1024:.1f} MB with them "
      f"({(idle_after - idle_before) / max(int(n) if n.isdigit() else 1, 1):.1f} KB per client)")
EOF
