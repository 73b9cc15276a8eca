"""Raw HTTP/2 framing for the attack scripts of GatehouseEndToEndTests (HTTP2AttackTests.swift).

The scripts build frames by hand (an attacker does not ask a library's permission): this module
writes frames, encodes header blocks with the `hpack` package that comes with `h2`, and reads
what the server sends back, frame by frame, remembering GOAWAY, RST_STREAM, response headers,
DATA and whether the server closed the socket. Every socket operation has a timeout; only
127.0.0.1 is ever contacted.
"""

import argparse
import errno
import json
import os
import select
import socket
import struct
import sys
import threading
import time

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM = 0x1
ACK = 0x1
END_HEADERS = 0x4

SETTINGS_HEADER_TABLE_SIZE = 0x1
SETTINGS_ENABLE_PUSH = 0x2
SETTINGS_MAX_CONCURRENT_STREAMS = 0x3
SETTINGS_INITIAL_WINDOW_SIZE = 0x4
SETTINGS_MAX_FRAME_SIZE = 0x5
SETTINGS_MAX_HEADER_LIST_SIZE = 0x6

ERROR_NAMES = {
    0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR", 4: "SETTINGS_TIMEOUT",
    5: "STREAM_CLOSED", 6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL", 9: "COMPRESSION_ERROR",
    10: "CONNECT_ERROR", 11: "ENHANCE_YOUR_CALM", 12: "INADEQUATE_SECURITY", 13: "HTTP_1_1_REQUIRED",
}

HOST = "127.0.0.1"


def listen(port_file, rcvbuf=None):
    """A listening socket on 127.0.0.1, an ephemeral port, written to port_file once it listens (the
    helper servers of the tests: PythonPeer.startServer waits for that file)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if rcvbuf:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # inherited by accepted sockets
    listener.bind((HOST, 0))
    listener.listen(16)
    with open(port_file + ".tmp", "w") as handle:
        handle.write(str(listener.getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    return listener


def serve_connections(serve):
    """The main of a helper server: --port-file (see listen), then every connection accepted is served by
    serve(sock) on a thread of its own, until the process is stopped."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    listener = listen(args.port_file)
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=serve, args=(sock,), daemon=True).start()


def serve_h2(sock, config, on_event):
    """Serves one connection with the h2 library (config: its H2Configuration, server side): every event of what
    arrives goes to on_event(conn, event), DATA acknowledged first; what the connection has to send goes out after
    each read. Returns once the peer has gone."""
    import h2.connection
    import h2.events

    conn = h2.connection.H2Connection(config=config)
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    try:
        while True:
            data = sock.recv(1 << 16)
            if not data:
                return
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                on_event(conn, event)
            sock.sendall(conn.data_to_send())
    except (ConnectionError, OSError):
        return
    finally:
        sock.close()


def frame(kind, flags, stream_id, payload=b""):
    return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", kind, flags, stream_id & 0x7FFFFFFF) + payload


def settings(pairs=(), ack=False):
    return frame(SETTINGS, ACK if ack else 0, 0, b"".join(struct.pack(">HI", key, value) for key, value in pairs))


def rst_stream(stream_id, code=8):
    return frame(RST_STREAM, 0, stream_id, struct.pack(">I", code))


def ping(data=b"\0" * 8, ack=False):
    return frame(PING, ACK if ack else 0, 0, data)


def window_update(stream_id, increment):
    return frame(WINDOW_UPDATE, 0, stream_id, struct.pack(">I", increment))


MAX_FRAME = 16384


def headers_frames(peer, stream_id, headers, end_stream):
    """A header block as HEADERS then CONTINUATION frames of at most MAX_FRAME bytes (the default
    SETTINGS_MAX_FRAME_SIZE), exactly as encoded: nothing added, nothing validated."""
    block = peer.header_block(headers)
    pieces = [block[i:i + MAX_FRAME] for i in range(0, len(block), MAX_FRAME)] or [b""]
    frames = b""
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        flags = (END_HEADERS if last else 0) | (END_STREAM if end_stream and index == 0 else 0)
        frames += frame(HEADERS if index == 0 else CONTINUATION, flags, stream_id, piece)
    return frames


def request_headers(port, path="/v1/orders", method="GET", token=None, extra=()):
    headers = [(":method", method), (":scheme", "http"), (":authority", "%s:%d" % (HOST, port)), (":path", path)]
    if token:
        headers.append(("authorization", "Bearer " + token))
    headers.extend(extra)
    return headers


class Peer:
    """One client connection and everything the server sent on it."""

    def __init__(self, port, timeout=5.0, rcvbuf=None, open_windows=True):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            # A client that never reads: keep the kernel from soaking up what the server writes.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect((HOST, port))
        self.port = port
        # A normal client gives back the window its DATA used (connection and stream); the
        # zero-window attacker does not.
        self.open_windows = open_windows
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.decoder.max_header_list_size = 1 << 20
        self.buffer = b""
        self.closed = False
        self.reset_by_peer = False
        self.send_failed = False
        self.goaway = None  # (last_stream_id, error_code)
        self.goaway_at = None
        self.goaways = 0  # GOAWAY frames received (a server that keeps talking sends more than one)
        self.rsts = {}  # stream -> error code
        self.rst_at = {}  # stream -> time.monotonic()
        self.statuses = {}  # stream -> :status
        self.response_headers = {}  # stream -> [(name, value)]
        self.data_bytes = {}  # stream -> bytes
        self.ended = set()  # streams the server ended (END_STREAM)
        self.settings_acks = 0
        self.ping_acks = 0
        self.pings = 0
        self.closed_at = None
        self.frames_received = 0
        self.server_settings = {}
        self.window_updates = 0
        self.started = time.monotonic()

    # -- sending

    def send(self, data):
        """Sends all of data; False (and `send_failed`) once the server has closed or reset."""
        if self.send_failed:
            return False
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
            self.send_failed = True
            return False

    def start(self, pairs=()):
        sent = self.send(PREFACE + settings(pairs))
        announce_start()
        return sent

    def acknowledge_settings(self, timeout=3.0):
        """Waits for the server's SETTINGS and acknowledges them, as any client does: only then
        are the server's own limits (SETTINGS_MAX_HEADER_LIST_SIZE, SETTINGS_MAX_CONCURRENT_STREAMS)
        in force, rather than the protocol's defaults."""
        self.wait(lambda: bool(self.server_settings), timeout)
        return self.send(settings(ack=True))

    def header_block(self, headers):
        return self.encoder.encode(headers)

    def headers_frame(self, stream_id, headers, end_stream=True):
        flags = END_HEADERS | (END_STREAM if end_stream else 0)
        return frame(HEADERS, flags, stream_id, self.header_block(headers))

    # -- receiving

    def poll(self, timeout=0.0):
        """Reads what is available (waiting at most `timeout`) and parses it; False once closed."""
        if self.closed:
            return False
        deadline = time.monotonic() + timeout
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                readable, _, _ = select.select([self.sock], [], [], remaining)
            except (OSError, ValueError):
                self.closed = True
                return False
            if not readable:
                return True
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                self.closed = True
                self.closed_at = time.monotonic()
                self.reset_by_peer = True
                return False
            except socket.timeout:
                return True
            except OSError as error:
                self.closed = True
                self.closed_at = time.monotonic()
                self.reset_by_peer = error.errno == errno.ECONNRESET
                return False
            if not chunk:
                self.closed = True
                self.closed_at = time.monotonic()
                return False
            self.buffer += chunk
            self._parse()
            # Keep draining what is already there, without waiting again.
            deadline = time.monotonic()

    def wait(self, predicate, timeout):
        """Polls until predicate() holds, the connection closes, or timeout; returns predicate()."""
        deadline = time.monotonic() + timeout
        while not predicate() and not self.closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self.poll(min(remaining, 0.1))
        return predicate()

    def wait_closed(self, timeout):
        return self.wait(lambda: self.closed, timeout)

    def _parse(self):
        offset = 0
        buffer = self.buffer
        while len(buffer) - offset >= 9:
            length = int.from_bytes(buffer[offset:offset + 3], "big")
            if len(buffer) - offset < 9 + length:
                break
            kind, flags = buffer[offset + 3], buffer[offset + 4]
            stream_id = int.from_bytes(buffer[offset + 5:offset + 9], "big") & 0x7FFFFFFF
            payload = buffer[offset + 9:offset + 9 + length]
            offset += 9 + length
            self.frames_received += 1
            self._handle(kind, flags, stream_id, payload)
        self.buffer = buffer[offset:]

    def _handle(self, kind, flags, stream_id, payload):
        now = time.monotonic()
        if kind == GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            if self.goaway is None:
                self.goaway_at = now
            self.goaways += 1
            self.goaway = (last & 0x7FFFFFFF, code)
        elif kind == RST_STREAM:
            self.rsts[stream_id] = struct.unpack(">I", payload[:4])[0]
            self.rst_at[stream_id] = now
        elif kind == SETTINGS:
            if flags & ACK:
                self.settings_acks += 1
            else:
                for offset in range(0, len(payload) - 5, 6):
                    key, value = struct.unpack(">HI", payload[offset:offset + 6])
                    self.server_settings[key] = value
        elif kind == PING:
            if flags & ACK:
                self.ping_acks += 1
            else:
                self.pings += 1  # never answered here: a script that wants to answer does it itself
        elif kind == WINDOW_UPDATE:
            self.window_updates += 1
        elif kind in (HEADERS, CONTINUATION):
            block = payload
            if kind == HEADERS:
                offset = 0
                pad = 0
                if flags & 0x8:
                    pad = block[0]
                    offset = 1
                if flags & 0x20:
                    offset += 5
                block = block[offset:len(block) - pad]
            try:
                decoded = self.decoder.decode(block, raw=False)
            except Exception:  # noqa: BLE001 - what the server sent is only reported
                decoded = []
            self.response_headers.setdefault(stream_id, []).extend(decoded)
            for name, value in decoded:
                if name == ":status" and stream_id not in self.statuses:
                    self.statuses[stream_id] = int(value)
            if flags & END_STREAM:
                self.ended.add(stream_id)
        elif kind == DATA:
            pad = payload[0] + 1 if flags & 0x8 and payload else 0
            self.data_bytes[stream_id] = self.data_bytes.get(stream_id, 0) + len(payload) - pad
            if self.open_windows and payload:
                self.send(window_update(0, len(payload)) + window_update(stream_id, len(payload)))
            if flags & END_STREAM:
                self.ended.add(stream_id)

    def header(self, stream_id, name):
        for key, value in self.response_headers.get(stream_id, []):
            if key == name:
                return value
        return None

    # -- reporting

    def summary(self):
        goaway_code = self.goaway[1] if self.goaway else None
        return {
            "goaway": self.goaway is not None,
            "error_code": goaway_code,
            "error_name": ERROR_NAMES.get(goaway_code) if goaway_code is not None else None,
            "goaway_last_stream": self.goaway[0] if self.goaway else None,
            "goaways": self.goaways,
            "goaway_after": round(self.goaway_at - self.started, 3) if self.goaway_at else None,
            "closed": self.closed,
            "closed_after": round(self.closed_at - self.started, 3) if self.closed_at else None,
            "reset_by_peer": self.reset_by_peer,
            "send_failed": self.send_failed,
            "frames_received": self.frames_received,
            "elapsed": round(time.monotonic() - self.started, 3),
        }

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def finish(self, hold_file, wait, extra):
        """The attack is over: hold the connection for the test's memory reading, give the server
        `wait` seconds to close it (a connection it has given up on should be), then report the
        summary with `extra()`'s fields, read only now, and `attack_seconds`."""
        attack_seconds = time.monotonic() - self.started
        hold(hold_file)
        self.wait_closed(wait)
        result = self.summary()
        result.update(extra())
        result["attack_seconds"] = round(attack_seconds, 3)
        self.close()
        report(result)


def report(result):
    """The one JSON object the Swift test reads: the last line of stdout."""
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()


def hold(path, limit=10.0):
    """The attack is over, its connections as the server left them: say so by creating `path`,
    and wait (`limit` seconds at most) until the test has measured its memory and removed it."""
    if not path:
        return
    temporary = path + ".tmp"
    with open(temporary, "w"):
        pass
    os.replace(temporary, path)
    deadline = time.monotonic() + limit
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


STARTED_FILE = None


def announce_start():
    """The attack's first connection is open: create --started-file (once), so the test can probe
    bystanders while the attack is under way instead of guessing when it begins."""
    global STARTED_FILE
    if STARTED_FILE:
        with open(STARTED_FILE + ".tmp", "w"):
            pass
        os.replace(STARTED_FILE + ".tmp", STARTED_FILE)
        STARTED_FILE = None


def arguments(parser):
    global STARTED_FILE
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--hold-file", default=None, help="see hold()")
    parser.add_argument("--started-file", default=None, help="see announce_start()")
    args = parser.parse_args()
    STARTED_FILE = args.started_file
    return args
