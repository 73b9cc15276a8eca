"""An HTTP/2 upstream (the `h2` library, cleartext, prior knowledge) that refuses the first stream of
every path with RST_STREAM REFUSED_STREAM (RFC 9113 §8.7: not processed, safe to send again) and
answers any later one 200 with "<method> <path> attempt <n>". Writes its port to --port-file.
127.0.0.1 only.
"""

import threading

import h2.config
import h2.connection
import h2.errors
import h2.events

import h2peer

attempts = {}
lock = threading.Lock()


def serve(sock):
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    requests = {}
    try:
        while True:
            data = sock.recv(1 << 16)
            if not data:
                return
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    headers = dict(event.headers)
                    requests[event.stream_id] = (headers[":method"], headers[":path"])
                    if event.stream_ended:
                        answer(conn, event.stream_id, requests)
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if event.stream_ended:
                        answer(conn, event.stream_id, requests)
                elif isinstance(event, h2.events.StreamEnded):
                    answer(conn, event.stream_id, requests)
            sock.sendall(conn.data_to_send())
    except (ConnectionError, OSError):
        return
    finally:
        sock.close()


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
