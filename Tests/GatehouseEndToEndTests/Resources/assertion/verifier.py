"""An upstream's check of Gatehouse's identity assertion, with two JWT libraries nobody at Gatehouse wrote:
PyJWT (its PyJWKClient fetching Gatehouse's JWKS) and jwcrypto. Audience, issuer and algorithms are pinned,
as docs/README tell an upstream to. Each keeps the JWKS it fetched and fetches again only for an unknown kid,
as a long-running service would, and again once it is `--lifespan` old. PyJWT refetches for an unknown kid at most
every 30 s (its cooldown): a verifier learns a new key from the JWKS's age, which is why a rotation publishes the next
key at least max-age before signing with it.

GET /verify with the assertion in `X-Assertion` answers
{"pyjwt": {"claims": {...}} | {"error": "..."}, "jwcrypto": ..., "header": {...}, "fetches": {"pyjwt": n, "jwcrypto": n}}.
"""
import argparse
import base64
import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from jwcrypto import jwk as jwcrypto_jwk
from jwcrypto import jwt as jwcrypto_jwt

parser = argparse.ArgumentParser()
parser.add_argument("--port-file", required=True)
parser.add_argument("--jwks-url", required=True)
parser.add_argument("--audience", required=True)
parser.add_argument("--issuer", required=True)
parser.add_argument("--algorithms", default="ES256,EdDSA")
parser.add_argument("--lifespan", type=float, default=300, help="seconds a fetched JWKS is kept (Gatehouse's max-age)")
args = parser.parse_args()
algorithms = args.algorithms.split(",")
fetches = {"pyjwt": 0, "jwcrypto": 0}
lock = threading.Lock()


class CountingJWKClient(jwt.PyJWKClient):
    def fetch_data(self):
        with lock:
            fetches["pyjwt"] += 1
        return super().fetch_data()


pyjwt_client = CountingJWKClient(args.jwks_url, cache_jwk_set=True, lifespan=args.lifespan)
jwcrypto_keys = None
jwcrypto_fetched_at = 0.0


def jwcrypto_fetch():
    global jwcrypto_keys, jwcrypto_fetched_at
    jwcrypto_fetched_at = time.monotonic()
    with urllib.request.urlopen(args.jwks_url, timeout=5) as response:
        jwcrypto_keys = jwcrypto_jwk.JWKSet.from_json(response.read())
    with lock:
        fetches["jwcrypto"] += 1


def with_pyjwt(token):
    key = pyjwt_client.get_signing_key_from_jwt(token)
    return jwt.decode(token, key.key, algorithms=algorithms, audience=args.audience, issuer=args.issuer,
                      options={"require": ["iss", "aud", "exp", "iat", "jti"]})


def with_jwcrypto(token):
    kid = jwt.get_unverified_header(token).get("kid")
    if jwcrypto_keys is None or jwcrypto_keys.get_key(kid) is None or time.monotonic() - jwcrypto_fetched_at > args.lifespan:
        jwcrypto_fetch()
    checked = jwcrypto_jwt.JWT(jwt=token, key=jwcrypto_keys, algs=algorithms,
                               check_claims={"iss": args.issuer, "aud": args.audience, "exp": None, "iat": None})
    return json.loads(checked.claims)


def outcome(check, token):
    try:
        return {"claims": check(token)}
    except Exception as error:  # every refusal is an answer here, named by its class
        return {"error": f"{type(error).__name__}: {error}"}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        token = self.headers.get("X-Assertion", "")
        try:
            header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "==="))
        except Exception:
            header = None
        body = json.dumps({"pyjwt": outcome(with_pyjwt, token), "jwcrypto": outcome(with_jwcrypto, token),
                           "header": header, "fetches": dict(fetches)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(args.port_file, "w") as port_file:
    port_file.write(str(server.server_address[1]))
server.serve_forever()
