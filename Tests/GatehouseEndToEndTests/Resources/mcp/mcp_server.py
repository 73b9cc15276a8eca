"""An MCP server nobody at Gatehouse wrote, with no auth of its own: the MCP Python SDK's MCPServer
(FastMCP's successor in mcp 2.x) over its Streamable HTTP transport at /mcp, the upstream Gatehouse
makes into an OAuth protected resource. Binds a free loopback port and writes it to --port-file.

Protocol revisions (the SDK routes each POST by its MCP-Protocol-Version header):
- 2025 revisions (initialize handshake): stateful by default (the initialize response carries
  Mcp-Session-Id, later requests must send it, GET opens the server's SSE stream, DELETE ends the
  session); --stateless serves them without sessions (no Mcp-Session-Id at all).
- 2026-07-28 (no handshake, one request per POST): always stateless, whatever --stateless says;
  never an Mcp-Session-Id; GET answers 405.
Answers are SSE streams (text/event-stream) unless --json-response.

Tools:
- echo(text) -> text
- whoami() -> JSON text: every x-auth-* request header that arrived, "authorization_present"
  (whether an Authorization header reached this upstream) and the Mcp-Session-Id header it saw.
- progress_then_wait(flag_path) -> progress 1/2 "started", then waits (polling, up to 15 s) for the
  file flag_path, then progress 2/2 "released" and returns "released" ("timed out" if it never
  appears). The client creates the file from its progress callback, so a proxy that holds back the
  SSE stream makes this time out.
- delete_repo(name) -> "deleted <name>" (the admin tool: Gatehouse requires scope repo:admin).

--http2 serves with Hypercorn (HTTP/1.1 and h2c with prior knowledge on the same port) instead of
uvicorn (HTTP/1.1 only). --any-host turns off the SDK's DNS-rebinding check of Host/Origin (by
default it accepts Host 127.0.0.1:*, localhost:* and [::1]:* only).
"""
import argparse
import json
import os
import socket
import sys
import time

import anyio

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings

FLAG_WAIT_SECONDS = 15.0


def add_tools(server: MCPServer) -> MCPServer:
    """The test tools (shared with reference_resource.py)."""

    @server.tool()
    def echo(text: str) -> str:
        """Returns the text it was given."""
        return text

    @server.tool()
    def whoami(ctx: Context) -> str:
        """What the HTTP request carrying this call told the server about the caller."""
        headers = ctx.headers or {}
        seen = {name.lower(): value for name, value in headers.items() if name.lower().startswith("x-auth-")}
        seen["authorization_present"] = "authorization" in {name.lower() for name in headers.keys()}
        seen["mcp_session_id"] = headers.get("mcp-session-id")
        return json.dumps(seen, sort_keys=True)

    @server.tool()
    async def progress_then_wait(flag_path: str, ctx: Context) -> str:
        """Reports progress, then waits for the client to create flag_path."""
        await ctx.report_progress(1, 2, "started")
        deadline = time.monotonic() + FLAG_WAIT_SECONDS
        while not os.path.exists(flag_path):
            if time.monotonic() >= deadline:
                return "timed out"
            await anyio.sleep(0.02)
        await ctx.report_progress(2, 2, "released")
        return "released"

    @server.tool()
    def delete_repo(name: str) -> str:
        """The admin tool."""
        return "deleted " + name

    return server


def bind() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections made from now on wait in the backlog until the server accepts them
    return sock


def write_port(path: str, port: int) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(str(port))
    os.replace(path + ".tmp", path)


def serve(app, sock: socket.socket, http2: bool) -> None:
    """Serves the ASGI app on the listening socket: uvicorn (HTTP/1.1), or Hypercorn (HTTP/1.1 + h2c)."""
    if not http2:
        import uvicorn

        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
        return
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    config = Config()
    config.bind = ["fd://%d" % sock.fileno()]
    config.loglevel = "WARNING"
    config.graceful_timeout = 1.0
    import asyncio

    asyncio.run(hypercorn_serve(app, config))


def transport_security(any_host: bool) -> TransportSecuritySettings | None:
    return TransportSecuritySettings(enable_dns_rebinding_protection=False) if any_host else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--stateless", action="store_true", help="serve 2025 revisions without sessions")
    parser.add_argument("--json-response", action="store_true", help="application/json answers instead of SSE")
    parser.add_argument("--http2", action="store_true", help="Hypercorn: HTTP/1.1 and h2c prior knowledge")
    parser.add_argument("--any-host", action="store_true", help="no DNS-rebinding check of Host/Origin")
    parser.add_argument("--path", default="/mcp")
    args = parser.parse_args()

    server = add_tools(MCPServer("gatehouse-test-mcp", log_level="WARNING"))
    app = server.streamable_http_app(streamable_http_path=args.path, stateless_http=args.stateless,
                                     json_response=args.json_response,
                                     transport_security=transport_security(args.any_host))
    sock = bind()
    write_port(args.port_file, sock.getsockname()[1])
    sys.stderr.write("mcp_server: http://127.0.0.1:%d%s (%s, %s)\n" % (
        sock.getsockname()[1], args.path, "stateless" if args.stateless else "stateful",
        "hypercorn h1+h2c" if args.http2 else "uvicorn h1"))
    serve(app, sock, args.http2)


if __name__ == "__main__":
    main()
