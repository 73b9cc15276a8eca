"""An HTTP/2 upstream (the `h2` library, cleartext, prior knowledge, its own header validation off) whose answers
break RFC 9113 §8.2.1 on purpose, by path:

  /crlf          a response field whose value holds CR LF and a second field (response splitting over HTTP/1.1)
  /nul           a value holding NUL
  /upper         an upper-case field name
  /space-name    a field name holding a space
  /lead-space    a value starting with a space
  /status-late   a regular field before :status
  /switching     101 (HTTP/2 has none, RFC 9113 §8.6), the stream left open
  /trailer-crlf  a sound head and body, then trailers whose value holds CR LF
  /then-reset    200 "ok" with x-connection (which accepted connection answered, from 1) as soon as the head has
                 come, then RST_STREAM NO_ERROR when the request's body is still coming (a server that answers
                 without reading the body, as nginx's `return` does)
  anything else  200 "ok"

Writes its port to --port-file. 127.0.0.1 only.
"""


import threading

import h2.config
import h2.errors
import h2.events

import h2peer

HEADS = {
    "/crlf": [(":status", "200"), ("x-injected", "a\r\nset-cookie: evil=1")],
    "/nul": [(":status", "200"), ("x-nul", "a\x00b")],
    "/upper": [(":status", "200"), ("X-Upper", "v")],
    "/space-name": [(":status", "200"), ("bad name", "v")],
    "/lead-space": [(":status", "200"), ("x-lead", " v")],
    "/status-late": [("x-first", "v"), (":status", "200")],
}


connections = 0
lock = threading.Lock()


def serve(sock):
    global connections
    with lock:
        connections += 1
        number = connections

    def on_event(conn, event):
        if not isinstance(event, h2.events.RequestReceived):
            return
        path = dict(event.headers)[":path"]
        if path != "/then-reset":
            answer(conn, event.stream_id, path)
            return
        conn.send_headers(event.stream_id, [(":status", "200"), ("x-connection", str(number))])
        conn.send_data(event.stream_id, b"ok", end_stream=True)
        if event.stream_ended is None:
            conn.reset_stream(event.stream_id, error_code=h2.errors.ErrorCodes.NO_ERROR)

    config = h2.config.H2Configuration(
        client_side=False, header_encoding="utf-8", validate_outbound_headers=False, normalize_outbound_headers=False,
        validate_inbound_headers=False)
    h2peer.serve_h2(sock, config, on_event)


def answer(conn, stream_id, path):
    if path in HEADS:
        conn.send_headers(stream_id, HEADS[path], end_stream=True)
    elif path == "/switching":
        conn.send_headers(stream_id, [(":status", "101")])
    elif path == "/trailer-crlf":
        conn.send_headers(stream_id, [(":status", "200"), ("content-type", "text/plain")])
        conn.send_data(stream_id, b"body")
        conn.send_headers(stream_id, [("x-trailer", "a\r\nset-cookie: evil=1")], end_stream=True)
    else:
        conn.send_headers(stream_id, [(":status", "200"), ("content-length", "2")])
        conn.send_data(stream_id, b"ok", end_stream=True)


if __name__ == "__main__":
    h2peer.serve_connections(serve)
