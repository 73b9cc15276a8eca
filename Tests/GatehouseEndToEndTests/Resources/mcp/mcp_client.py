"""An MCP client nobody at Gatehouse wrote: the MCP Python SDK's Client over its Streamable HTTP
transport, authenticated by the SDK's own OAuth support (mcp.client.auth.OAuthClientProvider, an
httpx2.Auth). It is given only the MCP endpoint (--url) and finds its token by discovery alone: the
401's WWW-Authenticate resource_metadata, the RFC 9728 protected resource metadata, the RFC 8414
authorization server metadata, dynamic registration, then authorization code + PKCE with the RFC 8707
resource. The "browser" is httpx2: the authorization URL (plus login_hint=--user) is fetched without
following redirects and the code, state and iss are read from the Location. A 403
insufficient_scope is answered by the SDK itself (it re-authorizes with the challenged scope added,
then retries the request).

--protocol 2025: the initialize handshake (the SDK offers 2025-11-25; sessions where the server
keeps them). --protocol default: the SDK's default (mode "auto": a server/discover probe at
2026-07-28, falling back to the handshake). --protocol 2026: 2026-07-28 pinned, no probe.

Runs the --steps given (list, echo, whoami, progress, admin) and prints one JSON object as its last
line: {"tools", "echo", "whoami", "progress": {"events", "result"}, "admin", "session_id",
"protocol_version", "token_audience", "scopes", "authorizations", "http"} (a step not run is null;
"admin" is the tool's text, or {"error": ...} when the call failed at the MCP level; "http" lists
every HTTP exchange in order: method, url, status, version). With --print-session, a line {"session_id": ...}
is printed as soon as the client is connected. Exits non-zero with a message on anything unexpected.
"""
import argparse
import base64
import json
import os
import sys
import tempfile
import uuid
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2

from mcp import Client, MCPError
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never visited: the Location is read, not followed


class MemoryStorage:
    """In-memory TokenStorage."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def jwt_claims(token: str | None) -> dict:
    """The payload of a JWS, its signature not checked (what the client used, for the report)."""
    if not token or token.count(".") != 2:
        return {}
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def http_client(h2c_origin: str | None, auth: httpx2.Auth | None = None, event_hooks=None) -> httpx2.AsyncClient:
    """HTTP/1.1, except to h2c_origin (when given): HTTP/2 with prior knowledge over cleartext there
    (http1=False, http2=True). Only the MCP endpoint's origin gets HTTP/2, so the authorization
    server may be an HTTP/1.1-only server."""
    mounts = None
    if h2c_origin is not None:
        mounts = {h2c_origin: httpx2.AsyncHTTPTransport(http1=False, http2=True)}
    return httpx2.AsyncClient(auth=auth, event_hooks=event_hooks, mounts=mounts,
                              timeout=httpx2.Timeout(30.0, read=300.0))


def text_of(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def run(args) -> dict:
    out: dict = {"tools": None, "echo": None, "whoami": None, "progress": None, "admin": None,
                 "session_id": None, "protocol_version": None, "token_audience": None, "scopes": None,
                 "authorizations": [], "http": []}
    exchanges = out["http"]

    async def on_request(request: httpx2.Request) -> None:
        exchanges.append({"method": request.method, "url": str(request.url), "status": None})

    async def on_response(response: httpx2.Response) -> None:
        for exchange in reversed(exchanges):
            if exchange["url"] == str(response.request.url) and exchange["status"] is None:
                exchange["status"] = response.status_code
                exchange["version"] = response.http_version
                break
        session_id = response.headers.get("mcp-session-id")
        if session_id and out["session_id"] is None:
            out["session_id"] = session_id

    parts = urlsplit(args.url)
    h2c_origin = "%s://%s" % (parts.scheme, parts.netloc) if args.http2 else None
    browser = http_client(h2c_origin, event_hooks={"request": [on_request], "response": [on_response]})
    pending: dict = {}

    async def redirect_handler(authorization_url: str) -> None:
        """The user's browser: visit the authorization URL as --user, read where it redirects."""
        query = parse_qs(urlsplit(authorization_url).query)
        out["authorizations"].append({key: query[key][0] for key in ("scope", "resource") if key in query})
        url = authorization_url + "&" + urlencode({"login_hint": args.user})
        response = await browser.get(url, follow_redirects=False)
        location = response.headers.get("location")
        if response.status_code not in (302, 303, 307) or not location:
            raise RuntimeError("authorization endpoint answered %d, not a redirect: %s"
                               % (response.status_code, response.text[:500]))
        params = parse_qs(urlsplit(location).query)
        if "error" in params:
            raise RuntimeError("authorization refused: %s" % location)
        pending["result"] = AuthorizationCodeResult(code=params["code"][0], state=params.get("state", [None])[0],
                                                    iss=params.get("iss", [None])[0])

    async def callback_handler() -> AuthorizationCodeResult:
        return pending.pop("result")

    storage = MemoryStorage()
    oauth = OAuthClientProvider(
        server_url=args.url,
        client_metadata=OAuthClientMetadata(client_name="gatehouse-e2e-mcp-client", redirect_uris=[REDIRECT_URI],
                                            grant_types=["authorization_code", "refresh_token"],
                                            response_types=["code"]),
        storage=storage, redirect_handler=redirect_handler, callback_handler=callback_handler)
    http = http_client(h2c_origin, auth=oauth, event_hooks={"request": [on_request], "response": [on_response]})

    mode = {"2025": "legacy", "default": "auto", "2026": "2026-07-28"}[args.protocol]
    steps = [step for step in args.steps.split(",") if step]
    async with browser, http:
        transport = streamable_http_client(args.url, http_client=http, terminate_on_close=not args.keep_session)
        async with Client(transport, mode=mode, cache=None) as client:
            out["protocol_version"] = client.protocol_version
            if args.print_session:
                print(json.dumps({"session_id": out["session_id"]}), flush=True)
            for step in steps:
                if step == "list":
                    out["tools"] = sorted(tool.name for tool in (await client.list_tools()).tools)
                elif step == "echo":
                    out["echo"] = text_of(await client.call_tool("echo", {"text": args.echo}))
                elif step == "whoami":
                    out["whoami"] = json.loads(text_of(await client.call_tool("whoami", {})))
                elif step == "progress":
                    flag = os.path.join(args.flag_dir or tempfile.gettempdir(), "release-%s" % uuid.uuid4().hex)
                    events = []

                    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                        events.append({"progress": progress, "total": total, "message": message})
                        if progress == 1:  # the server waits for this file: only a streamed event makes it
                            with open(flag, "w") as f:
                                f.write("go")

                    try:
                        result = await client.call_tool("progress_then_wait", {"flag_path": flag},
                                                        progress_callback=on_progress)
                    finally:
                        if os.path.exists(flag):
                            os.unlink(flag)
                    out["progress"] = {"events": events, "result": text_of(result)}
                elif step == "admin":
                    try:
                        result = await client.call_tool("delete_repo", {"name": args.repo})
                        out["admin"] = {"error": text_of(result)} if result.is_error else text_of(result)
                    except MCPError as error:
                        out["admin"] = {"error": str(error), "code": error.code}
                else:
                    raise SystemExit("unknown step %r" % step)
    tokens = storage.tokens
    claims = jwt_claims(tokens.access_token if tokens else None)
    out["token_audience"] = claims.get("aud")
    out["scopes"] = claims.get("scope", tokens.scope if tokens else None)
    if args.print_token:
        out["access_token"] = tokens.access_token if tokens else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the MCP endpoint, e.g. http://127.0.0.1:PORT/mcp")
    parser.add_argument("--user", default="alice", help="login_hint at the authorization endpoint")
    parser.add_argument("--http2", action="store_true", help="HTTP/2 with prior knowledge (h2c) to --url's origin")
    parser.add_argument("--protocol", choices=["2025", "default", "2026"], default="default")
    parser.add_argument("--flag-dir", default=None, help="where the progress step's release file goes")
    parser.add_argument("--steps", default="list,echo,whoami")
    parser.add_argument("--print-session", action="store_true", help="print {\"session_id\"} once connected")
    parser.add_argument("--keep-session", action="store_true", help="do not DELETE the session at the end")
    parser.add_argument("--print-token", action="store_true", help="add the access token to the output")
    parser.add_argument("--echo", default="hello through gatehouse")
    parser.add_argument("--repo", default="demo")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()

    async def bounded():
        with anyio.fail_after(args.timeout):
            return await run(args)

    try:
        out = anyio.run(bounded)
    except SystemExit:
        raise
    except BaseException as error:  # anything unexpected: a clear message and a non-zero exit
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        sys.stderr.write("mcp_client: failed: %s: %s\n" % (type(error).__name__, str(error) or repr(error)))
        sys.exit(1)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
