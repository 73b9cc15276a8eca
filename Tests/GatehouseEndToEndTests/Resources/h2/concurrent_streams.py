"""More streams than SETTINGS_MAX_CONCURRENT_STREAMS: the client acknowledges the server's
SETTINGS (so the limit is in force), opens `--streams` requests whose bodies stay open (so every
stream stays open), waits for the server to refuse the excess, then ends the bodies of the first
streams (up to the limit) and reads their responses.

Prints one JSON object: how the excess was refused (RST_STREAM codes, GOAWAY) and the statuses of
the first streams.
"""

import argparse
import time

import h2peer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", default=None)
    parser.add_argument("--streams", type=int, default=110)
    parser.add_argument("--seconds", type=float, default=12.0)
    args = h2peer.arguments(parser)
    count = min(args.streams, 400)

    peer = h2peer.Peer(args.port)
    peer.start()
    peer.wait(lambda: h2peer.SETTINGS_MAX_CONCURRENT_STREAMS in peer.server_settings, 3.0)
    advertised = peer.server_settings.get(h2peer.SETTINGS_MAX_CONCURRENT_STREAMS)
    peer.send(h2peer.settings(ack=True))
    streams = [1 + 2 * index for index in range(count)]
    burst = b"".join(
        peer.headers_frame(
            stream,
            h2peer.request_headers(args.port, "/v1/streams/%d" % stream, method="POST", token=args.token),
            end_stream=False)
        for stream in streams)
    peer.send(burst)
    limit = advertised if advertised is not None else count
    first, excess = streams[:limit], streams[limit:]
    # The excess is refused at once (RST_STREAM, or a GOAWAY for the connection); wait for that.
    peer.wait(lambda: peer.goaway is not None or all(stream in peer.rsts for stream in excess), 2.0)
    # Now finish the first requests (one byte of body each) and read the answers.
    live = [stream for stream in first if stream not in peer.rsts]
    peer.send(b"".join(h2peer.frame(h2peer.DATA, h2peer.END_STREAM, stream, b"x") for stream in live))
    deadline = time.monotonic() + args.seconds
    peer.wait(lambda: all(stream in peer.ended or stream in peer.rsts for stream in live),
              max(0.1, deadline - time.monotonic()))
    # A connection that was told GOAWAY for an error should then be closed.
    if peer.goaway is not None:
        peer.wait_closed(min(3.0, max(0.1, deadline - time.monotonic())))
    first_statuses = [peer.statuses.get(stream) for stream in first]
    result = peer.summary()
    result.update({
        "opened": count,
        "advertised_max_concurrent_streams": advertised,
        "first": len(first),
        "first_ok": sum(1 for status in first_statuses if status == 200),
        "first_statuses": sorted({status for status in first_statuses if status is not None}),
        "first_reset": sum(1 for stream in first if stream in peer.rsts),
        "excess": len(excess),
        "excess_rst_codes": [peer.rsts.get(stream) for stream in excess],
        "excess_answered": sum(1 for stream in excess if stream in peer.statuses),
    })
    peer.close()
    h2peer.report(result)


if __name__ == "__main__":
    main()
