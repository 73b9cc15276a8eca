"""Raw ext_authz calls to Gatehouse's [ext_authz] port with Envoy's own API classes (PyPI xds-protos) and
grpcio: the edge cases a real Envoy would never send, and the answers read field by field.

--plan (or @FILE) is a JSON list of calls, each one of:
  {"name", "check": {"method", "path", "host", "scheme", "protocol", "id", "headers": [[k, v], ...],
                     "source": "1.2.3.4", "certificate": "...", "context": {k: v}, "timeout": seconds}}
  {"name", "raw": "<hex of the request message>"}            (a CheckRequest's bytes, however broken)
  {"name", "health": "<service name>"}
  {"name", "signout": {"url", "token"}}                        (a POST to Gatehouse's sign-out, between Checks)
Prints one JSON object {"calls": {name: answer}}, an answer being {"code": gRPC status code, "details",
"allowed", "denied_status", "headers": [[k, v, append_action]], "remove": [...], "body", "metadata": {...}}
or, for health, {"code", "status"}. --tls-ca (with --cert/--key): over TLS. Only 127.0.0.1.
"""

import argparse
import json
import sys
import urllib.request

import grpc
from envoy.service.auth.v3 import external_auth_pb2
from google.protobuf import json_format

CHECK = "/envoy.service.auth.v3.Authorization/Check"
HEALTH = "/grpc.health.v1.Health/Check"


def health_request(service):
    data = service.encode()
    return (b"\x0a" + bytes([len(data)]) + data) if data else b""


def build(spec):
    request = external_auth_pb2.CheckRequest()
    http = request.attributes.request.http
    http.method = spec.get("method", "GET")
    http.path = spec.get("path", "/")
    http.host = spec.get("host", "api.test")
    http.scheme = spec.get("scheme", "http")
    http.protocol = spec.get("protocol", "HTTP/1.1")
    http.id = spec.get("id", "1234")
    for name, value in spec.get("headers", []):
        # A field sent twice: Envoy joins its values with "," (one map entry per name).
        http.headers[name] = http.headers[name] + "," + value if name in http.headers else value
    if "source" in spec:
        request.attributes.source.address.socket_address.address = spec["source"]
        request.attributes.source.address.socket_address.port_value = 40000
    if "certificate" in spec:
        request.attributes.source.certificate = spec["certificate"]
    for name, value in spec.get("context", {}).items():
        request.attributes.context_extensions[name] = value
    return request.SerializeToString()


def call(channel, method, payload, timeout):
    unary = channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
    try:
        response, rpc = unary.with_call(payload, timeout=timeout)
        return grpc.StatusCode.OK.value[0], "", response
    except grpc.RpcError as error:
        return error.code().value[0], error.details() or "", None


def describe(response_bytes):
    response = external_auth_pb2.CheckResponse()
    response.ParseFromString(response_bytes)
    answer = {"status_code": response.status.code, "status_message": response.status.message}
    if response.HasField("ok_response"):
        answer["allowed"] = True
        answer["headers"] = [[o.header.key, o.header.value, o.append_action] for o in response.ok_response.headers]
        answer["remove"] = list(response.ok_response.headers_to_remove)
    if response.HasField("denied_response"):
        answer["allowed"] = False
        answer["denied_status"] = response.denied_response.status.code
        answer["headers"] = [[o.header.key, o.header.value, o.append_action] for o in response.denied_response.headers]
        answer["body"] = response.denied_response.body
    if response.HasField("dynamic_metadata"):
        answer["metadata"] = json_format.MessageToDict(response.dynamic_metadata)
    return answer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--tls-ca", help="TLS, trusting this CA (PEM)")
    parser.add_argument("--cert", help="with --tls-ca: this client certificate (PEM)")
    parser.add_argument("--key", help="with --cert: its key (PEM)")
    args = parser.parse_args()
    plan = json.load(open(args.plan[1:])) if args.plan.startswith("@") else json.loads(args.plan)
    if args.tls_ca:
        read = lambda path: open(path, "rb").read() if path else None  # noqa: E731
        credentials = grpc.ssl_channel_credentials(read(args.tls_ca), read(args.key), read(args.cert))
        channel = grpc.secure_channel("127.0.0.1:%d" % args.port, credentials)
    else:
        channel = grpc.insecure_channel("127.0.0.1:%d" % args.port)
    results = {}
    for item in plan:
        if "signout" in item:
            # Between two Checks on the same connection: a sign-out on Gatehouse's client port.
            http = urllib.request.Request(item["signout"]["url"], data=b"", method="POST",
                                          headers={"Authorization": "Bearer " + item["signout"]["token"]})
            with urllib.request.urlopen(http, timeout=5) as answer:
                results[item["name"]] = {"status": answer.status}
            continue
        if "health" in item:
            code, details, response = call(channel, HEALTH, health_request(item["health"]), 5)
            status = response[1] if response and len(response) >= 2 else 0
            results[item["name"]] = {"code": code, "details": details, "status": status}
            continue
        payload = bytes.fromhex(item["raw"]) if "raw" in item else build(item["check"])
        timeout = item.get("check", {}).get("timeout", 5)
        code, details, response = call(channel, CHECK, payload, timeout)
        answer = {"code": code, "details": details}
        if response is not None:
            answer.update(describe(response))
        results[item["name"]] = answer
    channel.close()
    print(json.dumps({"calls": results}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
