"""Logout tokens (OpenID Connect Back-Channel Logout 1.0 §2.4) signed by PyJWT, a JWT library written elsewhere
than Gatehouse, with the test provider's private key.

--key is a PEM private key file, --alg its JWS algorithm, --kid the key id put in every header.
--spec is a JSON object (or @FILE holding it) of name -> {"claims": {...}, "header": {...} (optional)}: each token's
payload exactly as given, and header members added to (or, with null, removed from) PyJWT's {"alg", "typ": "JWT"} and
the kid. "alg": "none" in a header signs nothing (an unsecured JWT). An entry's "key_file" (optional) signs that token
with another key than --key: a PEM private key the provider does not publish, or the bytes of an HMAC secret.

Prints one JSON object: name -> compact token.
"""

import argparse
import json

import jwt


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--key", required=True)
    parser.add_argument("--alg", required=True)
    parser.add_argument("--kid", required=True)
    parser.add_argument("--spec", required=True)
    args = parser.parse_args()
    spec_text = args.spec
    if spec_text.startswith("@"):
        with open(spec_text[1:]) as handle:
            spec_text = handle.read()
    spec = json.loads(spec_text)
    with open(args.key, "rb") as handle:
        key = handle.read()
    tokens = {}
    for name, entry in spec.items():
        header = {"kid": args.kid}
        header.update(entry.get("header", {}))
        algorithm = header.pop("alg", args.alg)
        signing_key = key
        if "key_file" in entry:
            with open(entry["key_file"], "rb") as handle:
                signing_key = handle.read()
        if algorithm == "none":
            tokens[name] = jwt.encode(entry["claims"], None, algorithm="none", headers=header)
        else:
            tokens[name] = jwt.encode(entry["claims"], signing_key, algorithm=algorithm, headers=header)
    print(json.dumps(tokens))


if __name__ == "__main__":
    main()
