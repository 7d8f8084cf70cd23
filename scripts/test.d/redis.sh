# Sourced by scripts/test. Fleet mode's tests run against an in-process
# Redis (miniredis) and, with CLOUDG_REDIS_URL set, against a real
# redis-server too: install it if missing (Debian's package) and start it
# on 127.0.0.1:${CLOUDG_REDIS_PORT:-6390} when nothing answers there.
redis_port=${CLOUDG_REDIS_PORT:-6390}
if ! command -v redis-server >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing redis-server (Debian package)"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
if ! redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null 2>&1; then
  redis-server --port "$redis_port" --bind 127.0.0.1 --daemonize yes \
    --save '' --appendonly no --logfile "${TMPDIR:-/tmp}/cloudg-redis-$redis_port.log"
  for _ in $(seq 100); do
    redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
fi
redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null
export CLOUDG_REDIS_URL="redis://127.0.0.1:$redis_port/0"
echo "redis-server on 127.0.0.1:$redis_port (CLOUDG_REDIS_URL=$CLOUDG_REDIS_URL)"
