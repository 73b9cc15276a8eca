"""An HTTP/2 upstream (the `h2` library, cleartext, prior knowledge) that refuses the first stream of
every path with RST_STREAM REFUSED_STREAM (RFC 9113 §8.7: not processed, safe to send again) and
answers any later one 200 with "<method> <path> attempt <n>". Writes its port to --port-file.
127.0.0.1 only.
"""

import threading

import h2.config
import h2.errors
import h2.events

import h2peer

attempts = {}
lock = threading.Lock()


def serve(sock):
    requests = {}

    def on_event(conn, event):
        if isinstance(event, h2.events.RequestReceived):
            headers = dict(event.headers)
            requests[event.stream_id] = (headers[":method"], headers[":path"])
            if event.stream_ended:
                answer(conn, event.stream_id, requests)
        elif isinstance(event, h2.events.DataReceived) and event.stream_ended:
            answer(conn, event.stream_id, requests)
        elif isinstance(event, h2.events.StreamEnded):
            answer(conn, event.stream_id, requests)

    h2peer.serve_h2(sock, h2.config.H2Configuration(client_side=False, header_encoding="utf-8"), on_event)


def answer(conn, stream_id, requests):
    if stream_id not in requests:
        return
    method, path = requests.pop(stream_id)
    with lock:
        attempts[path] = attempts.get(path, 0) + 1
        attempt = attempts[path]
    if attempt == 1:
        conn.reset_stream(stream_id, error_code=h2.errors.ErrorCodes.REFUSED_STREAM)
        return
    body = ("%s %s attempt %d" % (method, path, attempt)).encode()
    conn.send_headers(stream_id, [(":status", "200"), ("content-type", "text/plain"), ("content-length", str(len(body)))])
    conn.send_data(stream_id, body, end_stream=True)


if __name__ == "__main__":
    h2peer.serve_connections(serve)
