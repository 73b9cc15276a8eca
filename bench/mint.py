#!/usr/bin/env python3
"""Makes the benchmark's identity provider: an RSA-2048 key, its JWKS, and RS256 tokens.

Usage: mint.py OUTDIR ISSUER AUDIENCE POOLSIZE
Writes OUTDIR/jwks.json, OUTDIR/pubkey.pem (the same public key as PEM SubjectPublicKeyInfo:
HAProxy's jwt_verify takes a key file, not a JWKS), OUTDIR/token (one valid token), OUTDIR/tokens
(POOLSIZE distinct valid tokens, one per line), OUTDIR/bad-tokens (tokens with a wrong signature,
one per line), OUTDIR/dpop-token (a valid token bound with cnf.jkt to the P-256 key in
OUTDIR/dpop-key.pem, for bench/dpop.py's proofs), OUTDIR/rules-token (a valid token with the claims
bench/routes.sh's rules read: tenant, level and a ten-element teams list).
The pool is signed by one worker process per CPU (the keys are inherited through fork).
"""
import base64, json, multiprocessing, sys, time
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

def uint(n: int) -> bytes:
    return n.to_bytes((n.bit_length() + 7) // 8, "big")

out, issuer, audience, pool = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
numbers = key.public_key().public_numbers()
jwk = {"kty": "RSA", "kid": "bench-1", "alg": "RS256", "use": "sig", "n": b64(uint(numbers.n)), "e": b64(uint(numbers.e))}
with open(f"{out}/jwks.json", "w") as f:
    json.dump({"keys": [jwk]}, f)
with open(f"{out}/pubkey.pem", "wb") as f:
    f.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                          serialization.PublicFormat.SubjectPublicKeyInfo))

def token(subject: str, signer, extra=None) -> str:
    now = int(time.time())
    header = b64(json.dumps({"alg": "RS256", "kid": "bench-1", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = {"iss": issuer, "aud": audience, "sub": subject, "iat": now, "exp": now + 7200,
              "email": f"{subject}@example.com", "email_verified": True, "name": "Bench User", **(extra or {})}
    payload = b64(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode()
    signature = signer.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{payload}.{b64(signature)}"

with open(f"{out}/token", "w") as f:
    f.write(token("user-0", key))
with open(f"{out}/sid-token", "w") as f:  # bench/logout.sh: a token of a provider session (OIDC back-channel logout's sid)
    f.write(token("user-sid", key, {"sid": "bench-session"}))
with open(f"{out}/rules-token", "w") as f:
    f.write(token("user-rules", key, {"tenant": "acme", "level": 3, "teams": [f"team-{i}" for i in range(10)]}))

def pool_token(i: int) -> str:
    return token(f"user-{i}", key)

with multiprocessing.get_context("fork").Pool() as workers:
    pool_tokens = workers.map(pool_token, range(1, pool + 1), chunksize=500)  # user-0 is "token"
with open(f"{out}/tokens", "w") as f:
    f.write("\n".join(pool_tokens) + "\n")
with open(f"{out}/bad-tokens", "w") as f:
    f.write("\n".join(token(f"user-{i}", other) for i in range(64)) + "\n")

# DPoP: the client's P-256 key, and a token bound to its RFC 7638 thumbprint.
dpop_key = ec.generate_private_key(ec.SECP256R1())
with open(f"{out}/dpop-key.pem", "wb") as f:
    f.write(dpop_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))
point = dpop_key.public_key().public_numbers()
canonical = json.dumps({"crv": "P-256", "kty": "EC", "x": b64(point.x.to_bytes(32, "big")),
                        "y": b64(point.y.to_bytes(32, "big"))}, separators=(",", ":"), sort_keys=True)
digest = hashes.Hash(hashes.SHA256())
digest.update(canonical.encode())
with open(f"{out}/dpop-token", "w") as f:
    f.write(token("user-dpop", key, {"cnf": {"jkt": b64(digest.finalize())}}))
