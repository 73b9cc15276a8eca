"""TEST AID, not a peer of Gatehouse: a stand-in for Gatehouse's MCP protected resource, made only
to check the other scripts here against the behaviour the SDK itself expects. It is mcp_server.py's
MCPServer with the SDK's own resource-server auth: AuthSettings(issuer_url=--issuer,
resource_server_url=http://127.0.0.1:<port>/mcp, required_scopes=[mcp:tools],
validate_token_resource=True) and a TokenVerifier that checks the JWT (RS256) against the
authorization server's JWKS, its iss, exp and aud == the resource URL. So it answers:

- no or bad token: 401, WWW-Authenticate: Bearer error="invalid_token", error_description=...,
  resource_metadata="http://127.0.0.1:<port>/.well-known/oauth-protected-resource/mcp"
- that URL: RFC 9728 metadata {resource, authorization_servers: [--issuer], scopes_supported:
  [mcp:tools], bearer_methods_supported: [header]}
- a token without mcp:tools: 403 insufficient_scope (the SDK's RequireAuthMiddleware)
- sessions (2025 revisions, stateful): bound to the (client_id, iss, sub) that opened them; another
  principal's request with that Mcp-Session-Id gets 404 (the SDK's session manager).

The SDK has no per-tool scopes, so this file adds them in a thin ASGI wrapper (ToolScopes): a
tools/call of delete_repo with a valid token lacking repo:admin gets 403 and
WWW-Authenticate: Bearer error="insufficient_scope", scope="repo:admin", resource_metadata="...".
That wrapper is what Gatehouse is to do; everything else here is the SDK's.
Flags as mcp_server.py (--port-file, --stateless, --json-response, --http2) plus --issuer.
"""
import argparse
import json
import sys

import jwt
from starlette.types import Receive, Scope, Send

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp_server import add_tools, bind, serve, transport_security, write_port

TOOL_SCOPES = {"delete_repo": "repo:admin"}


class JWTVerifier:
    """TokenVerifier: RS256 JWT from the issuer's JWKS, audience = this resource."""

    def __init__(self, issuer: str, resource: str):
        self.issuer = issuer
        self.resource = resource
        self.keys = jwt.PyJWKClient(issuer + "/jwks", cache_keys=True)

    def claims(self, token: str) -> dict | None:
        try:
            key = self.keys.get_signing_key_from_jwt(token)
            return jwt.decode(token, key.key, algorithms=["RS256"], audience=self.resource, issuer=self.issuer,
                              options={"require": ["exp", "iss", "aud", "sub"]})
        except jwt.PyJWTError as error:
            sys.stderr.write("reference_resource: token refused: %s\n" % error)
            return None

    async def verify_token(self, token: str) -> AccessToken | None:
        claims = self.claims(token)
        if claims is None:
            return None
        return AccessToken(token=token, client_id=str(claims.get("client_id", "")),
                           scopes=str(claims.get("scope", "")).split(), expires_at=int(claims["exp"]),
                           resource=claims["aud"] if isinstance(claims["aud"], str) else self.resource,
                           subject=claims["sub"], claims={"iss": claims["iss"]})


class ToolScopes:
    """Per-tool scopes in front of the SDK app: 403 insufficient_scope for a tools/call lacking its scope."""

    def __init__(self, app, verifier: JWTVerifier, path: str, metadata_url: str):
        self.app, self.verifier, self.path, self.metadata_url = app, verifier, path, metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        needed = None
        try:
            message = json.loads(body)
            if isinstance(message, dict) and message.get("method") == "tools/call":
                needed = TOOL_SCOPES.get((message.get("params") or {}).get("name"))
        except ValueError:
            pass
        authorization = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        if needed and authorization.lower().startswith("bearer "):
            claims = self.verifier.claims(authorization[7:])
            if claims is not None and needed not in str(claims.get("scope", "")).split():
                challenge = 'Bearer error="insufficient_scope", scope="%s", resource_metadata="%s"' % (
                    needed, self.metadata_url)
                payload = json.dumps({"error": "insufficient_scope", "scope": needed}).encode()
                await send({"type": "http.response.start", "status": 403, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                    (b"www-authenticate", challenge.encode())]})
                await send({"type": "http.response.body", "body": payload})
                return
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--issuer", required=True, help="the authorization server, e.g. http://127.0.0.1:PORT")
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--http2", action="store_true")
    parser.add_argument("--any-host", action="store_true")
    args = parser.parse_args()

    sock = bind()
    port = sock.getsockname()[1]
    resource = "http://127.0.0.1:%d/mcp" % port
    verifier = JWTVerifier(args.issuer, resource)
    server = add_tools(MCPServer(
        "gatehouse-reference-resource", log_level="WARNING", token_verifier=verifier,
        auth=AuthSettings(issuer_url=args.issuer, resource_server_url=resource, required_scopes=["mcp:tools"],
                          validate_token_resource=True)))
    app = server.streamable_http_app(stateless_http=args.stateless, json_response=args.json_response,
                                     transport_security=transport_security(args.any_host))
    metadata_url = str(build_resource_metadata_url(server.settings.auth.resource_server_url))
    write_port(args.port_file, port)
    sys.stderr.write("reference_resource: %s (metadata %s)\n" % (resource, metadata_url))
    serve(ToolScopes(app, verifier, "/mcp", metadata_url), sock, args.http2)


if __name__ == "__main__":
    main()
