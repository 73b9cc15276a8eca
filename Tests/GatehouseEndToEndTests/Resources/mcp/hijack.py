"""Someone else's MCP session: raw Streamable HTTP requests (httpx2, the SDK's HTTP client) that carry
`Mcp-Session-Id: --session-id` (a session another user opened) with --token (a token of a different
user, or any token the test chooses): a JSON-RPC tools/list POST, a GET for the session's SSE stream
and a DELETE of the session, in that order. A protected resource that binds sessions to their user
answers each with 404, as if the session did not exist. With --owner-token, a last tools/list POST
with the owner's token shows whether the session survived the attempts.

Prints one JSON object: {"post": {status, content_type, www_authenticate, body}, "get": ...,
"delete": ..., "owner_post": ... or null}. A GET that is answered 200 (a stream) is closed at once
after its headers. Exits non-zero only if a request cannot be made at all.
"""
import argparse
import json
import sys
from urllib.parse import urlsplit

import httpx2

parser = argparse.ArgumentParser()
parser.add_argument("--url", required=True)
parser.add_argument("--session-id", required=True)
parser.add_argument("--token", required=True)
parser.add_argument("--owner-token", default=None)
parser.add_argument("--protocol-version", default="2025-11-25", help="the MCP-Protocol-Version header sent")
parser.add_argument("--http2", action="store_true", help="HTTP/2 with prior knowledge (h2c)")
args = parser.parse_args()


def headers(token: str, accept: str) -> dict:
    return {"authorization": "Bearer " + token, "mcp-session-id": args.session_id,
            "mcp-protocol-version": args.protocol_version, "accept": accept}


def summary(response: httpx2.Response, body: bytes | None) -> dict:
    return {"status": response.status_code, "content_type": response.headers.get("content-type"),
            "www_authenticate": response.headers.get("www-authenticate"),
            "mcp_session_id": response.headers.get("mcp-session-id"),
            "http_version": response.http_version,
            "body": body.decode("utf-8", "replace")[:500] if body is not None else None}


def exchange(client: httpx2.Client, method: str, token: str, accept: str, payload: dict | None) -> dict:
    request = client.build_request(method, args.url, headers=headers(token, accept),
                                   json=payload if payload is not None else None)
    response = client.send(request, stream=True)
    try:
        streaming = response.headers.get("content-type", "").startswith("text/event-stream")
        if method == "GET" and streaming:
            return summary(response, None)  # a live stream: its headers are the answer
        return summary(response, response.read())
    finally:
        response.close()


tools_list = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
out = {}
try:
    origin = "%s://%s" % urlsplit(args.url)[:2]
    mounts = {origin: httpx2.HTTPTransport(http1=False, http2=True)} if args.http2 else None
    with httpx2.Client(mounts=mounts, timeout=10.0) as client:
        out["post"] = exchange(client, "POST", args.token, "application/json, text/event-stream", tools_list)
        out["get"] = exchange(client, "GET", args.token, "text/event-stream", None)
        out["delete"] = exchange(client, "DELETE", args.token, "application/json, text/event-stream", None)
        out["owner_post"] = None
        if args.owner_token:
            out["owner_post"] = exchange(client, "POST", args.owner_token, "application/json, text/event-stream",
                                         dict(tools_list, id=2))
except httpx2.HTTPError as error:
    sys.stderr.write("hijack: request failed: %s: %s\n" % (type(error).__name__, str(error) or repr(error)))
    sys.exit(1)
print(json.dumps(out), flush=True)
