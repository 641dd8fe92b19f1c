#!/usr/bin/env bash
# Run a command as on a learner's machine without Chromium: in a private mount namespace whose /usr/bin is
# a copy (symbolic links) of the real one less chromium*, so nothing the command starts can find a browser.
# The rest of the machine is untouched. Needs root, or unprivileged user namespaces (unshare -r).
#   scripts/without_chromium.sh .venv/bin/python -m pytest --nbval
set -euo pipefail
if [ "${HOOKVIZ_IN_NAMESPACE:-}" != 1 ]; then
  if [ "$(id -u)" = 0 ]; then
    exec env HOOKVIZ_IN_NAMESPACE=1 unshare -m --propagation private "$0" "$@"
  else
    exec env HOOKVIZ_IN_NAMESPACE=1 unshare -r -m --propagation private "$0" "$@"
  fi
fi
real=$(mktemp -d)
mount --bind /usr/bin "$real"          # the real binaries stay reachable here
mount -t tmpfs -o mode=755 tmpfs /usr/bin
for path in "$real"/* "$real"/.[!.]*; do
  [ -e "$path" ] || [ -L "$path" ] || continue
  name=${path##*/}
  case "$name" in chromium*) continue ;; esac
  "$real"/ln -s "$path" "/usr/bin/$name"  # ln itself lives in the hidden /usr/bin
done
if [ -e /usr/bin/chromium ] || [ -n "$(type -P chromium)" ]; then
  echo "without_chromium.sh: chromium is still reachable" >&2
  exit 3
fi
echo "without_chromium.sh: /usr/bin/chromium hidden for: $*" >&2
exec "$@"
