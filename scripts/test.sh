#!/usr/bin/env bash
# Runs manx's whole test suite: starts (and on a fresh machine installs) the sandbox backends,
# then every unit, integration and golden-vector test. Extra arguments go to `cargo test`.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
if [ ! -d ../shared/mycat-compat ]; then
    echo "test.sh: ../shared/mycat-compat (the Mycat compatibility kit) is missing next to the repo" >&2
    exit 1
fi
scripts/sandbox.sh start
cargo test --locked "$@"
