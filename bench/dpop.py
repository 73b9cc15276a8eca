#!/usr/bin/env python3
"""Signs the DPoP proofs of scenario f: one fresh proof (ES256, new jti, iat = now) per request, as DPoP
clients send, for GET URL with bench/mint.py's dpop-token and its key. Run just before the measurement:
a proof is accepted for [dpop] proof_lifetime + leeway (120 s by default) after its iat.

Usage: dpop.py OUTDIR URL COUNT   (writes OUTDIR/dpop-proofs, one per line; signed by one worker per CPU)
"""
import base64, hashlib, json, multiprocessing, sys, time, uuid
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

out, url, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(f"{out}/dpop-key.pem", "rb") as f:
    key = serialization.load_pem_private_key(f.read(), password=None)
token = open(f"{out}/dpop-token").read().strip()
point = key.public_key().public_numbers()
jwk = {"kty": "EC", "crv": "P-256", "x": b64(point.x.to_bytes(32, "big")), "y": b64(point.y.to_bytes(32, "big"))}
header = b64(json.dumps({"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk}, separators=(",", ":")).encode())
ath = b64(hashlib.sha256(token.encode()).digest())

def proof(_: int) -> str:
    claims = {"jti": str(uuid.uuid4()), "htm": "GET", "htu": url, "iat": int(time.time()), "ath": ath}
    signing_input = header + "." + b64(json.dumps(claims, separators=(",", ":")).encode())
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return signing_input + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

with multiprocessing.get_context("fork").Pool() as workers:
    proofs = workers.map(proof, range(count), chunksize=1000)
with open(f"{out}/dpop-proofs", "w") as f:
    f.write("\n".join(proofs) + "\n")
