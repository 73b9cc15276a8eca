"""Requests no well-behaved HTTP/2 client would send, one stream after the other on one connection:
each request's header block is sent exactly as planned (pseudo-header fields included, nothing added),
then its body and its trailer section if it has them.

--plan is a JSON list of {"name", "headers": [[name, value], ...], "body": str (optional),
"trailers": [[name, value], ...] (optional)}. Names and values are sent as the UTF-8 of the
strings given, so "\\u0001" is the byte 0x01.

Prints one JSON object: for each request its status, response headers, body and RST_STREAM code,
and the connection's fate.
"""

import argparse
import json

import h2peer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", required=True)
    args = h2peer.arguments(parser)
    plan = json.loads(args.plan)

    peer = h2peer.Peer(args.port)
    peer.start()
    peer.acknowledge_settings()
    bodies = {}
    original_handle = peer._handle

    def handle(kind, flags, stream_id, payload):
        if kind == h2peer.DATA:
            data = payload[1:len(payload) - payload[0]] if flags & 0x8 and payload else payload
            bodies[stream_id] = bodies.get(stream_id, b"") + data
        original_handle(kind, flags, stream_id, payload)

    peer._handle = handle
    results = {}
    for index, request in enumerate(plan):
        stream = 1 + 2 * index
        headers = [(name, value) for name, value in request["headers"]]
        body = request.get("body")
        trailers = request.get("trailers")
        ends_with_headers = body is None and trailers is None
        frames = peer.headers_frame(stream, headers, end_stream=ends_with_headers)
        if body is not None:
            frames += h2peer.frame(h2peer.DATA, h2peer.END_STREAM if trailers is None else 0, stream, body.encode())
        if trailers is not None:
            frames += peer.headers_frame(stream, [(name, value) for name, value in trailers], end_stream=True)
        peer.send(frames)
        peer.wait(lambda: stream in peer.ended or stream in peer.rsts, 5.0)
        results[request["name"]] = {
            "status": peer.statuses.get(stream),
            "headers": [[name, value] for name, value in peer.response_headers.get(stream, []) if not name.startswith(":")],
            "body": bodies.get(stream, b"").decode("utf-8", "replace"),
            "ended": stream in peer.ended,
            "rst_code": peer.rsts.get(stream),
        }
    result = peer.summary()
    result["requests"] = results
    peer.close()
    h2peer.report(result)


if __name__ == "__main__":
    main()
