"""A DPoP client nobody at Gatehouse wrote: requests-oauth2client's DPoPToken as a `requests` auth
handler, signing a fresh proof (ES256) for every request and answering a resource server's
`use_dpop_nonce` by itself. Reads the private key (a JWK) and the access token bound to it from the
command line, sends the requests the test names, and prints one JSON object with what came back."""
import argparse
import json
import sys

import jwskate
import requests
from requests_oauth2client import DPoPKey, DPoPToken

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--jwk", required=True)
parser.add_argument("--token", required=True)
args = parser.parse_args()

key = DPoPKey(private_key=jwskate.Jwk(json.loads(args.jwk)), alg="ES256")
auth = DPoPToken(access_token=args.token, _dpop_key=key)
session = requests.Session()
results = []
for method, path, body in [("GET", "/v1/orders?page=2", None), ("POST", "/v1/orders", "{\"item\":1}"), ("GET", "/v1/orders", None)]:
    try:
        response = session.request(method, args.base + path, data=body, auth=auth, timeout=10)
        results.append({"method": method, "path": path, "status": response.status_code, "body": response.text})
    except Exception as error:  # reported to the test, which fails on it
        results.append({"method": method, "path": path, "error": repr(error)})
print(json.dumps({"results": results, "thumbprint": key.private_key.thumbprint()}))
sys.stdout.flush()
