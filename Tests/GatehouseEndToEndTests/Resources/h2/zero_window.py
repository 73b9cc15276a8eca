"""Zero-window stall: the client announces SETTINGS_INITIAL_WINDOW_SIZE = 0, asks for responses
with a valid token, and never opens a window (no WINDOW_UPDATE, ever). It reads everything the
server sends, so only flow control holds the responses back: the server must give up on these
streams on its own (RST_STREAM after its idle timeout) rather than hold them, and what they
buffer, for ever.

Prints one JSON object: per stream the status, DATA bytes received and when (if) it was reset.
"""

import argparse
import time

import h2peer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", default=None)
    parser.add_argument("--path", default="/v1/stall")
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--hold", type=float, default=8.0, help="how long the client waits, at most")
    parser.add_argument("--stall", type=float, default=0.5, help="when the stall is measured (--hold-file)")
    args = h2peer.arguments(parser)

    peer = h2peer.Peer(args.port, open_windows=False)
    peer.start([(h2peer.SETTINGS_INITIAL_WINDOW_SIZE, 0)])
    # A well-behaved client otherwise: it acknowledges the server's SETTINGS.
    peer.acknowledge_settings()
    streams = [1 + 2 * index for index in range(min(args.streams, 50))]
    sent_at = time.monotonic()
    burst = b"".join(
        peer.headers_frame(stream, h2peer.request_headers(args.port, "%s/%d" % (args.path, stream), token=args.token))
        for stream in streams)
    peer.send(burst)

    def settled():
        return all(stream in peer.rsts or stream in peer.ended for stream in streams)

    # The stall builds up (the upstream answers, nothing leaves): measured then, before any reset.
    peer.wait(settled, args.stall)
    h2peer.hold(args.hold_file)
    peer.wait(settled, max(0.0, args.hold - (time.monotonic() - sent_at)))
    settled_after = time.monotonic() - sent_at
    result = peer.summary()
    result.update({
        "streams": len(streams),
        "statuses": [peer.statuses.get(stream) for stream in streams],
        "data_bytes": sum(peer.data_bytes.get(stream, 0) for stream in streams),
        "rst_codes": [peer.rsts.get(stream) for stream in streams],
        "reset_after": [round(peer.rst_at[stream] - sent_at, 3) if stream in peer.rst_at else None for stream in streams],
        "ended": sum(1 for stream in streams if stream in peer.ended),
        "all_reset": all(stream in peer.rsts for stream in streams),
        "settled_after": round(settled_after, 3),
    })
    peer.close()
    h2peer.report(result)


if __name__ == "__main__":
    main()
