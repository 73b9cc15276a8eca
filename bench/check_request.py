"""Writes the body of one ext_authz gRPC call to stdout: a length-prefixed envoy.service.auth.v3.CheckRequest, as
Envoy's ext_authz filter sends it for `GET /v1/orders` with the token given (PyPI xds-protos; bench/http2.sh)."""
import sys

from envoy.service.auth.v3 import external_auth_pb2

token = sys.argv[1]
request = external_auth_pb2.CheckRequest()
request.attributes.source.address.socket_address.address = "10.0.0.7"
request.attributes.source.address.socket_address.port_value = 51000
http = request.attributes.request.http
http.id = "8f3c5a1e-bench"
http.method = "GET"
http.path = "/v1/orders?page=2"
http.host = "api.bench.test"
http.scheme = "https"
http.protocol = "HTTP/2"
for name, value in [(":method", "GET"), (":path", "/v1/orders?page=2"), (":authority", "api.bench.test"), (":scheme", "https"),
                    ("authorization", "Bearer " + token), ("user-agent", "bench-client/1.0"), ("accept", "application/json"),
                    ("x-request-id", "8f3c5a1e-bench"), ("x-forwarded-proto", "https")]:
    http.headers[name] = value
message = request.SerializeToString()
sys.stdout.buffer.write(b"\x00" + len(message).to_bytes(4, "big") + message)
