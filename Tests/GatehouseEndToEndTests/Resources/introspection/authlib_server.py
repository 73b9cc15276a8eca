"""An RFC 7662 introspection endpoint nobody at Gatehouse wrote: Authlib's IntrospectionEndpoint in a
Flask app, with RFC 6749 client authentication (client_secret_basic or client_secret_post) and
RFC 8414 metadata. Binds a free loopback port and writes it to --port-file.

Tokens come from --tokens (a JSON list of {"token", "sub", "scope", "exp", "client_id", "revoked"}).
POST /revoke-now with form token=... marks one revoked (the IdP side of a sign-out)."""
import argparse
import json
import threading
import time

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin, TokenMixin
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from flask import Flask, jsonify, request
from werkzeug.serving import make_server

parser = argparse.ArgumentParser()
parser.add_argument("--port-file", required=True)
parser.add_argument("--tokens", required=True)
parser.add_argument("--client-id", required=True)
parser.add_argument("--client-secret", required=True)
parser.add_argument("--auth-method", choices=["client_secret_basic", "client_secret_post"], default="client_secret_basic")
args = parser.parse_args()


class Client(ClientMixin):
    client_id = args.client_id

    def get_client_id(self):
        return self.client_id

    def check_client_secret(self, client_secret):
        return client_secret == args.client_secret

    def check_endpoint_auth_method(self, method, endpoint):
        return method == args.auth_method

    def check_token_endpoint_auth_method(self, method):
        return method == args.auth_method


class Token(TokenMixin):
    def __init__(self, record):
        self.record = record

    def check_client(self, client):
        return True

    def get_scope(self):
        return self.record.get("scope", "")

    def get_expires_in(self):
        return self.record["exp"] - int(time.time())

    def is_expired(self):
        return self.record["exp"] <= int(time.time())

    def is_revoked(self):
        return self.record.get("revoked", False)


TOKENS = {record["token"]: Token(record) for record in json.loads(args.tokens)}
CALLS = {"count": 0}


class Introspection(IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def query_token(self, token, token_type_hint):
        CALLS["count"] += 1
        return TOKENS.get(token)

    def introspect_token(self, token):
        record = token.record
        return {"active": True, "client_id": record.get("client_id", args.client_id), "token_type": "Bearer",
                "scope": record.get("scope", ""), "sub": record["sub"], "username": record["sub"],
                "exp": record["exp"], "iat": int(time.time()) - 5, "iss": "http://127.0.0.1:%d" % PORT["port"]}

    def check_permission(self, token, client, request):
        return True


app = Flask(__name__)
server = AuthorizationServer(app, query_client=lambda client_id: Client() if client_id == args.client_id else None,
                             save_token=lambda token, request: None)
server.register_endpoint(Introspection)
PORT = {"port": 0}


@app.route("/introspect", methods=["POST"])
def introspect():
    return server.create_endpoint_response("introspection")


@app.route("/revoke-now", methods=["POST"])
def revoke_now():
    TOKENS[request.form["token"]].record["revoked"] = True
    return "", 204


@app.route("/calls")
def calls():
    return jsonify(CALLS)


@app.route("/.well-known/oauth-authorization-server")
def metadata():
    base = "http://127.0.0.1:%d" % PORT["port"]
    return jsonify({"issuer": base, "introspection_endpoint": base + "/introspect"})


http = make_server("127.0.0.1", 0, app, threaded=True)
PORT["port"] = http.server_port
with open(args.port_file, "w") as f:
    f.write(str(http.server_port))
http.serve_forever()
