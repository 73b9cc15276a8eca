"""An HTTP/1.1 upstream that does not read a request body until told: it accepts connections but
reads nothing until --release-file exists; then it reads each request whole (head and a
Content-Length body), counts the body's bytes and answers 200 with that count. Its receive buffer is
small, so what the proxy in front cannot hand over stays with the proxy, or with the client that
flow control holds back. Writes its port to --port-file. 127.0.0.1 only.
"""

import argparse
import os
import threading
import time

import h2peer


def serve(conn, release_file):
    while not os.path.exists(release_file):
        time.sleep(0.02)
    buffer = b""
    try:
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = conn.recv(1 << 16)
                if not chunk:
                    return
                buffer += chunk
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            received = len(buffer[:length])
            buffer = buffer[length:]
            while received < length:
                chunk = conn.recv(min(1 << 16, length - received))
                if not chunk:
                    return
                received += len(chunk)
            body = str(received).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--release-file", required=True)
    args = parser.parse_args()
    listener = h2peer.listen(args.port_file, rcvbuf=16384)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, args.release_file), daemon=True).start()


if __name__ == "__main__":
    main()
