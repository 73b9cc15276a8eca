"""gRPC echo server: the upstream peer of Gatehouse's end-to-end gRPC tests.

Started by Tests/GatehouseEndToEndTests/GRPCTests.swift (via Support/PythonPeer.swift) as

    python3 echo_server.py --port-file PATH [--port N]

It serves the service `gatehouse.test.Echo` on 127.0.0.1 (insecure, raw bytes, no protobuf),
writes the bound port to PATH (atomically, through PATH.tmp) and runs until SIGTERM/SIGINT.
Methods:
  Unary         JSON {"metadata": [[k, v], ...], "request": text}, trailer x-upstream-trailer: kept
  ServerStream  request "COUNT[:INTERVAL_MS]": COUNT JSON messages {"index": i, "metadata": [...]}
                (metadata only in message 0), INTERVAL_MS apart; stops when the call ends
  ClientStream  JSON {"count": n, "bytes": total, "metadata": [...]} after the last request message
  Bidi          b"echo:" + m for every request message m, as it arrives
  Fail          FAILED_PRECONDITION "upstream says no", trailer x-upstream-trailer: kept
"""

import argparse
import base64
import json
import os
import signal
import sys
import threading
from concurrent import futures

import grpc

TRAILER = (("x-upstream-trailer", "kept"),)


def metadata_pairs(context):
    """The metadata the call arrived with, in order; binary (-bin) values as base64 text."""
    return [
        [key, base64.b64encode(value).decode() if isinstance(value, bytes) else value]
        for key, value in context.invocation_metadata()
    ]


def as_json(value):
    return json.dumps(value).encode()


def unary(request, context):
    context.set_trailing_metadata(TRAILER)
    return as_json({"metadata": metadata_pairs(context), "request": request.decode("utf-8", errors="replace")})


def server_stream(request, context):
    count, _, interval = request.decode("ascii", errors="replace").partition(":")
    count, interval = int(count), (int(interval) if interval else 0) / 1000
    ended = threading.Event()
    context.add_callback(ended.set)  # runs when the call terminates, including on cancellation
    for index in range(count):
        if not context.is_active():
            return
        yield as_json({"index": index, "metadata": metadata_pairs(context) if index == 0 else []})
        if index + 1 < count and interval and ended.wait(interval):
            return


def client_stream(request_iterator, context):
    count = total = 0
    for message in request_iterator:
        count, total = count + 1, total + len(message)
    return as_json({"count": count, "bytes": total, "metadata": metadata_pairs(context)})


def bidi(request_iterator, context):
    for message in request_iterator:
        yield b"echo:" + message


def fail(request, context):
    context.set_trailing_metadata(TRAILER)
    context.abort(grpc.StatusCode.FAILED_PRECONDITION, "upstream says no")


HANDLERS = {
    "Unary": grpc.unary_unary_rpc_method_handler(unary),
    "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream),
    "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream),
    "Bidi": grpc.stream_stream_rpc_method_handler(bidi),
    "Fail": grpc.unary_unary_rpc_method_handler(fail),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", required=True, help="where to write the bound port")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default 0: any free port)")
    args = parser.parse_args()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32), options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("gatehouse.test.Echo", HANDLERS),))
    port = server.add_insecure_port(f"127.0.0.1:{args.port}")
    if not port:
        sys.exit(f"echo_server: could not bind 127.0.0.1:{args.port}")

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    with open(args.port_file + ".tmp", "w") as file:
        file.write(f"{port}\n")
    os.replace(args.port_file + ".tmp", args.port_file)

    while not stop.wait(0.5):
        pass
    # Calls still running get 2 s, then are cancelled; a handler thread that still does not return
    # must not keep the process alive (the executor's threads are not daemons).
    server.stop(grace=2).wait(timeout=5)
    os._exit(0)


if __name__ == "__main__":
    main()
