#!/usr/bin/env bash
# Installs the Debian packages named as arguments (scripts/test.sh, scripts/image.sh): as root, with the
# packages' own services not started (the tests start their own servers). Not root, or no apt-get: says what to
# install and fails. No arguments: nothing to do.
set -euo pipefail
[ $# -gt 0 ] || exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "missing: $*; install them (apt-get install $*) and run again" >&2
  exit 1
fi
echo "installing from Debian: $*" >&2
apt-get update -qq
own_policy=false
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && own_policy=true
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
if $own_policy; then rm -f /usr/sbin/policy-rc.d; fi
