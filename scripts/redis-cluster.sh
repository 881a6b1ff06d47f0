#!/usr/bin/env bash
# A local Redis Cluster (3 masters, 3 replicas; redis-server from Debian) on
# loopback, for the cluster-vs-single benchmarks (bench/README.md, "Redis
# Cluster"):
#   scripts/redis-cluster.sh start [first port, default 17000]   # prints the seed URL
#   scripts/redis-cluster.sh stop
# Data and logs in ${REDIS_CLUSTER_DIR:-bin/redis-cluster}. No persistence.
# The nodes listen on port..port+5 and their cluster bus on port+10000...
set -euo pipefail
cd "$(dirname "$0")/.."
dir="$(realpath -m "${REDIS_CLUSTER_DIR:-bin/redis-cluster}")"
case "${1:-}" in
  start)
    base="${2:-17000}"
    # A node that fails to start (a port taken: the nodes use port and
    # port+10000) leaves none running.
    trap '"$0" stop; echo "redis-cluster: start failed, see $dir/*/redis.log" >&2' ERR
    mkdir -p "$dir"
    addrs=()
    for i in 0 1 2 3 4 5; do
      port=$((base + i)); d="$dir/$port"; mkdir -p "$d"
      redis-server --bind 127.0.0.1 --port "$port" --dir "$d" --save '' --appendonly no \
        --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 1000 \
        --repl-diskless-sync-delay 0 \
        --daemonize yes --pidfile "$d/redis.pid" --logfile "$d/redis.log"
      addrs+=("127.0.0.1:$port")
    done
    for a in "${addrs[@]}"; do
      for _ in $(seq 100); do redis-cli -h 127.0.0.1 -p "${a##*:}" ping >/dev/null 2>&1 && break; sleep 0.1; done
      redis-cli -h 127.0.0.1 -p "${a##*:}" ping >/dev/null
    done
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log"
    until redis-cli -p "$base" cluster info | grep -q cluster_state:ok; do sleep 0.1; done
    echo "redis://${addrs[0]}?addr=${addrs[1]}&addr=${addrs[2]}"
    ;;
  stop)
    for p in "$dir"/*/redis.pid; do
      [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null || true
    done
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start [port] | stop" >&2; exit 2 ;;
esac
