"""An OAuth 2.1 authorization server nobody at Gatehouse wrote, for the MCP protected-resource tests:
the MCP Python SDK's own authorization-server handlers (`mcp.server.auth.routes.create_auth_routes`:
RFC 8414 metadata, RFC 7591 dynamic registration, authorization code + PKCE S256, refresh) over an
in-memory `OAuthAuthorizationServerProvider` that issues RS256 JWT access tokens. Binds a free
loopback port and writes it to --port-file; the issuer is exactly `http://127.0.0.1:<port>`.

- /authorize approves at once (no UI): the user is the `login_hint` query parameter (default
  "alice"); it redirects to the client's redirect_uri with code, state and iss (RFC 9207).
- Access tokens: header kid, typ "at+jwt"; claims iss, sub, aud (the RFC 8707 `resource` the client
  sent, a string; the client_id when it sent none), scope (space-separated), client_id, iat, exp
  (+1 h), jti. Scopes granted: those asked for (each must be one of --scopes; none asked: mcp:tools).
- /.well-known/openid-configuration (issuer, jwks_uri, ...) and /jwks (one RSA key made at start).
- POST /mint (form or JSON: sub, aud, scope; optional client_id, expires_in, iss, kid) returns
  {"access_token": ...}: a signed token for raw tests (a sibling resource's audience, an expired one).
- GET /log: what the flow asked for (each /authorize: client_id, login_hint, scope, resource; each
  token issued: sub, aud, scope), for tests to assert on.
"""
import argparse
import contextvars
import json
import os
import secrets
import socket
import sys
import time
import uuid
from typing import Any
from urllib.parse import parse_qs

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

parser = argparse.ArgumentParser()
parser.add_argument("--port-file", required=True)
parser.add_argument("--resource", action="append", default=[],
                    help="a resource (RFC 8707) tokens may be issued for; repeatable; none given: any")
parser.add_argument("--scopes", default="mcp:tools repo:admin", help="the scopes this server grants")
parser.add_argument("--default-user", default="alice")
parser.add_argument("--token-lifetime", type=int, default=3600)
args = parser.parse_args()

SCOPES = args.scopes.split()
DEFAULT_SCOPE = "mcp:tools"
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
PORT = sock.getsockname()[1]
ISSUER = "http://127.0.0.1:%d" % PORT
# A path-less URL without the trailing slash pydantic would add (RFC 8414 compares issuers as strings).
ISSUER_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True)).validate_python(ISSUER)

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
KID = "mcp-as-" + secrets.token_hex(4)
PUBLIC_JWK = json.loads(RSAAlgorithm.to_jwk(KEY.public_key()))
PUBLIC_JWK.pop("key_ops", None)
PUBLIC_JWK.update({"kid": KID, "use": "sig", "alg": "RS256"})

LOG: list[dict[str, Any]] = []
# The login_hint of the /authorize request being handled (the SDK's handler does not pass it on).
LOGIN_HINT: contextvars.ContextVar[str | None] = contextvars.ContextVar("login_hint", default=None)


def sign(claims: dict[str, Any], kid: str = KID) -> str:
    return jwt.encode(claims, KEY, algorithm="RS256", headers={"kid": kid, "typ": "at+jwt"})


def access_token(sub: str, aud: str, scopes: list[str], client_id: str, lifetime: int | None = None,
                 iss: str = ISSUER, kid: str = KID) -> str:
    now = int(time.time())
    claims = {"iss": iss, "sub": sub, "aud": aud, "scope": " ".join(scopes), "client_id": client_id,
              "iat": now, "exp": now + (args.token_lifetime if lifetime is None else lifetime),
              "jti": uuid.uuid4().hex}
    LOG.append({"event": "token", "sub": sub, "aud": aud, "scope": claims["scope"], "client_id": client_id})
    return sign(claims, kid)


class Provider:
    """In-memory OAuthAuthorizationServerProvider: auto-approving, JWT access tokens."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        # RFC 7591 lets the server replace requested metadata: register every scope this server grants,
        # so a later step-up (/authorize asking for more than the client registered with) is not
        # refused by the SDK handler's per-client scope check. The handler echoes this same object.
        client_info.scope = " ".join(SCOPES)
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        user = LOGIN_HINT.get() or args.default_user
        scopes = params.scopes or [DEFAULT_SCOPE]
        unknown = [scope for scope in scopes if scope not in SCOPES]
        if unknown:
            raise AuthorizeError("invalid_scope", "not granted here: " + " ".join(unknown))
        if params.resource is not None and args.resource and params.resource not in args.resource:
            raise AuthorizeError("invalid_target", "unknown resource " + params.resource)
        LOG.append({"event": "authorize", "client_id": client.client_id, "login_hint": LOGIN_HINT.get(),
                    "sub": user, "scope": " ".join(scopes), "resource": params.resource})
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=scopes, expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource, subject=user)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=ISSUER)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str):
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, subject: str, scopes: list[str], resource: str | None) -> OAuthToken:
        refresh = secrets.token_urlsafe(32)
        self.refresh_tokens[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                                    resource=resource, subject=subject)
        token = access_token(subject, resource or client_id, scopes, client_id)
        return OAuthToken(access_token=token, token_type="Bearer", expires_in=args.token_lifetime,
                          scope=" ".join(scopes), refresh_token=refresh)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, code: AuthorizationCode):
        if self.codes.pop(code.code, None) is None:
            raise TokenError("invalid_grant", "authorization code already used")
        return self._issue(client.client_id, code.subject or args.default_user, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str):
        return self.refresh_tokens.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]):
        self.refresh_tokens.pop(refresh_token.token, None)
        return self._issue(client.client_id, refresh_token.subject or args.default_user, scopes,
                           refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None  # tokens are verified by their signature, not looked up here

    async def revoke_token(self, token) -> None:
        self.refresh_tokens.pop(getattr(token, "token", ""), None)


provider = Provider()
auth_routes = create_auth_routes(
    provider=provider,
    issuer_url=ISSUER_URL,
    client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES,
                                                          default_scopes=[DEFAULT_SCOPE]),
    revocation_options=RevocationOptions(enabled=True),
)


def with_login_hint(app):
    """Wraps the SDK's /authorize endpoint so the provider can see login_hint."""

    async def wrapped(scope, receive, send):
        hint = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("login_hint", [None])[0]
        token = LOGIN_HINT.set(hint)
        try:
            await app(scope, receive, send)
        finally:
            LOGIN_HINT.reset(token)

    return wrapped


for route in auth_routes:
    if route.path == "/authorize":
        route.app = with_login_hint(route.app)


async def openid_configuration(request: Request):
    return JSONResponse({
        "issuer": ISSUER, "jwks_uri": ISSUER + "/jwks", "authorization_endpoint": ISSUER + "/authorize",
        "token_endpoint": ISSUER + "/token", "registration_endpoint": ISSUER + "/register",
        "response_types_supported": ["code"], "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"], "scopes_supported": SCOPES,
        "code_challenge_methods_supported": ["S256"],
    })


async def jwks(request: Request):
    return JSONResponse({"keys": [PUBLIC_JWK]})


async def mint(request: Request):
    if request.headers.get("content-type", "").startswith("application/json"):
        form = await request.json()
    else:
        form = dict(await request.form())
    scope = str(form.get("scope", DEFAULT_SCOPE))
    token = access_token(str(form.get("sub", args.default_user)), str(form["aud"]), scope.split(),
                         str(form.get("client_id", "minted")),
                         int(form["expires_in"]) if "expires_in" in form else None,
                         str(form.get("iss", ISSUER)), str(form.get("kid", KID)))
    return JSONResponse({"access_token": token, "token_type": "Bearer"})


async def log(request: Request):
    return JSONResponse(LOG)


app = Starlette(routes=auth_routes + [
    Route("/.well-known/openid-configuration", openid_configuration, methods=["GET"]),
    Route("/jwks", jwks, methods=["GET"]),
    Route("/mint", mint, methods=["POST"]),
    Route("/log", log, methods=["GET"]),
])

sock.listen(128)  # connections made from now on wait in the backlog until uvicorn accepts them
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(PORT))
os.replace(args.port_file + ".tmp", args.port_file)
sys.stderr.write("authorization_server: issuer %s\n" % ISSUER)
uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run(sockets=[sock])
