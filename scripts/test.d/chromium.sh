# Sourced by scripts/test. The status page's browser test (package
# statuspage/test) renders the page in a real browser: install Debian's
# chromium when it is missing, and export CLOUDG_CHROMIUM, the path the
# test runs. Fast when it is installed: one lookup.
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing chromium (Debian package)"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
CLOUDG_CHROMIUM=$(command -v chromium)
export CLOUDG_CHROMIUM
echo "chromium: $("$CLOUDG_CHROMIUM" --version 2>/dev/null) (CLOUDG_CHROMIUM=$CLOUDG_CHROMIUM)"
