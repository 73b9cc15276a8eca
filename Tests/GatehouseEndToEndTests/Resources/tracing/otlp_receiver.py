"""An OTLP/HTTP trace receiver for the tests, decoding with opentelemetry-proto (the protocol's own Python classes,
from PyPI): POST /v1/traces takes an ExportTraceServiceRequest (application/x-protobuf).

GET /spans answers every span received so far as JSON: {"spans": [{trace_id, span_id, parent_span_id (hex), name,
kind, start, end, trace_state, attributes {key: value}, status {code, message}, resource {key: value}}],
"exports": n, "raw": base64 of every body received, concatenated}.
--status N answers every export with N (a collector that refuses); --delay S waits S seconds before answering.
"""
import argparse
import base64
import json
import os
import sys
import threading
import time
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# scripts/test.sh installs the current opentelemetry-proto into a directory of its own: xds-protos ships an old copy of
# the same package (without scope_spans) that would otherwise be found first.
PROTO = os.environ.get("GATEHOUSE_OTLP_PROTO", os.path.expanduser("~/.cache/gatehouse/otlp-proto"))
if not os.path.isdir(os.path.join(PROTO, "opentelemetry", "proto", "collector", "trace")):
    sys.exit(f"no opentelemetry-proto in {PROTO}: run scripts/test.sh (it installs it there)")
package = types.ModuleType("opentelemetry")
package.__path__ = [os.path.join(PROTO, "opentelemetry")]
sys.modules["opentelemetry"] = package
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--port-file", required=True)
parser.add_argument("--status", type=int, default=200)
parser.add_argument("--delay", type=float, default=0)
args = parser.parse_args()
lock = threading.Lock()
spans, bodies = [], []
exports = 0


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(pairs):
    return {pair.key: value(pair.value) for pair in pairs}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        global exports
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if args.delay:
            time.sleep(args.delay)
        if args.status == 200 and self.path == "/v1/traces" and self.headers.get("Content-Type") == "application/x-protobuf":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            received = []
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        received.append({
                            "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(), "name": span.name, "kind": span.kind,
                            "start": span.start_time_unix_nano, "end": span.end_time_unix_nano, "trace_state": span.trace_state,
                            "attributes": attributes(span.attributes),
                            "status": {"code": span.status.code, "message": span.status.message}, "resource": resource,
                            "scope": scope_spans.scope.name,
                        })
            with lock:
                spans.extend(received)
                bodies.append(body)
                exports += 1
            answer, status = ExportTraceServiceResponse().SerializeToString(), 200
        else:
            answer, status = b"", args.status if args.status != 200 else 400
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_GET(self):
        with lock:
            body = json.dumps({"spans": spans, "exports": exports, "raw": base64.b64encode(b"".join(bodies)).decode()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(args.port_file, "w") as port_file:
    port_file.write(str(server.server_address[1]))
server.serve_forever()
