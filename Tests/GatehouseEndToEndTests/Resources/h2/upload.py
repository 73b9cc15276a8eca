"""An HTTP/2 upload that honours flow control (the `h2` library): POSTs --size bytes on one stream,
sending only what the server's windows allow. Once the server has held it back (its window at zero
for --stall seconds, the body not all sent) or after --limit seconds, it notes how much it had sent,
creates --release-file (the slow upstream starts reading) and finishes the upload.

Prints one JSON object: whether it was held back, the bytes sent by then and in all, the response
status and body.
"""

import argparse
import json
import socket
import time

import h2.config
import h2.connection
import h2.events


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--stall", type=float, default=0.5)
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--release-file", required=True)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()

    sock = socket.create_connection(("127.0.0.1", args.port), timeout=5)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, [
        (":method", "POST"), (":scheme", "http"), (":authority", "127.0.0.1:%d" % args.port), (":path", "/v1/upload"),
        ("authorization", "Bearer " + args.token), ("content-length", str(args.size)),
    ])
    sock.sendall(conn.data_to_send())

    started = time.monotonic()
    sent = 0
    sent_at_release = None
    stalled = False
    blocked_since = None
    status = None
    body = b""
    ended = False
    chunk = b"x" * 16384
    while not ended and time.monotonic() - started < args.timeout:
        window = min(conn.local_flow_control_window(stream), conn.max_outbound_frame_size) if sent < args.size else 0
        now = time.monotonic()
        if window > 0 or sent == args.size:
            blocked_since = None
        elif blocked_since is None:
            blocked_since = now
        if sent_at_release is None:
            stalled = blocked_since is not None and now - blocked_since >= args.stall
            if stalled or now - started >= args.limit or sent == args.size:
                sent_at_release = sent
                open(args.release_file, "w").close()
        if window > 0:
            piece = chunk[:min(window, args.size - sent)]
            sent += len(piece)
            conn.send_data(stream, piece, end_stream=sent == args.size)
            sock.sendall(conn.data_to_send())
            continue
        sock.settimeout(0.05)
        try:
            data = sock.recv(1 << 16)
        except socket.timeout:
            continue
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status = int(dict(event.headers)[":status"])
            elif isinstance(event, h2.events.DataReceived):
                body += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, stream)
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                ended = True
        sock.sendall(conn.data_to_send())
    if sent_at_release is None:
        sent_at_release = sent
        open(args.release_file, "w").close()
    print(json.dumps({"stalled": stalled, "sent_at_release": sent_at_release, "sent": sent, "status": status, "body": body.decode("utf-8", "replace")}))


if __name__ == "__main__":
    main()
