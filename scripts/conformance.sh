#!/usr/bin/env bash
#
# scripts/conformance.sh — how much of three test suites nobody on this project wrote passes
# directly against MariaDB, and how much of that also passes through manx (issue 18, item 8).
#
#   1. mysqltest: MariaDB's own mysql-test `main/` suite (Debian package mariadb-test), the
#      files listed in scripts/conformance/mysqltest-main.list (how that list was made: see
#      --select below and README "Conformance"), each run with `mariadb-test` (mysqltest)
#      against a running server and compared with its .result file.
#   2. pymysql: PyMySQL's own tests (pymysql/tests of the PyPI sdist 0.10.1, the last one that
#      ships them), run with that sdist's driver.
#   3. sqlalchemy: SQLAlchemy 2.0.36's test/dialect/mysql and test/sql (PyPI sdist), with
#      --backend-only (the tests that talk to a database; the rest only compile SQL strings).
#
# Every suite runs twice, on the same throwaway MariaDB (started under target/conformance/,
# never the sandbox): once directly, once through a manx gateway (debug build of this
# checkout) whose logical schemas (test, test1, test2, test_schema, test_schema_2) each have a
# default dataNode holding the physical database of the same name. A test counts for the
# score if it passes directly; the losses are the ones of those that fail through manx,
# classified by scripts/conformance/classify.py (parser gap, refused by design, wrong answer
# or metadata, protocol, state, other).
#
# Usage:
#   scripts/conformance.sh [--quick] [--suite mysqltest|pymysql|sqlalchemy]... [--keep]
#   scripts/conformance.sh --select      # re-derive the mysqltest list (the 925 candidate files
#                                        # directly, ~20 min) and write it to scripts/conformance/
#
#   --quick   mysqltest: every 4th file of the list; sqlalchemy: test/dialect/mysql only.
#   --tests a,b,c   mysqltest: only these files of main/ (names without .test), e.g. to check a
#             fix; the summary then counts only them.
#   CONFORMANCE_EXPLAIN=route   the gateway's server.xml explainMode (default backend: a plain
#             EXPLAIN of a statement on one dataNode is the backend's plan; route: Mycat's).
#   --keep    leave the MariaDB and manx started for the run running (they are stopped at exit
#             otherwise; a later run reuses a MariaDB left running).
#
# Output: a summary table on stdout (also target/conformance/summary.md); per-test details in
# target/conformance/<suite>/ (results.tsv: test, direct, manx, class, error; diffs and logs).
#
# Needs root for the Debian packages when missing (mariadb-server, mariadb-test, python3-venv)
# and network access to PyPI (PyMySQL, SQLAlchemy, pytest; the sdists of the two suites).
set -euo pipefail

SCRIPT_PATH=$(readlink -f -- "${BASH_SOURCE[0]}")
REPO=$(cd -- "$(dirname -- "$SCRIPT_PATH")/.." && pwd -P)
HERE=$REPO/scripts/conformance
OUT=$REPO/target/conformance
DB_DIR=${CONFORMANCE_DB_DIR:-$OUT/mariadb}   # (override: a second server while another run goes on)
VENV=$OUT/venv
SRC=$OUT/src
MTR_DIR=/usr/share/mysql/mysql-test

PY_PACKAGES=("PyMySQL==1.1.1" "SQLAlchemy==2.0.36" "pytest==8.3.4" "cryptography==44.0.0"
             "setuptools==75.6.0" "wheel==0.45.1")
# PyMySQL's sdists stopped shipping pymysql/tests after 0.10.1 (1.0.x and 1.1.x hold only
# tests/test_auth.py): its suite is 0.10.1's, run with the 0.10.1 driver of the same sdist.
SUITE_SDISTS=("PyMySQL==0.10.1" "SQLAlchemy==2.0.36")
DEB_PACKAGES=(mariadb-server mariadb-client mariadb-test python3-venv)

QUICK=0 KEEP=0 SELECT=0 RESTART_ONLY=0 TESTS=
SUITES=()
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        --tests) shift; TESTS=$1 ;;
        --keep) KEEP=1 ;;
        --select) SELECT=1 ;;
        --restart-mariadb) RESTART_ONLY=1 ;;
        --suite) shift; SUITES+=("$1") ;;
        -h|--help) sed -n '2,/^set -euo/p' "$SCRIPT_PATH" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
((${#SUITES[@]})) || SUITES=(mysqltest pymysql sqlalchemy)

log() { printf '[conformance %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

mkdir -p "$OUT" "$SRC"

# --- Debian packages -----------------------------------------------------------
missing=()
for p in "${DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    [[ $(id -u) -eq 0 ]] || die "missing Debian packages: ${missing[*]} (sudo apt-get install -y ${missing[*]})"
    log "installing ${missing[*]}"
    (
        policy=/usr/sbin/policy-rc.d
        if [[ ! -e $policy ]]; then
            trap 'rm -f "$policy"' EXIT
            printf '#!/bin/sh\n# temporary, created by manx scripts/conformance.sh\nexit 101\n' >"$policy"
            chmod 755 "$policy"
        fi
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q || true
        apt-get install -y -q --no-upgrade --no-install-recommends "${missing[@]}"
    ) </dev/null >&2
fi

# --- Python: a venv with the drivers, pytest, and the two suites' sdists ----------
py_want=$(printf '%s\n' "${PY_PACKAGES[@]}")
if [[ ! -x $VENV/bin/python || ! -e $VENV/.manx-installed || $(cat "$VENV/.manx-installed") != "$py_want" ]]; then
    log "creating $VENV with ${PY_PACKAGES[*]}"
    [[ -x $VENV/bin/python ]] || python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install -q --disable-pip-version-check "${PY_PACKAGES[@]}" </dev/null >&2
    printf '%s\n' "$py_want" >"$VENV/.manx-installed"
fi
for spec in "${SUITE_SDISTS[@]}"; do
    name=${spec%%==*} ver=${spec##*==}
    dir=$SRC/$name-$ver
    [[ -d $dir ]] && continue
    log "downloading the $spec sdist (its test suite)"
    rm -rf "$SRC/dl" && mkdir -p "$SRC/dl"
    # --no-build-isolation: pip prepares the sdist's metadata with the venv's setuptools
    # instead of building SQLAlchemy's build requirements (Cython) from source.
    "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: \
        --no-build-isolation -d "$SRC/dl" "$spec" </dev/null >&2
    top=$(tar -tzf "$SRC"/dl/*.tar.gz | awk -F/ 'NR == 1 { print $1 }')
    tar -xzf "$SRC"/dl/*.tar.gz -C "$SRC"
    [[ -d $dir ]] || mv "$SRC/$top" "$dir"
    rm -rf "$SRC/dl"
done

free_port() { "$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- The throwaway MariaDB -----------------------------------------------------------
# Configured as mysql-test-run configures its servers (include/default_mysqld.cnf: latin1,
# MyISAM by default, small buffers), so that the .result files hold; the Python suites get
# utf8mb4 and InnoDB by SET GLOBAL before they run (suite_globals below).
db_alive() { [[ -S $DB_DIR/s.sock ]] && mariadb --no-defaults -uroot --socket="$DB_DIR/s.sock" -e 'select 1' >/dev/null 2>&1; }
db_admin() { mariadb --no-defaults -uroot --socket="$DB_DIR/s.sock" "$@"; }
start_mariadb() {
    if db_alive; then
        DB_PORT=$(cat "$DB_DIR/port")
        log "MariaDB already running on $DB_PORT"
    else
        # a server that runs but refuses the admin login (a test emptied mysql.user) is
        # restarted: its init-file makes the accounts again
        stop_mariadb
        launch_mariadb
    fi
}
launch_mariadb() {
    local as_root=""
    [[ $(id -u) -eq 0 ]] && as_root="user = root"
    mkdir -p "$DB_DIR/tmp" "$DB_DIR/files/tmp"
    [[ -s $DB_DIR/port ]] || free_port >"$DB_DIR/port"
    DB_PORT=$(cat "$DB_DIR/port")
    # Run at every start: root over TCP without a password, as mysql-test-run's servers have
    # it, root on the socket for this script, manx/manx the gateway's backend account (the
    # suites log in as root through the gateway too). A test that empties mysql.user or
    # changes root's password is undone by a restart.
    cat >"$DB_DIR/init.sql" <<SQL
CREATE OR REPLACE USER 'root'@'localhost';
GRANT ALL ON *.* TO 'root'@'localhost' WITH GRANT OPTION;
CREATE OR REPLACE USER 'root'@'127.0.0.1';
GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
CREATE OR REPLACE USER 'manx'@'127.0.0.1' IDENTIFIED BY 'manx';
GRANT ALL ON *.* TO 'manx'@'127.0.0.1' WITH GRANT OPTION;
SQL
    cat >"$DB_DIR/my.cnf" <<CNF
[mysqld]
$as_root
datadir = $DB_DIR/data
socket = $DB_DIR/s.sock
pid-file = $DB_DIR/m.pid
log-error = $DB_DIR/error.log
tmpdir = $DB_DIR/tmp
port = $DB_PORT
bind-address = 127.0.0.1
skip-name-resolve
server_id = 1
log-bin = $DB_DIR/data/bin
# mysql-test-run's defaults (include/default_mysqld.cnf)
disable-getopt-prefix-matching
plugin-maturity = unknown
local-infile
character-set-server = latin1
connect-timeout = 60
secure-file-priv = $DB_DIR/files
log-bin-trust-function-creators = 1
key_buffer_size = 1M
sort_buffer_size = 256K
max_heap_table_size = 1M
loose-aria-pagecache-buffer-size = 8M
innodb_buffer_pool_size = 32M
innodb_log_file_size = 10M
innodb_flush_log_at_trx_commit = 2
binlog-direct-non-transactional-updates
default-storage-engine = myisam
use_stat_tables = preferably
histogram_type = json_hb
performance_schema = ON
max_connections = 300
init-file = $DB_DIR/init.sql
CNF
    if [[ ! -e $DB_DIR/.installed ]]; then
        log "installing a throwaway MariaDB in $DB_DIR"
        local args=(--defaults-file="$DB_DIR/my.cnf" --auth-root-authentication-method=normal --skip-test-db)
        [[ $(id -u) -eq 0 ]] && args+=(--user=root)
        mariadb-install-db "${args[@]}" >"$DB_DIR/install.log" 2>&1 || die "mariadb-install-db failed: $DB_DIR/install.log"
        touch "$DB_DIR/.installed"
    fi
    log "starting MariaDB on 127.0.0.1:$DB_PORT"
    (cd "$DB_DIR" && exec setsid mariadbd --defaults-file="$DB_DIR/my.cnf") </dev/null >/dev/null 2>&1 &
    for _ in $(seq 1 600); do db_alive && break; sleep 0.1; done
    db_alive || die "MariaDB did not start: $DB_DIR/error.log"
}
stop_mariadb() {
    [[ -e $DB_DIR/m.pid ]] || return 0
    local pid; pid=$(cat "$DB_DIR/m.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || { rm -f "$DB_DIR/m.pid"; return 0; }; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$DB_DIR/m.pid"
}

if ((RESTART_ONLY)); then
    # called by mysqltest_run.py when a file broke the server: a fresh installation, same port
    log "a test broke the server: reinstalling it"
    stop_mariadb
    find "$DB_DIR" -mindepth 1 -maxdepth 1 ! -name port -exec rm -rf {} +
    start_mariadb
    exit 0
fi

# --- The manx gateway ---------------------------------------------------------------
# One logical schema per database the suites use, each with a default dataNode holding the
# physical database of the same name on the throwaway MariaDB (backend account manx/manx);
# user root without a password, as the suites log in.
LOGICAL=(test test1 test2 test_schema test_schema_2)
MANX_PID=""
start_manx() {
    log "building manx (debug)"
    (cd "$REPO" && cargo build -q --bin manx) >&2
    local conf=$OUT/manx-conf
    rm -rf "$conf" && mkdir -p "$conf"
    cp "$REPO/rule.xml" "$REPO/partition-hash-int.txt" "$REPO/autopartition-long.txt" "$conf/"
    {
        echo '<?xml version="1.0"?>'
        echo '<!DOCTYPE mycat:schema SYSTEM "schema.dtd">'
        echo '<mycat:schema xmlns:mycat="http://io.mycat/">'
        for s in "${LOGICAL[@]}"; do
            echo "  <schema name=\"$s\" checkSQLschema=\"false\" dataNode=\"dn_$s\" />"
        done
        for s in "${LOGICAL[@]}"; do
            echo "  <dataNode name=\"dn_$s\" dataHost=\"conf\" database=\"$s\" />"
        done
        echo '  <dataHost name="conf" maxCon="200" minCon="1" balance="0" writeType="0" dbType="mysql" dbDriver="native" switchType="-1">'
        echo '    <heartbeat>select user()</heartbeat>'
        echo "    <writeHost host=\"w1\" url=\"127.0.0.1:$DB_PORT\" user=\"manx\" password=\"manx\" />"
        echo '  </dataHost>'
        echo '</mycat:schema>'
    } >"$conf/schema.xml"
    local schemas; schemas=$(IFS=,; echo "${LOGICAL[*]}")
    # The gateway announces the version the throwaway server announces in its own greeting
    # (MariaDB's `5.5.5-10.11.x-MariaDB-...`), as a MariaDB-backed deployment would set
    # fakeMySQLVersion: the suites then take the same dialect paths through manx as directly.
    local greeting
    greeting=$("$VENV/bin/python" -c 'import sys, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", password="")
print(c.get_server_info())' "$DB_PORT") || die "cannot read the greeting of the MariaDB on $DB_PORT"
    log "the gateway announces the server's version: $greeting"
    # A plain EXPLAIN answers the backend's plan for a statement on one dataNode, as a
    # deployment serving MySQL applications sets it (server.xml explainMode, README); with
    # CONFORMANCE_EXPLAIN=route, Mycat's EXPLAIN (each dataNode's statement) instead.
    local explain=${CONFORMANCE_EXPLAIN:-backend}
    [[ $explain == route || $explain == backend ]] || die "CONFORMANCE_EXPLAIN=$explain is not route or backend"
    log "the gateway's explainMode: $explain"
    cat >"$conf/server.xml" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE mycat:server SYSTEM "server.dtd">
<mycat:server xmlns:mycat="http://io.mycat/">
  <system>
    <property name="serverPort">8066</property>
    <property name="managerPort">9066</property>
    <property name="fakeMySQLVersion">$greeting</property>
    <property name="explainMode">$explain</property>
  </system>
  <user name="root">
    <property name="password"></property>
    <property name="schemas">$schemas</property>
  </user>
</mycat:server>
XML
    MANX_PORT=$(free_port)
    local mport; mport=$(free_port)
    log "starting manx on 127.0.0.1:$MANX_PORT"
    "$REPO/target/debug/manx" --conf "$conf" --bind 127.0.0.1 --port "$MANX_PORT" \
        --manager-port "$mport" >"$OUT/manx.log" 2>&1 &
    MANX_PID=$!
    for _ in $(seq 1 300); do
        mariadb --no-defaults -uroot -h127.0.0.1 -P"$MANX_PORT" --protocol=tcp test -e 'select 1' \
            >/dev/null 2>&1 && return 0
        kill -0 "$MANX_PID" 2>/dev/null || die "manx exited: $OUT/manx.log"
        sleep 0.2
    done
    die "manx did not answer on $MANX_PORT: $OUT/manx.log"
}
cleanup() {
    if [[ -n $MANX_PID ]]; then kill "$MANX_PID" 2>/dev/null || true; wait "$MANX_PID" 2>/dev/null || true; fi
    ((KEEP)) || stop_mariadb
}

# Global settings per suite: mysql-test-run's server defaults for mysqltest, utf8mb4 and
# InnoDB (a stock server's) for the Python suites.
suite_globals() {
    case $1 in
        mysqltest) db_admin -e "SET GLOBAL character_set_server = latin1, collation_server = latin1_swedish_ci,
            default_storage_engine = MyISAM, max_heap_table_size = 1048576, sort_buffer_size = 262144,
            sql_mode = DEFAULT" ;;
        *) db_admin -e "SET GLOBAL character_set_server = utf8mb4, collation_server = utf8mb4_general_ci,
            default_storage_engine = InnoDB, max_heap_table_size = 16777216, sort_buffer_size = 2097152,
            sql_mode = DEFAULT" ;;
    esac
}
reset_databases() {
    local drop
    drop=$(db_admin -N -e "SELECT GROUP_CONCAT(CONCAT('DROP DATABASE \`', schema_name, '\`;') SEPARATOR ' ')
        FROM information_schema.schemata
        WHERE schema_name NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')")
    [[ $drop == NULL ]] || db_admin -e "$drop"
    local s; for s in "$@"; do db_admin -e "CREATE DATABASE \`$s\`"; done
}

run_mysqltest() {
    local dir=$OUT/mysqltest list=$HERE/mysqltest-main.list every=1
    ((QUICK)) && every=4
    mkdir -p "$dir"
    suite_globals mysqltest
    local select=(--list "$list" --every "$every")
    if [[ -n $TESTS ]]; then
        select=(--tests "$TESTS")
        log "mysqltest: the files $TESTS"
    else
        log "mysqltest: $(grep -vc "^#" "$list") files in $list$( ((every > 1)) && echo ", every $every th (--quick)")"
    fi
    "$VENV/bin/python" "$HERE/mysqltest_run.py" "${select[@]}" \
        --socket "$DB_DIR/s.sock" --direct-port "$DB_PORT" --manx-port "$MANX_PORT" \
        --vardir "$DB_DIR/files" --out "$dir" \
        --restart-cmd "$SCRIPT_PATH --restart-mariadb"
}

# Python suites: pytest with JUnit XML, once per target; every database of the suite is
# dropped and made again before each run.
run_pytest() {   # suite dir target port timeout -- pytest args...
    local suite=$1 dir=$2 target=$3 port=$4 limit=$5
    shift 5
    log "$suite: pytest against $target (127.0.0.1:$port)"
    local rc=0
    timeout --kill-after=10 "$limit" "$@" -p no:cacheprovider -o junit_family=xunit1 \
        --junitxml="$dir/$target.xml" >"$dir/$target.log" 2>&1 || rc=$?
    ((rc == 124 || rc == 137)) && log "$suite: the run through $target was stopped after $limit s"
    log "$suite ($target): $(grep -E '(passed|failed|error).* in [0-9.]+s' "$dir/$target.log" | tail -1 | tr -d '=')"
}
run_pymysql() {
    local dir=$OUT/pymysql src=$SRC/PyMySQL-0.10.1 target port
    mkdir -p "$dir"
    suite_globals pymysql
    for target in direct manx; do
        port=$DB_PORT
        [[ $target == manx ]] && port=$MANX_PORT
        reset_databases test1 test2
        cat >"$src/pymysql/tests/databases.json" <<JSON
[{"host": "127.0.0.1", "port": $port, "user": "root", "passwd": "", "db": "test1",
  "use_unicode": true, "local_infile": true},
 {"host": "127.0.0.1", "port": $port, "user": "root", "passwd": "", "db": "test2"}]
JSON
        # python -m pytest from the sdist: the tests import its own pymysql (0.10.1)
        (cd "$src" && run_pytest pymysql "$dir" "$target" "$port" 900 \
            "$VENV/bin/python" -m pytest pymysql/tests -q -rN)
    done
}
run_sqlalchemy() {
    local dir=$OUT/sqlalchemy src=$SRC/SQLAlchemy-2.0.36 target port paths=(test/dialect/mysql test/sql)
    ((QUICK)) && paths=(test/dialect/mysql)
    mkdir -p "$dir"
    suite_globals sqlalchemy
    for target in direct manx; do
        port=$DB_PORT
        [[ $target == manx ]] && port=$MANX_PORT
        reset_databases test test_schema test_schema_2
        (cd "$src" && PYTHONPATH=$HERE run_pytest sqlalchemy "$dir" "$target" "$port" 2400 \
            "$VENV/bin/python" -m pytest "${paths[@]}" --backend-only --maxfail=100000 -q -rN \
            --dburi "mysql+pymysql://root:@127.0.0.1:$port/test?charset=utf8mb4")
    done
}

# --- main ------------------------------------------------------------------------------
trap cleanup EXIT
start_mariadb
if ((SELECT)); then
    # The candidates: every main/ file that needs no server options of its own (no .opt,
    # .cnf or .combinations file) and neither restarts nor stops the server; the list keeps
    # those that pass directly (one run: a file that fails directly in a later run is left
    # out of that run's score, so a flaky one costs nothing).
    mkdir -p "$OUT/select"
    (cd "$MTR_DIR/main" && for t in *.test; do
        n=${t%.test}
        [[ -e $n.result ]] || continue
        compgen -G "$n*.opt" >/dev/null || compgen -G "$n.cnf" >/dev/null || [[ -e $n.combinations ]] && continue
        grep -qiE 'restart_mysqld|shutdown_server|kill_mysqld|wait_until_disconnected|start_mysqld|\$MYSQLD\b|have_debug|not_windows_embedded' "$t" && continue
        echo "$n"
    done) >"$OUT/select/candidates.list"
    suite_globals mysqltest
    for pass in 1; do
        list=$OUT/select/candidates.list
        log "select, pass $pass: $(grep -c . "$list") files directly"
        "$VENV/bin/python" "$HERE/mysqltest_run.py" --list "$list" --socket "$DB_DIR/s.sock" \
            --direct-port "$DB_PORT" --vardir "$DB_DIR/files" --out "$OUT/select/run$pass" \
            --restart-cmd "$SCRIPT_PATH --restart-mariadb"
        awk -F'\t' 'NR > 1 && $2 == "pass" { print $1 }' "$OUT/select/run$pass/results.tsv" >"$OUT/select/pass$pass.list"
    done
    {
        echo "# MariaDB 10.11 mysql-test main/ files that pass directly (scripts/conformance.sh --select):"
        echo "# no .opt/.cnf/.combinations file, no server restart, passed directly on $(date -u +%F)"
        echo "# against $(db_admin -N -e 'select version()')."
        cat "$OUT/select/pass1.list"
    } >"$HERE/mysqltest-main.list"
    log "wrote $HERE/mysqltest-main.list: $(grep -vc '^#' "$HERE/mysqltest-main.list") files"
    exit 0
fi
reset_databases "${LOGICAL[@]}"   # the gateway checks its dataNodes' databases at start
start_manx
for s in "${SUITES[@]}"; do
    case $s in
        mysqltest) run_mysqltest ;;
        pymysql) run_pymysql ;;
        sqlalchemy) run_sqlalchemy ;;
        *) die "unknown suite $s" ;;
    esac
done
"$VENV/bin/python" "$HERE/classify.py" --out "$OUT" "${SUITES[@]}" | tee "$OUT/summary.md"
