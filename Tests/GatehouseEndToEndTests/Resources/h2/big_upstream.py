"""An HTTP/1.1 upstream on 127.0.0.1 whose answers under /big are large (`--size` bytes, sent in
64 KiB writes as fast as the reader takes them): the zero-window test needs a response that cannot
fit in any buffer on the way. Any other path gets a small JSON echo of the path and X-Auth-Subject. Writes its port to `--port-file`; exits after `--lifetime` seconds in
any case.
"""

import argparse
import json
import os
import socketserver
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = b"z" * 65536


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--size", type=int, default=64 << 20)
    parser.add_argument("--lifetime", type=float, default=120.0)
    args = parser.parse_args()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30

        def do_GET(self):
            if not self.path.startswith("/big"):
                # Anything else: a small JSON echo of the path and the identity the upstream was given.
                body = json.dumps({"uri": self.path, "x-auth-subject": self.headers.get("X-Auth-Subject")}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Upstream", "big")
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(args.size))
            self.send_header("X-Upstream", "big")
            self.end_headers()
            remaining = args.size
            try:
                while remaining > 0:
                    piece = CHUNK if remaining >= len(CHUNK) else CHUNK[:remaining]
                    self.wfile.write(piece)
                    remaining -= len(piece)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, OSError):
                self.close_connection = True

        def log_message(self, format, *arguments):  # noqa: A002 - the base class's name
            sys.stderr.write("big_upstream: " + (format % arguments) + "\n")

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", 0), Handler)
    temporary = args.port_file + ".tmp"
    with open(temporary, "w") as handle:
        handle.write(str(server.server_address[1]))
    os.replace(temporary, args.port_file)
    threading.Timer(args.lifetime, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
