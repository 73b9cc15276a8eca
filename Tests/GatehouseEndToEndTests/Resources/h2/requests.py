"""Requests no well-behaved HTTP/2 client would send, one stream after the other on one connection:
each request's header block is sent exactly as planned (pseudo-header fields included, nothing added),
then its body and its trailer section if it has them.

--plan is a JSON list (or @FILE holding it) of {"name", "headers": [[name, value], ...], "body": str (optional),
"trailers": [[name, value], ...] (optional), "latin1": true (optional), "open": true (optional: no
END_STREAM on its last frame, nothing more)}. Names and values are
sent as the UTF-8 of the strings given, so "\\u0001" is the byte 0x01; with "latin1" the values are
sent as Latin-1 instead, so "\\u00e9" is the single byte 0xE9 (bytes that are not UTF-8). A header
block larger than 16 KiB goes as HEADERS and CONTINUATION frames.

Prints one JSON object: for each request its status, response headers, body and RST_STREAM code,
and the connection's fate (a GOAWAY ends the plan).
"""

import argparse
import json

import h2peer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", required=True)
    args = h2peer.arguments(parser)
    if args.plan.startswith("@"):
        with open(args.plan[1:]) as handle:
            plan = json.load(handle)
    else:
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
        encoding = "latin-1" if request.get("latin1") else "utf-8"
        headers = [(name.encode(), value.encode(encoding)) for name, value in request["headers"]]
        body = request.get("body")
        trailers = request.get("trailers")
        # "open": true leaves the stream open after its HEADERS or its body (a caller that stalls mid-request).
        stays_open = bool(request.get("open"))
        ends_with_headers = body is None and trailers is None and not stays_open
        frames = h2peer.headers_frames(peer, stream, headers, end_stream=ends_with_headers)
        if body is not None:
            ends_with_body = trailers is None and not stays_open
            frames += h2peer.frame(h2peer.DATA, h2peer.END_STREAM if ends_with_body else 0, stream, body.encode())
        if trailers is not None:
            frames += h2peer.headers_frames(peer, stream, [(n.encode(), v.encode(encoding)) for n, v in trailers], end_stream=True)
        if peer.goaway is not None or peer.closed:
            results[request["name"]] = {"status": None, "headers": [], "body": "", "ended": False, "rst_code": None, "sent": False}
            continue
        peer.send(frames)
        peer.wait(lambda: stream in peer.ended or stream in peer.rsts or peer.goaway is not None, 5.0)
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
