#!/usr/bin/env bash
#
# scripts/sandbox.sh — throwaway backend servers for manx development & tests.
#
#   scripts/sandbox.sh start     start (initialising on first use) all servers
#   scripts/sandbox.sh stop      stop them (by their own pid files)
#   scripts/sandbox.sh status    one line per server; exit 0 only if all are up
#   scripts/sandbox.sh restart   stop + start
#   scripts/sandbox.sh reset     stop + delete all sandbox data
#
# Servers (all bound to 127.0.0.1 only):
#   primary  MariaDB, port 13306, server_id=1, binlog on
#   replica  MariaDB, port 13307, server_id=2, GTID replica of the primary
#   standby  MariaDB, port 13308, server_id=3, GTID replica of the primary with
#            log_slave_updates: the standby writeHost of the bundled schema.xml
#            (switchType=1), which a gateway switches to when the primary dies
#   pg       PostgreSQL, port 15432
#   pg-standby  PostgreSQL streaming-replication standby of pg, port 15433
#            (hot standby: read-only, in recovery; physical replication slot
#            manx_sandbox_standby on pg), for read/write-split tests
#
# Credentials:
#   MariaDB: manx/manx ('manx'@'%', '127.0.0.1', 'localhost'; ALL ... WITH GRANT
#            OPTION: the admin account tests set up their databases with),
#            manx_gw/manx_gw ('manx_gw'@'%': the gateway's least-privileged
#            account, used by the bundled schema.xml; DML/DDL on db1..db3 and on
#            the tests' databases `t\_%`, plus SLAVE MONITOR (REPLICATION CLIENT
#            before MariaDB 10.5.9) for `show slave status`; README "Deployment:
#            the backend account"), repl/repl (REPLICATION SLAVE); root only via
#            unix socket. Databases db1, db2, db3 (with the tables of
#            sandbox-sample.sql) and manx_ref.
#   PG:      manx/manx (SUPERUSER, scram-sha-256 over TCP), manx_md5/manx_md5
#            (SUPERUSER, md5 over TCP), manx_gw/manx_gw (no role attributes:
#            CONNECT/TEMPORARY on db1..db3, USAGE/CREATE on their schema public,
#            DML on their tables, also on tables manx creates later); databases
#            db1, db2, db3, manx_ref owned by manx; local socket connections are
#            trusted.
#
# Everything lives under $MANX_SANDBOX_DIR (default: <repo>/target/sandbox):
#   <dir>/primary/{my.cnf,data/,mariadbd.sock,mariadbd.pid,error.log}
#   <dir>/replica/{...same...}
#   <dir>/standby/{...same...}
#   <dir>/pg/                PostgreSQL data dir (+ server.log, unix socket);
#                            may be a symlink, see pg_make_dir()
#   <dir>/pg-standby/        the standby's data dir (same rules)
#   <dir>/.state/            "initialisation done" marker files
#   <dir>/.lock              flock serialising start/stop/reset
# Note: `cargo clean` deletes target/ and with it the sandbox; stop it first
# (`scripts/sandbox.sh stop`), otherwise the orphaned servers keep the ports.
#
# Handy:
#   mariadb -h127.0.0.1 -P13306 -umanx -pmanx db1
#   mariadb --defaults-file=target/sandbox/primary/my.cnf   (admin, via socket)
#   PGPASSWORD=manx psql -h127.0.0.1 -p15432 -Umanx db1
#   PGPASSWORD=manx psql -h127.0.0.1 -p15433 -Umanx db1   (standby, read-only)
#
# Environment overrides:
#   MANX_SANDBOX_DIR       sandbox directory (default <repo>/target/sandbox)
#   MANX_SANDBOX_TIMEOUT   readiness timeout in seconds (default 60)
#   MANX_SANDBOX_PRIMARY_PORT, MANX_SANDBOX_REPLICA_PORT, MANX_SANDBOX_STANDBY_PORT,
#   MANX_SANDBOX_PG_PORT, MANX_SANDBOX_PG_STANDBY_PORT
#                          ports (defaults 13306, 13307, 13308, 15432, 15433), for a
#                          second sandbox beside the default one; the tests
#                          expect the defaults
#
set -euo pipefail

SCRIPT_PATH=$(readlink -f -- "${BASH_SOURCE[0]}")
SCRIPT_DIR=$(dirname -- "$SCRIPT_PATH")
REPO=$(cd -- "$SCRIPT_DIR/.." && pwd -P)
SB=$(realpath -m -- "${MANX_SANDBOX_DIR:-$REPO/target/sandbox}")
SAMPLE_SQL=$SCRIPT_DIR/sandbox-sample.sql
STATE=$SB/.state
LOCK_FILE=$SB/.lock

PRIMARY_PORT=${MANX_SANDBOX_PRIMARY_PORT:-13306}
REPLICA_PORT=${MANX_SANDBOX_REPLICA_PORT:-13307}
STANDBY_PORT=${MANX_SANDBOX_STANDBY_PORT:-13308}
PG_PORT=${MANX_SANDBOX_PG_PORT:-15432}
PG_STANDBY_PORT=${MANX_SANDBOX_PG_STANDBY_PORT:-15433}
# Physical replication slot on pg that the standby streams from (WAL kept
# for it is capped by max_slot_wal_keep_size; a slot that lost WAL makes
# `start` rebuild the standby).
PG_SLOT=manx_sandbox_standby
START_TIMEOUT=${MANX_SANDBOX_TIMEOUT:-60}
STOP_TIMEOUT=30
REPL_TIMEOUT=30
MY_DATABASES=(db1 db2 db3 manx_ref)
SAMPLE_DATABASES=(db1 db2 db3)
PG_DATABASES=(db1 db2 db3 manx_ref)
# The gateway's least-privileged account and what it may touch: the shard databases and
# (MariaDB) the `t_<prefix>_...` databases the tests create with the admin account.
GW_USER=manx_gw
GW_PASSWORD=manx_gw
GW_MY_DATABASES=(db1 db2 db3 't\_%')
GW_PG_DATABASES=(db1 db2 db3)

if [[ $(id -u) -eq 0 ]]; then IS_ROOT=1; else IS_ROOT=0; fi
ME=$(id -un)
# MariaDB admin account: root via unix_socket when we are root, otherwise the
# socket-authenticated account mariadb-install-db creates for the current user.
if ((IS_ROOT)); then MY_ADMIN=root; else MY_ADMIN=$ME; fi
# Short id of this sandbox, used for paths outside of it (long socket paths,
# relocated PG data dir) so that several clones don't collide.
SB_HASH=$(printf '%s' "$SB" | sha1sum | cut -c1-12)

log() { printf '[sandbox] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Print the last lines of a log file (to stderr), for failure diagnostics.
show_log() {
    local f=$1
    if [[ -r $f ]]; then
        log "---- last lines of $f ----"
        tail -n 40 -- "$f" >&2 || true
        log "---- end of $f ----"
    else
        log "(no log file at $f)"
    fi
}

# ---------------------------------------------------------------------------
# binaries
# ---------------------------------------------------------------------------

# find_bin NAME... : first NAME found in PATH or in the usual sbin/bin dirs
# (/usr/sbin is not in a normal user's PATH, and mariadbd lives there).
find_bin() {
    local n d p
    for n in "$@"; do
        if p=$(command -v -- "$n" 2>/dev/null) && [[ -x $p ]]; then
            echo "$p"; return 0
        fi
        for d in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
            if [[ -x $d/$n ]]; then echo "$d/$n"; return 0; fi
        done
    done
    return 1
}

pg_bindir_ok() { [[ -x $1/initdb && -x $1/pg_ctl && -x $1/postgres ]]; }

# PostgreSQL server binaries: pg_config --bindir, else the newest
# /usr/lib/postgresql/*/bin, else wherever `initdb` in PATH points to.
find_pg_bindir() {
    local d p
    if p=$(command -v pg_config 2>/dev/null); then
        d=$("$p" --bindir 2>/dev/null || true)
        if [[ -n $d ]] && pg_bindir_ok "$d"; then echo "$d"; return 0; fi
    fi
    while read -r d; do
        if [[ -n $d ]] && pg_bindir_ok "$d"; then echo "$d"; return 0; fi
    done < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -t/ -k5,5 -rn)
    if p=$(command -v initdb 2>/dev/null); then
        d=$(dirname -- "$(readlink -f -- "$p")")
        if pg_bindir_ok "$d"; then echo "$d"; return 0; fi
    fi
    return 1
}

locate_binaries() {
    MARIADBD=$(find_bin mariadbd mysqld || true)
    INSTALL_DB=$(find_bin mariadb-install-db mysql_install_db || true)
    MYSQL=$(find_bin mariadb mysql || true)
    MYSQLDUMP=$(find_bin mariadb-dump mysqldump || true)
    PGBIN=$(find_pg_bindir || true)
    PSQL=""
    PG_ISREADY=""
    if [[ -n $PGBIN ]]; then
        if [[ -x $PGBIN/psql ]]; then PSQL=$PGBIN/psql; else PSQL=$(find_bin psql || true); fi
        if [[ -x $PGBIN/pg_isready ]]; then PG_ISREADY=$PGBIN/pg_isready; else PG_ISREADY=$(find_bin pg_isready || true); fi
    fi
}

missing_packages() {
    local pkgs=()
    [[ -n $MARIADBD && -n $INSTALL_DB ]] || pkgs+=(mariadb-server)
    [[ -n $MYSQL && -n $MYSQLDUMP ]] || pkgs+=(mariadb-client)
    # The Galera provider, for the switchType=3 tests' one-node clusters (a dependency of
    # Debian's mariadb-server, checked in case the server came from elsewhere).
    [[ -e /usr/lib/galera/libgalera_smm.so || -e /usr/lib/libgalera_smm.so ]] || pkgs+=(galera-4)
    [[ -n $PGBIN ]] || pkgs+=(postgresql)
    [[ -n $PSQL && -n $PG_ISREADY ]] || pkgs+=(postgresql-client)
    # ZooKeeper, for the cluster-mode tests' throwaway servers (tests/common/zookeeper.rs, not a
    # sandbox server): what they run, Debian's server jar and its dependencies (libzookeeper-java),
    # slf4j-simple (libslf4j-java) and a JRE, all dependencies of the zookeeper package.
    [[ -e /usr/share/java/zookeeper.jar && -e /usr/share/java/slf4j-simple.jar && -x /usr/bin/java ]] ||
        pkgs+=(zookeeper)
    echo "${pkgs[*]}"
}

# Install missing Debian packages (root only). To not leave the machine in a
# surprising state we
#   * only install what is missing, with --no-upgrade, so an already installed
#     system MariaDB/PostgreSQL is never upgraded (= restarted) by us;
#   * install with a temporary /usr/sbin/policy-rc.d that forbids starting
#     services (unless one already exists, e.g. in Docker images), so the
#     packages' postinst doesn't launch system instances on 3306/5432 (and
#     doesn't fail in containers without an init system). The sandbox only
#     needs the binaries. The policy file is removed again afterwards.
apt_install() {
    local pkgs=("$@")
    command -v apt-get >/dev/null || die "missing packages (${pkgs[*]}) and no apt-get to install them"
    log "installing missing packages: ${pkgs[*]}"
    (
        policy=/usr/sbin/policy-rc.d
        if [[ ! -e $policy ]]; then
            trap 'rm -f "$policy"' EXIT
            printf '#!/bin/sh\n# temporary, created by manx scripts/sandbox.sh\nexit 101\n' >"$policy"
            chmod 755 "$policy"
        fi
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q || log "warning: apt-get update failed, trying to install anyway"
        apt-get install -y -q --no-upgrade "${pkgs[@]}"
    ) 9>&- </dev/null >&2 || die "apt-get install ${pkgs[*]} failed"
}

ensure_binaries() {
    locate_binaries
    local missing
    missing=$(missing_packages)
    if [[ -n $missing ]]; then
        if ((IS_ROOT)); then
            # shellcheck disable=SC2086
            apt_install $missing
            locate_binaries
            missing=$(missing_packages)
            [[ -z $missing ]] || die "still missing after installation: $missing"
        else
            die "missing server binaries (Debian packages: $missing). Install them with:
    sudo apt-get install -y $missing
(or run this script as root, which installs them automatically)"
        fi
    fi
}

# ---------------------------------------------------------------------------
# generic helpers
# ---------------------------------------------------------------------------

# Something listening on 127.0.0.1:PORT?
port_in_use() { timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# is_our_proc PID NEEDLE: PID is alive and its command line contains NEEDLE
# (guards against stale pid files whose pid got reused by something else).
is_our_proc() {
    local pid=$1 needle=$2
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || [[ -d /proc/$pid ]] || return 1
    [[ -r /proc/$pid/cmdline ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$needle"
}

# Close every inherited fd above 2 (call in the subshell that execs a
# server): long-lived servers must not keep our flock (fd 9) or any pipe of
# whoever called us (test harnesses wait for EOF on their pipes).
close_extra_fds() {
    local fd
    for fd in "/proc/$BASHPID/fd"/*; do
        fd=${fd##*/}
        if [[ $fd =~ ^[0-9]+$ ]] && ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
}

# Unix socket paths are limited to ~107 bytes; fall back to /tmp if needed.
socket_path() {
    local want=$1 fallback=$2
    if ((${#want} <= 100)); then echo "$want"; else echo "$fallback"; fi
}

# stop_pid LABEL PID SIGNAL: signal, wait up to STOP_TIMEOUT, then escalate.
stop_pid() {
    local label=$1 pid=$2 sig=$3 deadline
    log "stopping $label (pid $pid, SIG$sig)"
    kill -s "$sig" "$pid" 2>/dev/null || return 0
    deadline=$((SECONDS + STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        if [[ $sig == INT ]]; then
            # PostgreSQL: immediate shutdown first, so the postmaster takes its
            # children down with it (a SIGKILLed postmaster would leave them).
            log "$label did not stop within ${STOP_TIMEOUT}s, sending SIGQUIT"
            kill -s QUIT "$pid" 2>/dev/null || true
            deadline=$((SECONDS + 5))
            while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
        fi
    fi
    if kill -0 "$pid" 2>/dev/null; then
        log "$label did not stop within ${STOP_TIMEOUT}s, sending SIGKILL"
        kill -s KILL "$pid" 2>/dev/null || true
        deadline=$((SECONDS + 10))
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && { log "ERROR: $label (pid $pid) survived SIGKILL"; return 1; }
    fi
    return 0
}

# run_parallel CMD...: run each (function name) in the background, wait for
# all of them (never a bare `wait`: that would also wait for the servers).
run_parallel() {
    local pids=() cmd pid rc=0
    for cmd in "$@"; do
        $cmd &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
    return $rc
}

# ---------------------------------------------------------------------------
# MariaDB
# ---------------------------------------------------------------------------

my_port() { case $1 in primary) echo "$PRIMARY_PORT" ;; replica) echo "$REPLICA_PORT" ;; standby) echo "$STANDBY_PORT" ;; esac; }
my_server_id() { case $1 in primary) echo 1 ;; replica) echo 2 ;; standby) echo 3 ;; esac; }
my_dir() { echo "$SB/$1"; }
my_cnf() { echo "$SB/$1/my.cnf"; }
my_pidfile() { echo "$SB/$1/mariadbd.pid"; }
my_errlog() { echo "$SB/$1/error.log"; }
my_sock() { socket_path "$SB/$1/mariadbd.sock" "/tmp/manx-sandbox-$SB_HASH-$1.sock"; }

# Admin client over the unix socket (never reads /etc/mysql or ~/.my.cnf).
my_sql() {
    local name=$1; shift
    "$MYSQL" --no-defaults --protocol=socket --socket="$(my_sock "$name")" \
        -u"$MY_ADMIN" --connect-timeout=5 --batch --skip-column-names "$@"
}

my_pid() {
    local f pid
    f=$(my_pidfile "$1")
    [[ -s $f ]] || return 1
    read -r pid <"$f" || return 1
    is_our_proc "$pid" "$(my_cnf "$1")" || return 1
    echo "$pid"
}

my_ping() { my_sql "$1" -e 'SELECT 1' >/dev/null 2>&1; }

write_my_cnf() {
    local name=$1 dir port sid sock userline=""
    dir=$(my_dir "$name"); port=$(my_port "$name"); sid=$(my_server_id "$name"); sock=$(my_sock "$name")
    if ((IS_ROOT)); then userline="user = root"; fi
    mkdir -p "$dir/tmp"
    cat >"$dir/my.cnf.tmp" <<EOF
# Generated by scripts/sandbox.sh on every start; edits will be overwritten.
[client]
socket = $sock
port = $port
user = $MY_ADMIN

[mysqld]
$userline
datadir = $dir/data
socket = $sock
pid-file = $dir/mariadbd.pid
log-error = $dir/error.log
# Own tmpdir: two mariadb-install-db bootstraps running at the same time with
# the shared /tmp intermittently fail ("Could not remove temporary table
# '/tmp/#sql-temptable-...'"), and it keeps the instances isolated anyway.
tmpdir = $dir/tmp
port = $port
bind-address = 127.0.0.1
skip-name-resolve
server_id = $sid
log_bin = $dir/data/$name-bin
log_bin_index = $dir/data/$name-bin.index
relay_log = $dir/data/$name-relay-bin
relay_log_index = $dir/data/$name-relay-bin.index
binlog_format = ROW
log_slave_updates = ON
sync_binlog = 0
# Test runs stream millions of rows: rotate binary logs often and drop them after an hour, so
# the sandbox does not fill the disk (it once did, breaking the replica).
max_binlog_size = 64M
binlog_expire_logs_seconds = 3600
slave_net_timeout = 10
lower_case_table_names = 1
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
max_connections = 1000
max_allowed_packet = 64M
performance_schema = OFF
innodb_buffer_pool_size = 64M
innodb_log_file_size = 32M
innodb_log_buffer_size = 8M
innodb_flush_log_at_trx_commit = 2
innodb_doublewrite = 0
key_buffer_size = 8M
thread_cache_size = 32
EOF
    mv -f "$dir/my.cnf.tmp" "$dir/my.cnf"
}

# One-time mariadb-install-db (marker: .state/<name>.installed).
my_init() {
    local name=$1 dir
    dir=$(my_dir "$name")
    mkdir -p "$dir"
    write_my_cnf "$name"
    if [[ -e $STATE/$name.installed ]]; then
        [[ -d $dir/data/mysql ]] ||
            die "$name: data directory $dir/data is gone but the sandbox was initialised; run '$0 reset'"
        return 0
    fi
    if my_pid "$name" >/dev/null; then
        die "$name: server is running but the sandbox was never initialised completely; run '$0 reset'"
    fi
    log "$name: initialising data directory"
    rm -rf "$dir/data"
    local args=(--defaults-file="$dir/my.cnf" --datadir="$dir/data"
        --auth-root-authentication-method=socket --skip-test-db --skip-name-resolve)
    if ((IS_ROOT)); then args+=(--user=root); else args+=(--auth-root-socket-user="$ME"); fi
    if ! (cd "$dir" && "$INSTALL_DB" "${args[@]}") 9>&- </dev/null >"$dir/install-db.log" 2>&1; then
        show_log "$dir/install-db.log"
        show_log "$dir/error.log"
        die "$name: mariadb-install-db failed"
    fi
    touch "$STATE/$name.installed"
}

my_start() {
    local name=$1 port pid errlog launched deadline
    port=$(my_port "$name"); errlog=$(my_errlog "$name")
    if pid=$(my_pid "$name"); then
        if my_ping "$name"; then
            log "$name: already running (pid $pid, port $port)"
            return 0
        fi
        launched=$pid
        log "$name: process $pid exists but does not answer yet, waiting"
    else
        rm -f "$(my_pidfile "$name")"
        if port_in_use "$port"; then
            die "$name: port $port is already in use by another process (not this sandbox's pid file).
    Maybe an orphaned sandbox server whose directory was deleted (cargo clean?); find it with: ss -ltnp 'sport = :$port'"
        fi
        log "$name: starting mariadbd on 127.0.0.1:$port"
        # Own session, stdio to the error log, no inherited fds (see
        # close_extra_fds); mariadbd writes its pid file itself.
        (close_extra_fds; cd "$(my_dir "$name")" && exec setsid "$MARIADBD" --defaults-file="$(my_cnf "$name")") \
            </dev/null >>"$errlog" 2>&1 &
        launched=$!
    fi
    deadline=$((SECONDS + START_TIMEOUT))
    until my_ping "$name"; do
        if ! kill -0 "$launched" 2>/dev/null && ! my_pid "$name" >/dev/null; then
            show_log "$errlog"
            die "$name: mariadbd exited during startup"
        fi
        if ((SECONDS >= deadline)); then
            show_log "$errlog"
            die "$name: not ready after ${START_TIMEOUT}s"
        fi
        sleep 0.2
    done
    log "$name: up (pid $(my_pid "$name" || echo "?"), port $port)"
}

my_stop() {
    local name=$1 pid
    if pid=$(my_pid "$name"); then
        stop_pid "$name" "$pid" TERM
        rm -f "$(my_pidfile "$name")"
    else
        log "$name: not running"
    fi
}

# The privilege `show slave status` needs (the switchType=2 heartbeat): SLAVE MONITOR
# from MariaDB 10.5.9 on (it answers "you need SUPER or SLAVE MONITOR"), REPLICATION
# CLIENT before (and on MySQL).
my_monitor_privilege() {
    local v
    v=$("$MARIADBD" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+-MariaDB' | head -n1 || true)
    v=${v%-MariaDB}
    if [[ -n $v ]] && printf '10.5.9\n%s\n' "$v" | sort -V -C; then
        echo "SLAVE MONITOR"
    else
        echo "REPLICATION CLIENT"
    fi
}

# The gateway's account (manx_gw), exactly: what it held before is revoked first, so a
# changed list here takes effect on an existing sandbox (see my_setup_gateway).
# Idempotent. README "Deployment: the backend account" explains each privilege.
my_gateway_sql() {
    local db
    echo "CREATE USER IF NOT EXISTS '$GW_USER'@'%' IDENTIFIED BY '$GW_PASSWORD';
REVOKE ALL PRIVILEGES, GRANT OPTION FROM '$GW_USER'@'%';
GRANT $(my_monitor_privilege) ON *.* TO '$GW_USER'@'%';"
    for db in "${GW_MY_DATABASES[@]}"; do
        echo "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, REFERENCES,
  CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, CREATE VIEW, SHOW VIEW ON \`$db\`.* TO '$GW_USER'@'%';"
    done
}

# The sandbox's accounts (manx/manx, repl/repl, the gateway's), idempotent.
my_accounts_sql() {
    local host h
    host=$(hostname 2>/dev/null || echo localhost)
    # (no anonymous accounts are created by 10.11's install-db; just in case)
    echo "DROP USER IF EXISTS ''@'localhost';
DROP USER IF EXISTS ''@'$host';"
    for h in '%' '127.0.0.1' 'localhost'; do
        echo "CREATE USER IF NOT EXISTS 'manx'@'$h' IDENTIFIED BY 'manx';
GRANT ALL PRIVILEGES ON *.* TO 'manx'@'$h' WITH GRANT OPTION;"
    done
    echo "CREATE USER IF NOT EXISTS 'repl'@'%' IDENTIFIED BY 'repl';
GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%';"
    my_gateway_sql
}

# Accounts and databases, on the primary only (they reach the replica through
# the binlog). Runs once, before the replica is attached; everything is
# idempotent (IF NOT EXISTS) because the replica replays the binlog from its
# very beginning.
my_setup_primary() {
    [[ -e $STATE/primary.setup ]] && return 0
    log "primary: creating accounts and databases"
    local sql db
    sql="RESET MASTER;
$(my_accounts_sql)"
    for db in "${MY_DATABASES[@]}"; do
        sql+="CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;
"
    done
    my_sql primary -e "$sql" || die "primary: account/database setup failed"
    my_gateway_sql | sha1sum | cut -d' ' -f1 >"$STATE/gateway.sha1"
    touch "$STATE/primary.setup"
}

# The gateway's account on a sandbox set up before it existed, or whose statements changed
# (marker: .state/gateway.sha1, their hash): run on the primary, from where they replicate
# to the replica and the standby (my_check_replication then waits for them there).
my_setup_gateway() {
    local sum
    sum=$(my_gateway_sql | sha1sum | cut -d' ' -f1)
    if [[ -e $STATE/gateway.sha1 && $(cat "$STATE/gateway.sha1") == "$sum" ]]; then return 0; fi
    log "primary: setting up the gateway's account $GW_USER (replicated to the replica and standby)"
    my_sql primary -e "$(my_gateway_sql)" || die "primary: gateway account setup failed"
    echo "$sum" >"$STATE/gateway.sha1"
}

# (Re)load sandbox-sample.sql into db1..db3 whenever the file changed.
my_load_sample() {
    [[ -r $SAMPLE_SQL ]] || { log "warning: $SAMPLE_SQL not found, no sample tables"; return 0; }
    local sum db
    sum=$(sha1sum <"$SAMPLE_SQL" | cut -d' ' -f1)
    if [[ -e $STATE/sample.sha1 && $(cat "$STATE/sample.sha1") == "$sum" ]]; then return 0; fi
    log "primary: loading $(basename -- "$SAMPLE_SQL") into ${SAMPLE_DATABASES[*]}"
    for db in "${SAMPLE_DATABASES[@]}"; do
        my_sql primary -D "$db" <"$SAMPLE_SQL" || die "loading $SAMPLE_SQL into $db failed"
    done
    echo "$sum" >"$STATE/sample.sha1"
}

# Attach replica or standby ($1) to the primary (once). With an empty
# gtid_slave_pos it starts at the beginning of the primary's binlog (which was
# RESET right before the accounts were created), so it receives everything.
# When the primary's first binary logs have expired (a sandbox older than
# binlog_expire_logs_seconds gaining the standby), it is seeded with a dump of
# the primary's databases taken at a consistent GTID position instead.
my_setup_replica() {
    local name=$1 first dbs
    [[ -e $STATE/$name.setup ]] && return 0
    my_sql "$name" -e "STOP SLAVE; RESET SLAVE ALL; RESET MASTER; SET GLOBAL gtid_slave_pos = '';" ||
        die "$name: cannot reset replication state"
    first=$(my_sql primary -e 'SHOW BINARY LOGS' | head -n1 | cut -f1)
    if [[ -n $first && $first != *-bin.000001 ]]; then
        log "$name: the primary's first binary logs expired; seeding from a dump of the primary"
        dbs=$(my_sql primary -e "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ('mysql','information_schema','performance_schema','sys')" | tr '\n' ' ')
        my_sql "$name" -e "SET sql_log_bin = 0; $(my_accounts_sql)" || die "$name: account setup failed"
        # shellcheck disable=SC2086 # one word per database
        "$MYSQLDUMP" --no-defaults --protocol=socket --socket="$(my_sock primary)" -u"$MY_ADMIN" \
            --single-transaction --gtid --master-data=1 --routines --events --databases $dbs |
            my_sql "$name" || die "$name: loading the dump of the primary failed"
    fi
    log "$name: configuring GTID replication from 127.0.0.1:$PRIMARY_PORT"
    my_sql "$name" -e "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$PRIMARY_PORT,
  MASTER_USER='repl', MASTER_PASSWORD='repl',
  MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
START SLAVE;" || die "$name: CHANGE MASTER failed"
    touch "$STATE/$name.setup"
}

# Prints "IO SQL" (e.g. "Yes Yes") of replica or standby ($1), or "- -".
my_slave_state() {
    local out
    out=$(my_sql "$1" --column-names -e 'SHOW SLAVE STATUS\G' 2>/dev/null) || { echo "- -"; return 0; }
    awk -F': ' '
        $1 ~ /^ *Slave_IO_Running$/  { io = $2 }
        $1 ~ /^ *Slave_SQL_Running$/ { sq = $2 }
        END { printf "%s %s\n", (io == "" ? "-" : io), (sq == "" ? "-" : sq) }' <<<"$out"
}

# Bounded wait until Slave_IO_Running = Slave_SQL_Running = Yes, then until
# replica or standby ($1) has applied everything the primary has logged so far.
my_check_replication() {
    local name=$1 deadline state kicked=0 pos res
    deadline=$((SECONDS + REPL_TIMEOUT))
    while :; do
        state=$(my_slave_state "$name")
        [[ $state == "Yes Yes" ]] && break
        if [[ $state == *" No" ]] && my_sql "$name" --column-names -e 'SHOW SLAVE STATUS\G' | grep -qE 'Last_SQL_Error: .+'; then
            # the applier stopped on an error: waiting won't help
            my_sql "$name" --column-names -e 'SHOW SLAVE STATUS\G' >&2 || true
            die "$name: replication SQL thread stopped with an error (see Last_SQL_Error above); '$0 reset' rebuilds the sandbox"
        fi
        if [[ $state == "No No" || $state == "No Yes" || $state == "Yes No" ]] && ((!kicked)) &&
            ! my_sql "$name" --column-names -e 'SHOW SLAVE STATUS\G' | grep -qE 'Last_(IO|SQL)_Error: .+'; then
            # stopped without an error (someone ran STOP SLAVE): restart it
            log "$name: replication threads stopped ($state), starting them"
            my_sql "$name" -e 'START SLAVE' || true
            kicked=1
        fi
        if ((SECONDS >= deadline)); then
            my_sql "$name" --column-names -e 'SHOW SLAVE STATUS\G' >&2 || true
            show_log "$(my_errlog "$name")"
            die "$name: replication not running after ${REPL_TIMEOUT}s (IO/SQL: $state)"
        fi
        sleep 0.2
    done
    pos=$(my_sql primary -e 'SELECT @@GLOBAL.gtid_binlog_pos') || die "primary: cannot read gtid_binlog_pos"
    if [[ -n $pos ]]; then
        res=$(my_sql "$name" -e "SELECT MASTER_GTID_WAIT('$pos', $REPL_TIMEOUT)") || res=error
        if [[ $res != 0 ]]; then
            my_sql "$name" --column-names -e 'SHOW SLAVE STATUS\G' >&2 || true
            die "$name: did not catch up with primary position $pos within ${REPL_TIMEOUT}s"
        fi
    fi
    log "$name: replication running (Slave_IO_Running=Yes, Slave_SQL_Running=Yes, at $pos)"
}

# ---------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------
#
# PostgreSQL refuses to run as root. As root we therefore run initdb/pg_ctl
# as the `postgres` OS user (runuser), with a data dir owned by postgres.
# That user must be able to traverse every directory above the data dir,
# which fails for checkouts under /root (mode 700) or other private homes.
# Rather than loosening permissions of directories we don't own (chmod o+x
# on /root etc.), pg_prepare_dir() decides once, when the data dir is
# created:
#   * if postgres can reach $SB: the data dir is $SB/pg itself;
#   * otherwise the data dir is created in postgres' own home
#     (~postgres/manx-sandbox/<hash of $SB>/pg, or /var/tmp/... if that's not
#     writable) and $SB/pg becomes a symlink to it. The symlink is only for
#     humans and for this script: the server is always given the resolved
#     path. `reset` deletes the relocated directory too.
# When not root, everything simply runs as the current user.

pg_run() {
    if ((IS_ROOT)); then
        (cd / && exec runuser -u postgres -- "$@")
    else
        "$@"
    fi
}

PGDATA_DIR=""
PG_SOCKDIR=""
PGS_DATA_DIR=""
PGS_SOCKDIR=""

# pg_real_dir NAME: the data dir behind $SB/NAME (following the relocation
# symlink).
pg_real_dir() {
    if [[ -L $SB/$1 ]]; then readlink -- "$SB/$1"; else echo "$SB/$1"; fi
}

# pg_sock_dir DATADIR NAME: the unix socket directory of a server (its data
# dir, unless that path is too long for a socket).
pg_sock_dir() {
    if ((${#1} + 20 > 100)); then echo "/tmp/manx-sandbox-$SB_HASH-$2"; else echo "$1"; fi
}

# Sets PGDATA_DIR / PG_SOCKDIR (primary) and PGS_DATA_DIR / PGS_SOCKDIR
# (standby) for existing (or not yet created) data dirs.
pg_resolve_dir() {
    PGDATA_DIR=$(pg_real_dir pg)
    PG_SOCKDIR=$(pg_sock_dir "$PGDATA_DIR" pg)
    PGS_DATA_DIR=$(pg_real_dir pg-standby)
    PGS_SOCKDIR=$(pg_sock_dir "$PGS_DATA_DIR" pg-standby)
}

# pg_make_dir NAME: creates the (empty) data dir $SB/NAME, owned by the
# server user, relocated when that user cannot reach $SB (see above).
pg_make_dir() {
    local name=$1
    if [[ -e $SB/$name || -L $SB/$name ]]; then
        local real
        real=$(pg_real_dir "$name")
        [[ -d $real ]] || die "pg: $SB/$name points to missing $real; run '$0 reset'"
        return 0
    fi
    if ((IS_ROOT)); then
        getent passwd postgres >/dev/null || die "pg: OS user 'postgres' does not exist (is the postgresql package installed?)"
        chmod go+rx "$SB" # our own directory; parents are left alone
        if runuser -u postgres -- test -x "$SB" 2>/dev/null; then
            mkdir -m 700 "$SB/$name"
            chown postgres:postgres "$SB/$name"
        else
            local home base
            home=$(getent passwd postgres | cut -d: -f6)
            if [[ -n $home ]] && (cd / && runuser -u postgres -- test -w "$home" -a -x "$home") 2>/dev/null; then
                base=$home/manx-sandbox
            else
                base=/var/tmp/manx-sandbox
            fi
            local real=$base/$SB_HASH/$name
            log "pg: postgres user cannot reach $SB; using $real (symlinked as $SB/$name)"
            if [[ -e $real ]]; then
                # left over from a sandbox at the same path deleted without reset
                local oldpid=""
                [[ -r $real/postmaster.pid ]] && read -r oldpid <"$real/postmaster.pid"
                if [[ -n $oldpid ]] && is_our_proc "$oldpid" "$real"; then
                    die "pg: a PostgreSQL from a previous sandbox is still running on $real (pid $oldpid)"
                fi
                rm -rf -- "${real:?}"
            fi
            mkdir -p "$base/$SB_HASH"
            chown postgres:postgres "$base" "$base/$SB_HASH"
            chmod 755 "$base" "$base/$SB_HASH"
            echo "$SB" >"$base/$SB_HASH/ORIGIN"
            mkdir -m 700 "$real"
            chown postgres:postgres "$real"
            ln -s "$real" "$SB/$name"
        fi
    else
        mkdir -m 700 "$SB/$name"
    fi
}

pg_prepare_dir() {
    pg_make_dir pg
    pg_make_dir pg-standby
    pg_resolve_dir
}

# An existing data dir must be run by the major version that created it
# (pg_config may point to a newer version installed later).
pg_pin_version() {
    local v have
    [[ -r $PGDATA_DIR/PG_VERSION ]] || return 0
    read -r v <"$PGDATA_DIR/PG_VERSION" || return 0
    if pg_bindir_ok "/usr/lib/postgresql/$v/bin"; then
        PGBIN=/usr/lib/postgresql/$v/bin
        [[ -x $PGBIN/psql ]] && PSQL=$PGBIN/psql
        [[ -x $PGBIN/pg_isready ]] && PG_ISREADY=$PGBIN/pg_isready
        return 0
    fi
    # "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)" -> 15
    have=$("$PGBIN/postgres" --version | awk '{ split($3, v, "."); print v[1] }')
    [[ $have == "$v" ]] ||
        die "pg: $PGDATA_DIR was created by PostgreSQL $v but only $have ($PGBIN) is available; run '$0 reset'"
}

# pg_pid_of DATADIR: the pid of the postmaster running on DATADIR.
pg_pid_of() {
    local pid dir=$1
    [[ -n $dir && -r $dir/postmaster.pid ]] || return 1
    read -r pid <"$dir/postmaster.pid" || return 1
    is_our_proc "$pid" "$dir" || return 1
    echo "$pid"
}
pg_pid() { pg_pid_of "$PGDATA_DIR"; }
pgs_pid() { pg_pid_of "$PGS_DATA_DIR"; }

pg_ready_at() { "$PG_ISREADY" -q -h "$1" -p "$2" -U postgres -d postgres -t 3 >/dev/null 2>&1; }
pg_ready() { pg_ready_at "$PG_SOCKDIR" "$PG_PORT"; }
pgs_ready() { pg_ready_at "$PGS_SOCKDIR" "$PG_STANDBY_PORT"; }

pg_psql() { pg_run "$PSQL" -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCKDIR" -p "$PG_PORT" -U postgres "$@"; }
pgs_psql() { pg_run "$PSQL" -X -q -v ON_ERROR_STOP=1 -h "$PGS_SOCKDIR" -p "$PG_STANDBY_PORT" -U postgres "$@"; }

# Write a root-generated file into the data dir, owned by the server user.
pg_write_file() {
    local dest=$1
    cat >"$dest"
    if ((IS_ROOT)); then chown postgres:postgres "$dest"; fi
    chmod 600 "$dest"
}

# pg_write_conf [DATADIR PORT SOCKDIR]: the sandbox settings of a server
# (default: the primary), then its role's lines: the primary keeps WAL for
# the standby's slot (bounded), the standby streams from the primary.
pg_write_conf() {
    local dir=${1:-$PGDATA_DIR} port=${2:-$PG_PORT} sock=${3:-$PG_SOCKDIR} role
    if [[ $dir == "$PGS_DATA_DIR" ]]; then
        role="# standby of 127.0.0.1:$PG_PORT (standby.signal present until promoted)
primary_conninfo = 'host=127.0.0.1 port=$PG_PORT user=postgres application_name=$PG_SLOT'
primary_slot_name = '$PG_SLOT'
hot_standby = on
wal_receiver_status_interval = 1s
wal_retrieve_retry_interval = 1s"
    else
        role="# primary: WAL kept for the standby's replication slot, at most
max_wal_senders = 10
max_slot_wal_keep_size = 1GB"
    fi
    pg_write_file "$dir/manx-sandbox.conf" <<EOF
# Generated by scripts/sandbox.sh on every start; edits will be overwritten.
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$sock'
max_connections = 300
shared_buffers = 32MB
# two-phase commit (manx's XA on PostgreSQL dataNodes: PREPARE TRANSACTION); a
# standby needs at least the primary's value
max_prepared_transactions = 50
password_encryption = scram-sha-256
# throwaway data: trade durability for speed
fsync = off
synchronous_commit = off
full_page_writes = off
$role
EOF
}

# One-time initdb (marker: .state/pg.initdb).
pg_init() {
    if [[ -e $STATE/pg.initdb ]]; then
        [[ -e $PGDATA_DIR/PG_VERSION ]] ||
            die "pg: data directory $PGDATA_DIR is gone but the sandbox was initialised; run '$0 reset'"
        return 0
    fi
    pg_pid >/dev/null && die "pg: server is running but the sandbox was never initialised completely; run '$0 reset'"
    log "pg: initialising data directory $PGDATA_DIR"
    find "$PGDATA_DIR" -mindepth 1 -delete
    if ! pg_run "$PGBIN/initdb" -D "$PGDATA_DIR" -U postgres -E UTF8 --no-locale \
        --auth-local=trust --auth-host=scram-sha-256 --no-sync --no-instructions \
        9>&- </dev/null >"$SB/pg-initdb.log" 2>&1; then
        show_log "$SB/pg-initdb.log"
        die "pg: initdb failed"
    fi
    pg_write_file "$PGDATA_DIR/pg_hba.conf" <<'EOF'
# Generated by scripts/sandbox.sh
# TYPE  DATABASE  USER      ADDRESS        METHOD
local   all       all                      trust
host    all       postgres  127.0.0.1/32   trust
host    replication postgres 127.0.0.1/32  trust
host    all       manx      127.0.0.1/32   scram-sha-256
host    all       manx_md5  127.0.0.1/32   md5
host    all       all       127.0.0.1/32   scram-sha-256
EOF
    printf "\n# added by scripts/sandbox.sh\ninclude_if_exists = 'manx-sandbox.conf'\n" >>"$PGDATA_DIR/postgresql.conf"
    touch "$STATE/pg.initdb"
}

# pg_start_server LABEL DATADIR PORT SOCKDIR: starts a server (if not running)
# and waits until it answers.
pg_start_server() {
    local label=$1 dir=$2 port=$3 sock=$4 pid
    pg_write_conf "$dir" "$port" "$sock"
    if [[ $sock != "$dir" ]]; then
        mkdir -p "$sock"
        if ((IS_ROOT)); then chown postgres:postgres "$sock"; fi
    fi
    if pid=$(pg_pid_of "$dir"); then
        if pg_ready_at "$sock" "$port"; then
            log "$label: already running (pid $pid, port $port)"
            return 0
        fi
        log "$label: process $pid exists but does not answer yet"
    else
        if port_in_use "$port"; then
            die "$label: port $port is already in use by another process (not this sandbox's postmaster).
    Maybe an orphaned sandbox server whose directory was deleted (cargo clean?); find it with: ss -ltnp 'sport = :$port'"
        fi
        log "$label: starting PostgreSQL on 127.0.0.1:$port"
        # A postmaster that has just died (crash, SIGKILL) can linger for a
        # moment as a zombie, or leave children attached to its shared
        # memory; postgres refuses to start until they are gone
        # ('lock file "postmaster.pid" already exists', 'pre-existing shared
        # memory block is still in use'). So retry within the timeout.
        local attempt_deadline=$((SECONDS + START_TIMEOUT)) attempt=1
        # pg_ctl -w waits for readiness (and detaches the postmaster into its
        # own session); no inherited fds may leak into the postmaster.
        until (close_extra_fds; pg_run "$PGBIN/pg_ctl" -D "$dir" -l "$dir/server.log" \
            -w -t "$START_TIMEOUT" -s start) </dev/null >"$SB/$label-ctl.log" 2>&1; do
            if ((SECONDS >= attempt_deadline)) || pg_pid_of "$dir" >/dev/null ||
                ! tail -n 5 "$dir/server.log" 2>/dev/null |
                grep -qE 'lock file "postmaster.pid" already exists|shared memory block is still in use'; then
                cat "$SB/$label-ctl.log" >&2 || true
                show_log "$dir/server.log"
                die "$label: failed to start"
            fi
            ((attempt++ == 1)) && log "$label: previous postmaster still exiting, retrying"
            sleep 0.5
        done
    fi
    local deadline=$((SECONDS + START_TIMEOUT))
    until pg_ready_at "$sock" "$port"; do
        if ((SECONDS >= deadline)); then
            show_log "$dir/server.log"
            die "$label: not ready after ${START_TIMEOUT}s"
        fi
        sleep 0.2
    done
    log "$label: up (pid $(pg_pid_of "$dir" || echo "?"), port $port)"
}
pg_start() { pg_start_server pg "$PGDATA_DIR" "$PG_PORT" "$PG_SOCKDIR"; }

pg_stop() {
    local pid
    if [[ -n $PGDATA_DIR ]] && pid=$(pg_pid); then
        # SIGINT = "fast" shutdown (SIGTERM would wait for clients to leave).
        stop_pid pg "$pid" INT
    else
        log "pg: not running"
    fi
}

# Role and databases (once; idempotent anyway).
pg_setup() {
    [[ -e $STATE/pg.setup ]] && return 0
    log "pg: creating role manx and databases ${PG_DATABASES[*]}"
    local dbs
    dbs=$(printf "'%s'," "${PG_DATABASES[@]}")
    dbs=${dbs%,}
    pg_psql -d postgres <<EOF || die "pg: role/database setup failed"
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'manx') THEN
    CREATE ROLE manx LOGIN SUPERUSER PASSWORD 'manx';
  ELSE
    ALTER ROLE manx LOGIN SUPERUSER PASSWORD 'manx';
  END IF;
END
\$\$;
SELECT format('CREATE DATABASE %I OWNER manx ENCODING ''UTF8''', d)
  FROM unnest(ARRAY[$dbs]) AS d
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = d)
\gexec
EOF
    touch "$STATE/pg.setup"
}

# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------

take_lock() {
    mkdir -p "$SB"
    exec 9>>"$LOCK_FILE"
    if ! flock -n 9; then
        log "waiting for another sandbox.sh to finish (lock $LOCK_FILE)"
        flock -w 300 9 || die "could not acquire $LOCK_FILE within 300s"
    fi
}

start_primary() { my_init primary; my_start primary; }
start_replica() { my_init replica; my_start replica; }
start_standby() { my_init standby; my_start standby; }
# A role whose password is stored and checked as MD5 (the sandbox's other roles use
# SCRAM-SHA-256), for tests of both password methods. Idempotent: sandboxes initialised
# before this role existed get the pg_hba.conf line (then a reload) and the role.
pg_setup_md5() {
    local hba=$PGDATA_DIR/pg_hba.conf tmp
    if ! grep -Eq '^host[[:space:]]+all[[:space:]]+manx_md5[[:space:]]' "$hba"; then
        log "pg: adding md5 authentication for role manx_md5 to pg_hba.conf"
        tmp=$(mktemp)
        awk '/^host[[:space:]]+all[[:space:]]+all[[:space:]]/ && !done {
                 print "host    all       manx_md5  127.0.0.1/32   md5"; done = 1 }
             { print }' "$hba" >"$tmp"
        pg_write_file "$hba" <"$tmp"
        rm -f "$tmp"
        pg_psql -d postgres -c 'SELECT pg_reload_conf()' >/dev/null || die "pg: reload failed"
    fi
    [[ -e $STATE/pg.md5 ]] && return 0
    log "pg: creating role manx_md5 (md5 password)"
    pg_psql -d postgres <<'EOF' || die "pg: role manx_md5 setup failed"
SET password_encryption = 'md5';
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'manx_md5') THEN
    CREATE ROLE manx_md5 LOGIN SUPERUSER PASSWORD 'manx_md5';
  ELSE
    ALTER ROLE manx_md5 LOGIN SUPERUSER PASSWORD 'manx_md5';
  END IF;
END
$$;
EOF
    touch "$STATE/pg.md5"
}

# The gateway's role (manx_gw): no role attributes, a table user's rights on the shard
# databases (README "Deployment: the backend account"). Idempotent; runs again on a
# sandbox set up before it existed or when the statements change (marker:
# .state/pg.gateway.sha1). The standby receives it through replication.
pg_gateway_sql_global() {
    local dbs
    dbs=$(printf '%s, ' "${GW_PG_DATABASES[@]}")
    dbs=${dbs%, }
    cat <<EOF
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$GW_USER') THEN
    CREATE ROLE $GW_USER LOGIN;
  END IF;
END
\$\$;
ALTER ROLE $GW_USER LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
  PASSWORD '$GW_PASSWORD';
GRANT CONNECT, TEMPORARY ON DATABASE $dbs TO $GW_USER;
EOF
}
# Run in each of GW_PG_DATABASES: the schema, its tables and sequences, and those the admin
# role manx creates there later.
pg_gateway_sql_db() {
    cat <<EOF
GRANT USAGE, CREATE ON SCHEMA public TO $GW_USER;
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES ON ALL TABLES IN SCHEMA public TO $GW_USER;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO $GW_USER;
ALTER DEFAULT PRIVILEGES FOR ROLE manx IN SCHEMA public
  GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES ON TABLES TO $GW_USER;
ALTER DEFAULT PRIVILEGES FOR ROLE manx IN SCHEMA public
  GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO $GW_USER;
EOF
}
pg_setup_gateway() {
    local sum db
    sum=$({ pg_gateway_sql_global; pg_gateway_sql_db; } | sha1sum | cut -d' ' -f1)
    if [[ -e $STATE/pg.gateway.sha1 && $(cat "$STATE/pg.gateway.sha1") == "$sum" ]]; then return 0; fi
    log "pg: setting up the gateway's role $GW_USER"
    pg_gateway_sql_global | pg_psql -d postgres || die "pg: role $GW_USER setup failed"
    for db in "${GW_PG_DATABASES[@]}"; do
        pg_gateway_sql_db | pg_psql -d "$db" || die "pg: rights of $GW_USER on $db failed"
    done
    echo "$sum" >"$STATE/pg.gateway.sha1"
}

# PG needs nothing from MariaDB; the standby copies the primary once it is set up.
start_pg() { pg_init; pg_start; pg_setup; pg_setup_md5; pg_setup_gateway; pg_setup_replication; start_pg_standby; }

# ---------------------------------------------------------------------------
# PostgreSQL standby (pg-standby)
# ---------------------------------------------------------------------------
#
# A hot standby of pg built with pg_basebackup, streaming through the
# physical replication slot $PG_SLOT (created by pg_basebackup -C), so it
# never misses WAL while it is stopped; the primary caps what it keeps for
# the slot (max_slot_wal_keep_size). `start` rebuilds the standby when it has
# no data yet, when the slot is missing or lost its WAL, or when the standby
# was promoted (no standby.signal): the standby holds nothing of its own.

# Replication access for the standby (pg_hba.conf line for role postgres,
# then a reload, which also applies the primary's manx-sandbox.conf).
# Idempotent: sandboxes initialised before the standby existed get the line.
pg_setup_replication() {
    local hba=$PGDATA_DIR/pg_hba.conf tmp
    if ! grep -Eq '^host[[:space:]]+replication[[:space:]]+postgres[[:space:]]' "$hba"; then
        log "pg: allowing replication connections from postgres@127.0.0.1 (pg_hba.conf)"
        tmp=$(mktemp)
        awk '/^host[[:space:]]+all[[:space:]]+postgres[[:space:]]/ && !done {
                 print; print "host    replication postgres 127.0.0.1/32  trust"; done = 1; next }
             { print }
             END { if (!done) print "host    replication postgres 127.0.0.1/32  trust" }' "$hba" >"$tmp"
        pg_write_file "$hba" <"$tmp"
        rm -f "$tmp"
    fi
    pg_psql -d postgres -c 'SELECT pg_reload_conf()' >/dev/null || die "pg: reload failed"
}

# The wal_status of the standby's slot on the primary ('' when missing).
pg_slot_status() {
    pg_psql -d postgres -At -c "SELECT wal_status FROM pg_replication_slots WHERE slot_name = '$PG_SLOT'"
}

pgs_stop() {
    local pid
    if [[ -n $PGS_DATA_DIR ]] && pid=$(pgs_pid); then
        stop_pid pg-standby "$pid" INT
    else
        log "pg-standby: not running"
    fi
}

# (Re)builds the standby's data dir from the primary when needed (marker:
# .state/pg-standby.init).
pgs_init() {
    local status
    if [[ -e $STATE/pg-standby.init && -e $PGS_DATA_DIR/PG_VERSION ]]; then
        status=$(pg_slot_status) || die "pg: cannot read pg_replication_slots"
        if [[ ! -e $PGS_DATA_DIR/standby.signal ]]; then
            log "pg-standby: was promoted (no standby.signal); rebuilding it as a standby of pg"
        elif [[ -z $status ]]; then
            log "pg-standby: replication slot $PG_SLOT is missing on pg; rebuilding the standby"
        elif [[ $status == lost ]]; then
            log "pg-standby: replication slot $PG_SLOT lost WAL the standby needs; rebuilding the standby"
        else
            return 0
        fi
    fi
    pgs_stop
    rm -f "$STATE/pg-standby.init"
    # an inactive slot of an earlier standby: pg_basebackup -C creates it anew
    pg_psql -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$PG_SLOT' AND NOT active" >/dev/null ||
        die "pg: cannot drop the old replication slot $PG_SLOT"
    log "pg-standby: copying pg (pg_basebackup, slot $PG_SLOT) into $PGS_DATA_DIR"
    find "$PGS_DATA_DIR" -mindepth 1 -delete
    if ! (close_extra_fds; pg_run "$PGBIN/pg_basebackup" -D "$PGS_DATA_DIR" -h 127.0.0.1 -p "$PG_PORT" \
        -U postgres -X stream -C -S "$PG_SLOT" -c fast --no-sync) </dev/null >"$SB/pg-standby-basebackup.log" 2>&1; then
        show_log "$SB/pg-standby-basebackup.log"
        die "pg-standby: pg_basebackup failed"
    fi
    # the primary's log came along; the standby keeps its own
    rm -f -- "$PGS_DATA_DIR/server.log"
    pg_write_file "$PGS_DATA_DIR/standby.signal" </dev/null
    touch "$STATE/pg-standby.init"
}

# Waits until the primary reports the standby streaming.
pgs_check() {
    local deadline=$((SECONDS + START_TIMEOUT)) state
    while :; do
        state=$(pg_psql -d postgres -At -c "SELECT state FROM pg_stat_replication WHERE application_name = '$PG_SLOT'" 2>/dev/null || true)
        [[ $state == streaming ]] && break
        if ((SECONDS >= deadline)); then
            show_log "$PGS_DATA_DIR/server.log"
            die "pg-standby: not streaming from pg after ${START_TIMEOUT}s (state: ${state:-none})"
        fi
        sleep 0.2
    done
    log "pg-standby: streaming from pg (slot $PG_SLOT)"
}

start_pg_standby() {
    pgs_init
    pg_start_server pg-standby "$PGS_DATA_DIR" "$PG_STANDBY_PORT" "$PGS_SOCKDIR"
    pgs_check
}


cmd_start() {
    local t0=$SECONDS
    take_lock
    ensure_binaries
    mkdir -p "$STATE"
    pg_prepare_dir
    pg_pin_version
    # Initialise (first time) and start the three servers concurrently; each
    # job waits for its server to answer (bounded by START_TIMEOUT). The PG
    # job also creates its role/databases; MariaDB setup needs both servers.
    run_parallel start_primary start_replica start_standby start_pg || die "start failed (see messages above)"
    my_setup_primary
    my_setup_gateway
    my_load_sample
    my_setup_replica replica
    my_setup_replica standby
    my_check_replication replica
    my_check_replication standby
    log "sandbox ready in $((SECONDS - t0))s ($SB)"
    print_status || true
}

cmd_stop() {
    take_lock
    locate_binaries
    pg_resolve_dir
    # all at once (a MariaDB shutdown alone takes ~1.5 s)
    run_parallel stop_replica stop_standby stop_primary pg_stop pgs_stop
}

stop_primary() { my_stop primary; }
stop_replica() { my_stop replica; }
stop_standby() { my_stop standby; }

cmd_reset() {
    cmd_stop || die "could not stop all servers; not deleting $SB"
    # keep .lock itself: other processes may be waiting on it right now
    local name real parent
    for name in pg pg-standby; do
        [[ -L $SB/$name ]] || continue
        real=$(readlink -- "$SB/$name")
        parent=$(dirname -- "$real")
        if [[ $(basename -- "$real") == "$name" && $(basename -- "$parent") == "$SB_HASH" &&
            $(basename -- "$(dirname -- "$parent")") == manx-sandbox ]]; then
            log "removing relocated PostgreSQL data dir $real"
            rm -rf -- "$real"
            rm -f -- "$parent/ORIGIN"
            rmdir -- "$parent" 2>/dev/null || true
            rmdir -- "$(dirname -- "$parent")" 2>/dev/null || true
        else
            log "warning: $SB/$name points to unexpected $real, not deleting that"
        fi
    done
    # socket dir fallbacks for long paths
    rm -rf -- "/tmp/manx-sandbox-$SB_HASH-pg" "/tmp/manx-sandbox-$SB_HASH-pg-standby"
    log "removing $SB"
    find "$SB" -mindepth 1 -maxdepth 1 ! -name .lock -exec rm -rf -- {} +
}

# One line per server: name, address, up/down, pid. Returns 0 iff all up.
print_status() {
    local all=0 pid state extra name port
    for name in primary replica standby; do
        port=$(my_port "$name"); extra=""
        if pid=$(my_pid "$name"); then
            if [[ -n ${MYSQL:-} ]] && my_ping "$name"; then state=up; else state=down; all=1; extra=" (process alive but not answering)"; fi
            if [[ $name != primary && $state == up ]]; then
                local io sq
                read -r io sq <<<"$(my_slave_state "$name")"
                extra=" (Slave_IO_Running=$io Slave_SQL_Running=$sq)"
            fi
        else
            state=down; pid=-; all=1
        fi
        printf '%-10s 127.0.0.1:%-6s %-5s pid=%s%s\n' "$name" "$port" "$state" "$pid" "$extra"
    done
    pg_resolve_dir
    extra=""
    if pid=$(pg_pid); then
        if [[ -n ${PG_ISREADY:-} ]] && pg_ready; then state=up; else state=down; all=1; extra=" (process alive but not answering)"; fi
    else
        state=down; pid=-; all=1
    fi
    printf '%-10s 127.0.0.1:%-6s %-5s pid=%s%s\n' pg "$PG_PORT" "$state" "$pid" "$extra"
    extra=""
    if pid=$(pgs_pid); then
        if [[ -n ${PG_ISREADY:-} ]] && pgs_ready; then
            state=up
            local recovery receiver
            recovery=$(pgs_psql -d postgres -At -c 'SELECT pg_is_in_recovery()' 2>/dev/null || true)
            receiver=$(pgs_psql -d postgres -At -c 'SELECT status FROM pg_stat_wal_receiver' 2>/dev/null || true)
            if [[ $recovery == t ]]; then
                extra=" (in recovery, WAL receiver ${receiver:-not running})"
                [[ $receiver == streaming ]] || all=1
            else
                extra=" (promoted: not in recovery; 'start' rebuilds it as a standby)"; all=1
            fi
        else
            state=down; all=1; extra=" (process alive but not answering)"
        fi
    else
        state=down; pid=-; all=1
    fi
    printf '%-10s 127.0.0.1:%-6s %-5s pid=%s%s\n' pg-standby "$PG_STANDBY_PORT" "$state" "$pid" "$extra"
    return $all
}

cmd_status() {
    locate_binaries
    print_status
}

usage() {
    cat <<EOF
usage: $0 start|stop|status|restart|reset
  start    start (and on first use initialise) the sandbox servers
  stop     stop them
  status   print their state; exit 0 only if all are up
  restart  stop + start
  reset    stop + delete all sandbox data
sandbox dir: $SB (override with MANX_SANDBOX_DIR)
EOF
}

case ${1:-} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    restart) cmd_stop && cmd_start ;;
    reset) cmd_reset ;;
    -h | --help | help) usage ;;
    *) usage >&2; exit 2 ;;
esac
