"""SETTINGS or PING flood from a client that never reads: every frame obliges the server to
answer with an ACK, and the answers cannot leave. A server that queued them without bound would
grow without bound.

Prints one JSON object: how many frames went out before the server stopped taking them, and what
it had said (GOAWAY code, ACKs) once the client finally reads.
"""

import argparse
import time

import h2peer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["ping", "settings"], required=True)
    parser.add_argument("--frames", type=int, default=200000, help="hard cap on frames sent")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = h2peer.arguments(parser)

    # A small receive buffer: the ACKs back up in the server, not in this kernel.
    peer = h2peer.Peer(args.port, timeout=3.0, rcvbuf=4096)
    peer.start()
    if args.kind == "ping":
        one = h2peer.ping(b"floodflo")
    else:
        one = h2peer.settings([(h2peer.SETTINGS_HEADER_TABLE_SIZE, 4096), (h2peer.SETTINGS_INITIAL_WINDOW_SIZE, 65535)])
    sent = 0
    deadline = time.monotonic() + args.seconds
    while sent < args.frames and time.monotonic() < deadline:
        count = min(args.batch, args.frames - sent)
        if not peer.send(one * count):
            break
        sent += count
    peer.finish(args.hold_file, 4.0, lambda: {
        "kind": args.kind,
        "frames_sent": sent,
        "ping_acks": peer.ping_acks,
        "settings_acks": peer.settings_acks,
    })


if __name__ == "__main__":
    main()
