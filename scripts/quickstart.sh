#!/usr/bin/env bash
#
# scripts/quickstart.sh — from a fresh clone to a running manx gateway:
#   1. start the sandbox backends (scripts/sandbox.sh start: MariaDB primary
#      13306 + replica 13307 + standby 13308, PostgreSQL 15432 + its standby 15433,
#      under target/sandbox/),
#   2. cargo build --release,
#   3. exec target/release/manx --conf <repo>  (runs in the foreground; Ctrl-C
#      stops the gateway, the sandbox keeps running: scripts/sandbox.sh stop).
#
# Extra arguments are passed on to manx.
set -euo pipefail

REPO=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/.." && pwd -P)
cd "$REPO"

"$REPO/scripts/sandbox.sh" start

echo "==> cargo build --release"
cargo build --release

cat <<'EOF'

==> starting manx (Ctrl-C to stop). Connect with:
      mysql -h127.0.0.1 -P8066 -uroot -p123456 TESTDB
    Backends: MariaDB 127.0.0.1:13306 (primary) / 13307 (replica) / 13308 (standby), PostgreSQL
    127.0.0.1:15432 (primary) / 15433 (standby, read-only); the gateway logs in as manx_gw/manx_gw
    (only what it needs), manx/manx is the sandbox's admin account; stop them with
    scripts/sandbox.sh stop.

EOF
# Local only: the bundled users have sample passwords.
exec "$REPO/target/release/manx" --conf "$REPO" --bind 127.0.0.1 "$@"
