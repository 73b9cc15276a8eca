"""An HTTP/2 upstream (the `h2` library, cleartext, prior knowledge) that floods Gatehouse's upstream connection
when asked: a request for /flood/ping sends 1 000 PINGs, /flood/settings 1 000 SETTINGS frames, /flood/empty-data
a 200 head then empty DATA frames without END_STREAM, and never answers the request itself. Any other path is
answered 200 with what the last flooded connection ended with: "goaway <code>" when Gatehouse sent a GOAWAY,
"closed" when it only closed, "open" when it did neither. Writes its port to --port-file. 127.0.0.1 only.
"""

import threading

import h2.config
import h2.events
import h2.settings

import h2peer

lock = threading.Lock()
last_flood = {"ending": "none"}


def serve(sock):
    flooded = {"yes": False}

    def on_event(conn, event):
        if isinstance(event, h2.events.ConnectionTerminated) and flooded["yes"]:
            with lock:
                last_flood["ending"] = "goaway %d" % int(event.error_code)
        if not isinstance(event, h2.events.RequestReceived):
            return
        path = dict(event.headers)[":path"]
        if path.startswith("/flood/"):
            flooded["yes"] = True
            with lock:
                last_flood["ending"] = "open"
            flood(conn, event.stream_id, path[len("/flood/"):])
            return
        with lock:
            body = last_flood["ending"].encode()
        conn.send_headers(event.stream_id, [(":status", "200"), ("content-length", str(len(body)))])
        conn.send_data(event.stream_id, body, end_stream=True)

    try:
        h2peer.serve_h2(sock, h2.config.H2Configuration(client_side=False, header_encoding="utf-8"), on_event)
    finally:
        with lock:
            if flooded["yes"] and last_flood["ending"] == "open":
                last_flood["ending"] = "closed"


def flood(conn, stream_id, kind):
    if kind == "ping":
        for index in range(1000):
            conn.ping(index.to_bytes(8, "big"))
    elif kind == "settings":
        for _ in range(1000):
            conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100})
    elif kind == "empty-data":
        conn.send_headers(stream_id, [(":status", "200")])
        for _ in range(1000):
            conn.send_data(stream_id, b"")


if __name__ == "__main__":
    h2peer.serve_connections(serve)
