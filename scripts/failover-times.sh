#!/usr/bin/env bash
# Measures failover time: 10 SIGKILLs of the active writeHost of a two-writeHost dataHost
# (switchType 1, dataNodeHeartbeatPeriod 300 ms, maxRetryCount 3) on throwaway MariaDB servers
# (tests/common/mariadb.rs; the shared sandbox is not touched), through the real gateway.
# Prints each round and min/median/max, from the kill to the first INSERT that succeeds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MANX_FAILOVER_ROUNDS=10 cargo test --locked --test failover -- --exact measure_failover_times --nocapture 2>&1 |
    grep -E '^(round|failover over)'
