"""An HTTP/1.1 upstream that records every request byte for byte: the head as it arrived, and the body
as its framing delivered it (Content-Length, or chunked, de-chunked). Each request is one JSON line
appended to --record: {"head": the head's bytes as Latin-1 text, "body": the body likewise,
"framing": "length" | "chunked" | "none" | "unreadable"}. Every request is answered 200 "ok" and the
connection kept, so a proxy's pooled connections are used as they would be. Only 127.0.0.1.

Used on its own (--port-file: the tests' helper-server protocol) or imported (serve()).
"""

import argparse
import json
import socket
import threading

import h2peer


def read_until(conn, buffer, marker):
    while marker not in buffer:
        chunk = conn.recv(65536)
        if not chunk:
            return None, buffer
        buffer += chunk
    index = buffer.index(marker) + len(marker)
    return buffer[:index], buffer[index:]


def read_exactly(conn, buffer, count):
    while len(buffer) < count:
        chunk = conn.recv(65536)
        if not chunk:
            return None, buffer
        buffer += chunk
    return buffer[:count], buffer[count:]


def fields(head):
    lines = head.split(b"\r\n")[1:]
    return [(line.split(b":", 1)[0].strip().lower(), line.split(b":", 1)[1].strip()) for line in lines if b":" in line]


def read_body(conn, buffer, head):
    named = fields(head)
    codings = [value.lower() for name, value in named if name == b"transfer-encoding"]
    lengths = [value for name, value in named if name == b"content-length"]
    if codings:
        if codings != [b"chunked"]:
            return "unreadable", b"", None
        body = b""
        while True:
            line, buffer = read_until(conn, buffer, b"\r\n")
            if line is None:
                return "unreadable", body, None
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                _, buffer = read_until(conn, buffer, b"\r\n")  # no trailers expected from these tests
                return "chunked", body, buffer
            data, buffer = read_exactly(conn, buffer, size + 2)
            if data is None:
                return "unreadable", body, None
            body += data[:-2]
    if lengths:
        if len(lengths) != 1 or not lengths[0].isdigit():
            return "unreadable", b"", None
        data, buffer = read_exactly(conn, buffer, int(lengths[0]))
        return ("length", data, buffer) if data is not None else ("unreadable", b"", None)
    return "none", b"", buffer


def handle(conn, record_path, lock):
    buffer = b""
    with conn:
        conn.settimeout(30)
        while True:
            try:
                head, buffer = read_until(conn, buffer, b"\r\n\r\n")
                if head is None:
                    return
                framing, body, buffer = read_body(conn, buffer, head)
            except (OSError, ValueError):
                return
            with lock, open(record_path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"head": head.decode("latin-1"), "body": body.decode("latin-1"), "framing": framing}) + "\n")
            if buffer is None:
                return
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok")
            except OSError:
                return


def serve(listener, record_path):
    """Accepts for ever (a daemon thread per connection)."""
    lock = threading.Lock()
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=handle, args=(conn, record_path, lock), daemon=True).start()


def listen_any():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((h2peer.HOST, 0))
    listener.listen(64)
    return listener


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--lifetime", type=float, default=300)
    args = parser.parse_args()
    listener = h2peer.listen(args.port_file)
    threading.Thread(target=serve, args=(listener, args.record), daemon=True).start()
    threading.Event().wait(args.lifetime)


if __name__ == "__main__":
    main()
