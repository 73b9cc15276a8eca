"""A client that holds a connection open and does nothing useful with it: it sends the preface,
acknowledges the server's SETTINGS, then either stays silent and never answers a PING (so the
graceful GOAWAY of an idle connection, which waits for its PING's acknowledgement, never
completes), or closes its sending side (`--half-close`: a half-closed TCP connection has no
meaning in HTTP/2). Either way the server must close the connection on its own, in bounded time.

Prints one JSON object: the GOAWAY (code) and PINGs received, and when the server closed.
"""

import argparse
import socket

import h2peer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--half-close", action="store_true")
    parser.add_argument("--hold", type=float, default=10.0, help="how long to wait for the server to close, at most")
    args = h2peer.arguments(parser)

    peer = h2peer.Peer(args.port)
    peer.start()
    peer.acknowledge_settings()
    if args.half_close:
        peer.sock.shutdown(socket.SHUT_WR)
    peer.wait_closed(args.hold)
    result = peer.summary()
    result.update({"half_close": args.half_close, "pings": peer.pings})
    peer.close()
    h2peer.report(result)


if __name__ == "__main__":
    main()
