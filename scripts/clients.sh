#!/usr/bin/env bash
#
# scripts/clients.sh — installs the client programs of the client matrix (tests/client_matrix.rs).
# Idempotent: every step is skipped when its result is already there, so a warm run takes well
# under a second. Called by the tests themselves (once per test binary); can be run by hand.
#
#   Debian packages (only the missing ones, --no-upgrade; root only):
#       libmariadb-dev pkg-config   mysqlclient's build
#       libmariadb-java             MariaDB Connector/J (/usr/share/java/mariadb-java-client.jar)
#       sysbench
#       haproxy                     the load-balancer drain test (tests/manager.rs)
#       prometheus                  scrapes /metrics in tests/observability.rs (and promtool)
#       percona-toolkit             pt-query-digest reads the slow log (tests/observability.rs)
#   PyPI, into the venv target/clients-venv:
#       PyMySQL, mysqlclient, mysql-connector-python, SQLAlchemy
#   npm, into target/clients-node (copied from tests/clients/node/package.json):
#       mysql2
#   javac: tests/clients/ConnJ.java, JdbcTypes.java -> target/clients-java/
#
# Prints the paths the tests need as KEY=VALUE lines on stdout; logs go to stderr.
#
set -euo pipefail

SCRIPT_PATH=$(readlink -f -- "${BASH_SOURCE[0]}")
REPO=$(cd -- "$(dirname -- "$SCRIPT_PATH")/.." && pwd -P)
CLIENTS=$REPO/tests/clients
TARGET=$REPO/target
VENV=$TARGET/clients-venv
NODE_DIR=$TARGET/clients-node
JAVA_DIR=$TARGET/clients-java
LOCK_FILE=$TARGET/.clients.lock

# Versions pinned so a registry release cannot change what the matrix tests.
PY_PACKAGES=(
    "PyMySQL==1.1.1"
    "mysqlclient==2.2.7"
    "mysql-connector-python==9.1.0"
    "SQLAlchemy==2.0.36"
)
DEB_PACKAGES=(libmariadb-dev pkg-config libmariadb-java sysbench haproxy prometheus percona-toolkit)

log() { printf '[clients] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

mkdir -p "$TARGET"
exec 9>>"$LOCK_FILE"
flock -w 900 9 || die "could not acquire $LOCK_FILE"

# --- Debian packages -------------------------------------------------------
missing=()
for p in "${DEB_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if ((${#missing[@]})); then
    [[ $(id -u) -eq 0 ]] || die "missing Debian packages: ${missing[*]} (run: sudo apt-get install -y ${missing[*]})"
    command -v apt-get >/dev/null || die "missing packages (${missing[*]}) and no apt-get"
    log "installing Debian packages: ${missing[*]}"
    (
        # no service start from postinst (same as scripts/sandbox.sh)
        policy=/usr/sbin/policy-rc.d
        if [[ ! -e $policy ]]; then
            trap 'rm -f "$policy"' EXIT
            printf '#!/bin/sh\n# temporary, created by manx scripts/clients.sh\nexit 101\n' >"$policy"
            chmod 755 "$policy"
        fi
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q || log "warning: apt-get update failed, trying to install anyway"
        apt-get install -y -q --no-upgrade --no-install-recommends "${missing[@]}"
    ) 9>&- </dev/null >&2 || die "apt-get install ${missing[*]} failed"
fi

# --- Python venv -------------------------------------------------------------
py_stamp=$VENV/.manx-installed
py_want=$(printf '%s\n' "${PY_PACKAGES[@]}")
if [[ ! -x $VENV/bin/python || ! -e $py_stamp || $(cat "$py_stamp") != "$py_want" ]]; then
    log "creating $VENV with ${PY_PACKAGES[*]}"
    [[ -x $VENV/bin/python ]] || python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install -q --disable-pip-version-check "${PY_PACKAGES[@]}" 9>&- </dev/null >&2 ||
        die "pip install failed"
    printf '%s' "$py_want" >"$py_stamp"
fi

# --- Node --------------------------------------------------------------------
command -v npm >/dev/null || die "npm is not installed"
mkdir -p "$NODE_DIR"
if ! cmp -s "$CLIENTS/node/package.json" "$NODE_DIR/package.json" || [[ ! -d $NODE_DIR/node_modules/mysql2 ]]; then
    log "npm install in $NODE_DIR"
    cp "$CLIENTS/node/package.json" "$NODE_DIR/package.json"
    (cd "$NODE_DIR" && npm install --no-audit --no-fund --loglevel=error 9>&- </dev/null >&2) ||
        die "npm install failed"
fi

# --- Java --------------------------------------------------------------------
JAR=$(ls /usr/share/java/mariadb-java-client.jar 2>/dev/null || ls /usr/share/java/mariadb-java-client-*.jar 2>/dev/null | head -n1 || true)
[[ -n $JAR && -r $JAR ]] || die "MariaDB Connector/J jar not found under /usr/share/java"
command -v javac >/dev/null || die "javac is not installed"
mkdir -p "$JAVA_DIR"
for program in ConnJ JdbcTypes; do
    if [[ ! -e $JAVA_DIR/$program.class || $CLIENTS/$program.java -nt $JAVA_DIR/$program.class ]]; then
        log "compiling $program.java"
        javac -cp "$JAR" -d "$JAVA_DIR" "$CLIENTS/$program.java" >&2 || die "javac failed"
    fi
done

echo "PYTHON=$VENV/bin/python"
echo "NODE_DIR=$NODE_DIR"
echo "JAVA_CP=$JAVA_DIR:$JAR"
echo "SYSBENCH=$(command -v sysbench)"
echo "HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)"
echo "PROMETHEUS=$(command -v prometheus || echo /usr/bin/prometheus)"
echo "PROMTOOL=$(command -v promtool || echo /usr/bin/promtool)"
echo "PT_QUERY_DIGEST=$(command -v pt-query-digest || echo /usr/bin/pt-query-digest)"
