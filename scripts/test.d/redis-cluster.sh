# Sourced by scripts/test. Fleet mode's tests run against a real Redis
# Cluster too: three redis-server masters on 127.0.0.1, ports
# ${CLOUDG_REDIS_CLUSTER_PORTS:-7301 7302 7303}, every slot assigned. It
# reuses a healthy cluster on those ports (several worktrees share one, as
# they share the single node of redis.sh) and otherwise starts and forms
# one, under a lock so that two runs starting together form it once.
cluster_ports=${CLOUDG_REDIS_CLUSTER_PORTS:-7301 7302 7303}
if ! command -v redis-server >/dev/null 2>&1; then
  # shellcheck source=redis.sh
  source "$(dirname "${BASH_SOURCE[0]}")/redis.sh" # installs it
fi

cluster_ok() {
  local p
  for p in $cluster_ports; do
    redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
  done
}

cluster_dir="${TMPDIR:-/tmp}/cloudg-redis-cluster"
mkdir -p "$cluster_dir"
(
  flock 9
  if ! cluster_ok; then
    for p in $cluster_ports; do
      if ! redis-cli -h 127.0.0.1 -p "$p" ping >/dev/null 2>&1; then
        rm -f "$cluster_dir/nodes-$p.conf"
        redis-server --port "$p" --bind 127.0.0.1 --daemonize yes --save '' --appendonly no \
          --cluster-enabled yes --cluster-config-file "$cluster_dir/nodes-$p.conf" \
          --cluster-node-timeout 2000 --logfile "$cluster_dir/redis-$p.log" --dir "$cluster_dir" 9>&-
      fi
    done
    for p in $cluster_ports; do
      for _ in $(seq 100); do
        redis-cli -h 127.0.0.1 -p "$p" ping >/dev/null 2>&1 && break
        sleep 0.1
      done
    done
    # Nodes left from a cluster that never formed: empty them first.
    for p in $cluster_ports; do
      redis-cli -h 127.0.0.1 -p "$p" flushall >/dev/null
      redis-cli -h 127.0.0.1 -p "$p" cluster reset hard >/dev/null
    done
    nodes=""
    for p in $cluster_ports; do nodes="$nodes 127.0.0.1:$p"; done
    # shellcheck disable=SC2086
    redis-cli --cluster create $nodes --cluster-replicas 0 --cluster-yes >"$cluster_dir/create.log" 2>&1 ||
      { cat "$cluster_dir/create.log"; exit 1; }
    for _ in $(seq 100); do
      cluster_ok && break
      sleep 0.1
    done
  fi
  cluster_ok || { echo "the Redis Cluster on ports $cluster_ports is not ok"; exit 1; }
) 9>"$cluster_dir/lock"
CLOUDG_REDIS_CLUSTER_ADDRS=""
for p in $cluster_ports; do
  CLOUDG_REDIS_CLUSTER_ADDRS="${CLOUDG_REDIS_CLUSTER_ADDRS:+$CLOUDG_REDIS_CLUSTER_ADDRS,}127.0.0.1:$p"
done
export CLOUDG_REDIS_CLUSTER_ADDRS
echo "Redis Cluster on 127.0.0.1 (CLOUDG_REDIS_CLUSTER_ADDRS=$CLOUDG_REDIS_CLUSTER_ADDRS)"
