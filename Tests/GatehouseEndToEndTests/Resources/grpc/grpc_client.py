"""gRPC test client: the caller in Gatehouse's end-to-end gRPC tests.

Run by Tests/GatehouseEndToEndTests/GRPCTests.swift (via Support/PythonPeer.swift) as

    python3 grpc_client.py --target 127.0.0.1:PORT CALL [options]

CALL is one of unary, server-stream, client-stream, bidi, fail (methods of the
`gatehouse.test.Echo` service of echo_server.py; raw bytes, no protobuf). It makes one call and
prints exactly one JSON object on stdout:

    {"code": "OK" | grpc.StatusCode name, "details": str | null,
     "initial_metadata": [[k, v], ...], "trailing_metadata": [[k, v], ...],
     "responses": [every response message received, as UTF-8 text], "elapsed_ms": float}

It exits 0 whenever the call completed, whatever its status; 2 for usage errors and unexpected
exceptions (traceback on stderr).
"""

import argparse
import base64
import json
import sys
import time
import traceback

import grpc

SERVICE = "/gatehouse.test.Echo/"
METHODS = {  # CALL: (method, kind)
    "unary": ("Unary", "unary_unary"),
    "server-stream": ("ServerStream", "unary_stream"),
    "client-stream": ("ClientStream", "stream_unary"),
    "bidi": ("Bidi", "stream_stream"),
    "fail": ("Fail", "unary_unary"),
}


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="HOST:PORT to call, e.g. 127.0.0.1:8443")
    parser.add_argument("call", choices=METHODS)
    parser.add_argument("--token", help='send authorization: "Bearer TOKEN"')
    parser.add_argument("--metadata", action="append", default=[], metavar="K=V", help="extra metadata (repeatable)")
    parser.add_argument("--request", default="hello", help="unary/server-stream payload (server-stream: COUNT[:MS])")
    parser.add_argument("--messages", type=int, default=3, help="client-stream/bidi message count")
    parser.add_argument("--message-bytes", type=int, default=16, help="size of each client-stream/bidi message")
    parser.add_argument("--interval-ms", type=float, default=0, help="pause between sent messages")
    parser.add_argument("--timeout", type=float, default=10, help="call deadline in seconds")
    parser.add_argument("--tls-ca", help="root CA PEM: use TLS")
    parser.add_argument("--tls-name", help="TLS name to expect (ssl_target_name_override)")
    args = parser.parse_args()
    for item in args.metadata:
        if "=" not in item:
            parser.error(f"--metadata wants K=V, got {item!r}")
    return args


def pairs(metadata):
    """Metadata as [[k, v], ...]; binary (-bin) values as base64 text."""
    return [
        [key, base64.b64encode(value).decode() if isinstance(value, bytes) else value]
        for key, value in (metadata or ())
    ]


def open_channel(args):
    options = [("grpc.enable_http_proxy", 0)]
    if not args.tls_ca:
        return grpc.insecure_channel(args.target, options=options)
    with open(args.tls_ca, "rb") as file:
        credentials = grpc.ssl_channel_credentials(root_certificates=file.read())
    if args.tls_name:
        options.append(("grpc.ssl_target_name_override", args.tls_name))
    return grpc.secure_channel(args.target, credentials, options=options)


def outgoing(args):
    """The client-stream/bidi request messages: b"m<i>-" padded with "x", paced by --interval-ms."""
    for index in range(args.messages):
        if index and args.interval_ms:
            time.sleep(args.interval_ms / 1000)
        yield f"m{index}-".encode().ljust(args.message_bytes, b"x")


def make_call(args, channel, metadata):
    """Makes the call; returns (grpc.Call, [response bytes]); a failed call is returned, not raised."""
    method, kind = METHODS[args.call]
    stub = getattr(channel, kind)(SERVICE + method)
    request = args.request.encode() if kind.startswith("unary") else outgoing(args)
    responses = []
    if kind.endswith("_unary"):
        try:
            response, call = stub.with_call(request, metadata=metadata, timeout=args.timeout)
            responses.append(response)
        except grpc.RpcError as error:  # the error is the call
            call = error
    else:
        call = stub(request, metadata=metadata, timeout=args.timeout)
        try:
            for response in call:
                responses.append(response)
        except grpc.RpcError:
            pass  # the call object knows the status
    return call, responses


def main():
    args = parse_arguments()
    metadata = [tuple(item.split("=", 1)) for item in args.metadata]
    if args.token is not None:
        metadata.insert(0, ("authorization", f"Bearer {args.token}"))
    try:
        with open_channel(args) as channel:
            started = time.monotonic()
            call, responses = make_call(args, channel, metadata)
            elapsed_ms = (time.monotonic() - started) * 1000
            result = {
                "code": call.code().name,
                "details": call.details(),
                "initial_metadata": pairs(call.initial_metadata()),
                "trailing_metadata": pairs(call.trailing_metadata()),
                "responses": [response.decode("utf-8", errors="replace") for response in responses],
                "elapsed_ms": round(elapsed_ms, 3),
            }
    except Exception:
        traceback.print_exc()
        sys.exit(2)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
