# Shared by scripts/bench.sh, scripts/bench-pg.sh and scripts/bench-xa.sh (sourced, not run):
# logging, tool installation, the sandbox primary's client, the manx binary, background
# processes, /proc figures and the sysbench run matrix. The sourcing script sets BENCH_NAME (the
# log prefix) before it sources this file, and REPO (the repository root).

# log MESSAGE...: a timestamped line on stderr.
log() { printf '[%s %s] %s\n' "$BENCH_NAME" "$(date +%H:%M:%S)" "$*" >&2; }
# die MESSAGE...: log it as an error and exit 1.
die() { log "ERROR: $*"; exit 1; }

# install_missing COMMAND...: installs (apt-get, as root) the Debian packages of the same names
# for the commands not on PATH; dies when some are missing and we are not root.
install_missing() {
    local missing=() c
    for c in "$@"; do command -v "$c" >/dev/null || missing+=("$c"); done
    if ((${#missing[@]})); then
        (($(id -u) == 0)) || die "missing ${missing[*]}: install them (apt-get install ${missing[*]})"
        log "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null ||
            { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null; }
    fi
}

# The MySQL command-line client: mariadb where installed, else mysql.
if command -v mariadb >/dev/null; then MYSQL_CLI=mariadb; else MYSQL_CLI=mysql; fi
# sql ARGS...: the client on the sandbox primary ($MY_HOST:$MY_PORT as $MY_USER), batch mode.
sql() { "$MYSQL_CLI" -h"$MY_HOST" -P"$MY_PORT" -u"$MY_USER" -p"$MY_PASS" -N -B "$@"; }
# count_rows DB.TABLE: its row count on the primary, -1 when it cannot be read.
count_rows() { sql -e "SELECT COUNT(*) FROM $1" 2>/dev/null || echo -1; }

# build_manx: sets MANX to $MANX_BIN (a binary built elsewhere, to compare two builds) or builds
# target/release/manx.
build_manx() {
    if [[ -n ${MANX_BIN:-} ]]; then
        MANX=$MANX_BIN
        [[ -x $MANX ]] || die "MANX_BIN=$MANX is not an executable"
    else
        log "building manx (release)"
        cargo build --release --locked --quiet --bin manx
        MANX=$REPO/target/release/manx
    fi
}

# Background processes (append their pids to PIDS): killed when the script exits.
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

# wait_port PORT: returns once something listens on 127.0.0.1:PORT (dies after 10 s).
wait_port() {
    local port=$1
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    die "nothing listens on port $port"
}

CLK_TCK=$(getconf CLK_TCK)
# cpu_ticks PID: its utime + stime, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# child_cpu_ticks PID: the cutime + cstime of its reaped children. The relay forks a process per
# connection: their CPU reaches the listener's cutime+cstime once they have exited and been
# reaped.
child_cpu_ticks() { awk '{print $16 + $17}' "/proc/$1/stat"; }
# rss_kb PID: its resident memory (VmRSS), in KiB.
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# us_per_stmt BEFORE AFTER QUERIES: the CPU ticks between BEFORE and AFTER per query, in µs.
us_per_stmt() { python3 -c "print(round(($2 - $1) * 1e6 / $CLK_TCK / max($3, 1), 1))"; }

# sysbench_figures OUTPUT: "queries qps p95" of a sysbench run's output.
sysbench_figures() {
    printf '%s %s %s\n' "$(awk '/queries:/ {print $2; exit}' <<<"$1")" \
        "$(awk '/queries:/ {gsub(/\(/, "", $3); print $3; exit}' <<<"$1")" \
        "$(awk '/95th percentile:/ {print $3; exit}' <<<"$1")"
}

# run_matrix: run_one TARGET WORKLOAD THREADS PSMODE REP for every workload, thread count,
# ps mode and rep of WORKLOADS, THREADS, PS_MODES and REPS, each rep over every one of TARGETS.
run_matrix() {
    local workload threads ps rep i
    for workload in "${WORKLOADS[@]}"; do
        for threads in "${THREADS[@]}"; do
            for ps in "${PS_MODES[@]}"; do
                for rep in $(seq "$REPS"); do
                    # Rotate the order each rep so no target always runs first after a pause.
                    for i in "${!TARGETS[@]}"; do
                        run_one "${TARGETS[$(((i + rep) % ${#TARGETS[@]}))]}" "$workload" "$threads" "$ps" "$rep"
                    done
                done
            done
        done
    done
}

# write_mod_rules DIR COUNT...: DIR/rule.xml with table rules modN (PartitionByMod, count N,
# on column id) for each COUNT.
write_mod_rules() {
    local dir=$1 n
    shift
    {
        echo '<?xml version="1.0" encoding="UTF-8"?>'
        echo '<mycat:rule xmlns:mycat="http://io.mycat/">'
        for n in "$@"; do
            echo "    <tableRule name=\"mod$n\"><rule><columns>id</columns><algorithm>mod$n</algorithm></rule></tableRule>"
        done
        for n in "$@"; do
            echo "    <function name=\"mod$n\" class=\"io.mycat.route.function.PartitionByMod\">"
            echo "        <property name=\"count\">$n</property>"
            echo "    </function>"
        done
        echo '</mycat:rule>'
    } >"$dir/rule.xml"
}

# parse_bench_args HELP_LINES ARGS...: --quick (QUICK=1), --reps N (REPS), --time S (TIME);
# -h/--help prints the lines HELP_LINES (a sed range, as 2,32) of the script and exits.
parse_bench_args() {
    local help=$1
    shift
    QUICK=0
    REPS=""
    TIME=""
    while (($#)); do
        case $1 in
            --quick) QUICK=1 ;;
            --reps) REPS=$2; shift ;;
            --time) TIME=$2; shift ;;
            -h | --help) sed -n "${help}p" "$0"; exit 0 ;;
            *) echo "$(basename "$0"): unknown argument $1" >&2; exit 2 ;;
        esac
        shift
    done
}

# bench_server_xml PORT SCHEMAS: a server.xml listening on 127.0.0.1:PORT with user
# bench/bench on SCHEMAS (comma-separated).
bench_server_xml() {
    cat <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<mycat:server xmlns:mycat="http://io.mycat/">
    <system>
        <property name="serverPort">$1</property>
        <property name="bindIp">127.0.0.1</property>
    </system>
    <user name="bench">
        <property name="password">bench</property>
        <property name="schemas">$2</property>
    </user>
</mycat:server>
EOF
}

# mysql_data_host NAME: a schema.xml dataHost NAME on the sandbox primary ($MY_HOST:$MY_PORT
# as $MY_USER), up to 200 connections.
mysql_data_host() {
    cat <<EOF
    <dataHost name="$1" maxCon="200" minCon="4" balance="0" writeType="0" dbType="mysql"
              dbDriver="native" switchType="-1">
        <heartbeat>select user()</heartbeat>
        <writeHost host="m" url="$MY_HOST:$MY_PORT" user="$MY_USER" password="$MY_PASS" />
    </dataHost>
EOF
}
