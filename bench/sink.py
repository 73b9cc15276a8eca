#!/usr/bin/env python3
"""A minimal HTTP/1.1 upstream that reads and discards request bodies (Content-Length or chunked)
and answers 200: the benchmark's upload sink. Usage: sink.py PORT"""
import socket, sys, threading

def handle(conn):
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    data = b""
    try:
        while True:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            headers = {l.split(b":", 1)[0].strip().lower(): l.split(b":", 1)[1].strip() for l in head.split(b"\r\n")[1:] if b":" in l}
            length = int(headers.get(b"content-length", b"0"))
            if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
                tail = rest
                while not tail.endswith(b"0\r\n\r\n"):
                    n = conn.recv_into(view)
                    if n == 0:
                        return
                    tail = (tail + bytes(view[:n]))[-5:]
                rest = b""
            else:
                remaining = length - len(rest)
                rest = b""
                while remaining > 0:
                    n = conn.recv_into(view, min(len(buffer), remaining))
                    if n == 0:
                        return
                    remaining -= n
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
            data = rest
    finally:
        conn.close()

server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen(128)
while True:
    connection, _ = server.accept()
    threading.Thread(target=handle, args=(connection,), daemon=True).start()
