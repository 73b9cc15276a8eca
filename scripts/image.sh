#!/usr/bin/env bash
# Builds the container image of deploy/docker/Dockerfile with podman, on a machine that reaches no container
# registry (CI, these sandboxes): the runtime stage users get, given the binary built here.
#
#   scripts/image.sh [TAG]        (default tag: localhost/gatehouse:<revision>; prints the tag on its last line)
#
# 1. podman, buildah, runc and mmdebstrap from Debian when missing (as root).
# 2. The Dockerfile's Debian base, when podman does not have it: made from Debian's packages with mmdebstrap
#    (--variant=minbase, about 30 s) and tagged as the Dockerfile's DEBIAN_IMAGE.
# 3. The release binary with the static Swift standard library (as the Dockerfile's build stage makes it), built
#    in .build-image/ so that the bench's .build/release is left alone, with GATEHOUSE_REVISION = this commit.
# 4. podman build --build-arg BINARY_FROM=prebuilt: the build context holds only that binary.
#
# Where a registry is reachable, `docker build -f deploy/docker/Dockerfile .` builds the same image with the
# Swift toolchain image instead. Podman here runs with runc (crun refuses the hybrid cgroup layout of these
# machines) and without default ulimits (the sandbox forbids raising them): $CONTAINERS_CONF, written below.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in podman buildah runc mmdebstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
command -v newuidmap >/dev/null || missing+=(uidmap)
scripts/apt-install.sh "${missing[@]}"

export CONTAINERS_CONF=${CONTAINERS_CONF:-${HOME}/.cache/gatehouse/containers.conf}
if [ ! -f "$CONTAINERS_CONF" ]; then
    mkdir -p "$(dirname "$CONTAINERS_CONF")"
    printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n' > "$CONTAINERS_CONF"
fi

debian_image=$(sed -nE 's/^ARG DEBIAN_IMAGE=(.*)$/\1/p' deploy/docker/Dockerfile)
[ -n "$debian_image" ] || { echo "deploy/docker/Dockerfile names no DEBIAN_IMAGE" >&2; exit 1; }
if ! podman image exists "$debian_image"; then
    suite=bookworm
    echo "making $debian_image from Debian's $suite packages (mmdebstrap)" >&2
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    # The suites Debian's own image has (security updates included: the CA bundle comes from there).
    # Four tries, 10, 20 then 40 s apart: one failed package download (seen on fresh machines) should not fail the
    # image. When all fail, the last try's output says which step and what it printed.
    for attempt in 1 2 3 4; do
        mmdebstrap --quiet --variant=minbase "$suite" "$work/base.tar" \
            "deb http://deb.debian.org/debian $suite main" \
            "deb http://deb.debian.org/debian $suite-updates main" \
            "deb http://deb.debian.org/debian-security $suite-security main" > "$work/mmdebstrap.log" 2>&1 && break
        if [ "$attempt" -eq 4 ]; then
            echo "making the Debian base failed four times (mmdebstrap); the last try printed:" >&2
            tail -n 40 "$work/mmdebstrap.log" >&2
            exit 1
        fi
        echo "mmdebstrap failed (try $attempt of 4: $(grep -m1 -E '^E:' "$work/mmdebstrap.log" || tail -n 1 "$work/mmdebstrap.log")); trying again in $((10 * 2 ** (attempt - 1))) s" >&2
        rm -f "$work/base.tar"
        sleep $((10 * 2 ** (attempt - 1)))
    done
    podman import --quiet "$work/base.tar" "$debian_image" >/dev/null
fi

revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then revision="$revision-dirty"; fi
tag=${1:-localhost/gatehouse:${revision}}

GATEHOUSE_REVISION=$revision swift build --scratch-path .build-image -c release --product gatehouse --static-swift-stdlib -Xlinker -s -Xswiftc -enforce-exclusivity=unchecked >&2
context=$(mktemp -d)
cp "$(swift build --scratch-path .build-image -c release --show-bin-path)/gatehouse" "$context/gatehouse"
podman build --quiet --format docker -f deploy/docker/Dockerfile \
    --build-arg BINARY_FROM=prebuilt --build-arg GATEHOUSE_REVISION="$revision" -t "$tag" "$context" >&2
rm -rf "$context"
podman image prune --force >/dev/null   # the build stages' layers of earlier builds
echo "$tag"
