#!/usr/bin/env python3
"""Makes prepared_rsa_vectors.json: RSA signatures over hand-built encoded blocks, each breaking one rule of
RFC 8017 that Wycheproof's 2048-bit files leave untried (the first byte of a PKCS #1 v1.5 block, PSS's unused top
bits, PSS on a modulus whose bit length is 1 mod 8), beside valid ones. Signed with Python's own integers
(pow(m, d, n)), so a block can be anything below n. Run again to make fresh keys; the test reads the file.

    python3 make_vectors.py > prepared_rsa_vectors.json
"""
import hashlib, json, os

MESSAGE = b"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0"
SHA256_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
SHA256_INFO_NO_NULL = bytes.fromhex("302f300b0609608648016503040201" "0420")

def probable_prime(bits):
    """A random prime of exactly `bits` bits with its top two bits set (Miller-Rabin, 40 rounds)."""
    while True:
        candidate = int.from_bytes(os.urandom(bits // 8 + 1), "big") >> (8 * (bits // 8 + 1) - bits)
        candidate |= (3 << (bits - 2)) | 1
        if all(candidate % p for p in (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)) and miller_rabin(candidate):
            return candidate

def miller_rabin(n, rounds=40):
    r, s = 0, n - 1
    while s % 2 == 0:
        r, s = r + 1, s // 2
    for _ in range(rounds):
        x = pow(2 + int.from_bytes(os.urandom(32), "big") % (n - 3), s, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True

def key(bits, top_at_least):
    """A key of exactly `bits` bits whose modulus's first byte is at least top_at_least: (n, d), e = 65537."""
    while True:
        p, q = probable_prime((bits + 1) // 2), probable_prime(bits // 2)
        n, phi = p * q, (p - 1) * (q - 1)
        if p == q or phi % 65537 == 0 or n.bit_length() != bits:
            continue
        if n.to_bytes((bits + 7) // 8, "big")[0] >= top_at_least:
            return n, pow(65537, -1, phi)

def sign(n, d, block):
    m = int.from_bytes(block, "big")
    assert m < n, "block not below the modulus"
    return pow(m, d, n).to_bytes((n.bit_length() + 7) // 8, "big")

def pkcs1_block(k, info, digest, first=0x00):
    t = info + digest
    return bytes([first, 0x01]) + b"\xff" * (k - len(t) - 3) + b"\x00" + t

def mgf1(seed, length):
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]

def pss_block(mod_bits, digest, salt, top_bits=0, trailer=0xBC):
    """EMSA-PSS-ENCODE (RFC 8017 §9.1.1), emBits = modBits - 1; top_bits ORed into the first byte after masking."""
    em_bits = mod_bits - 1
    em_len = (em_bits + 7) // 8
    h = hashlib.sha256(b"\x00" * 8 + digest + salt).digest()
    db = b"\x00" * (em_len - len(salt) - len(h) - 2) + b"\x01" + salt
    masked = bytearray(a ^ b for a, b in zip(db, mgf1(h, len(db))))
    masked[0] &= 0xFF >> (8 * em_len - em_bits)
    masked[0] |= top_bits
    return bytes(masked) + h + bytes([trailer])

def below(n, make):
    """make() with fresh salts until its block is a number below n."""
    while True:
        block = make()
        if int.from_bytes(block, "big") < n:
            return block

def case(name, n, alg, block_or_sig, valid, d=None, signature=None):
    sig = signature if signature is not None else sign(n, d, block_or_sig)
    return {"name": name, "n": n.to_bytes((n.bit_length() + 7) // 8, "big").hex(), "e": "010001", "alg": alg, "msg": MESSAGE.hex(), "sig": sig.hex(), "valid": valid}

digest = hashlib.sha256(MESSAGE).digest()
n, d = key(2048, 0xC0)
k = 256
cases = [
    case("pkcs1: valid", n, "RS256", pkcs1_block(k, SHA256_INFO, digest), True, d),
    case("pkcs1: first byte 01, not 00", n, "RS256", pkcs1_block(k, SHA256_INFO, digest, first=0x01), False, d),
    case("pkcs1: DigestInfo without its NULL parameters", n, "RS256", pkcs1_block(k, SHA256_INFO_NO_NULL, digest), False, d),
    case("pkcs1: block type 02", n, "RS256", b"\x00\x02" + pkcs1_block(k, SHA256_INFO, digest)[2:], False, d),
    case("pkcs1: signature equal to n", n, "RS256", None, False, signature=n.to_bytes(k, "big")),
    case("pkcs1: signature one byte short", n, "RS256", None, False, signature=sign(n, d, pkcs1_block(k, SHA256_INFO, digest))[1:]),
    case("pss: valid", n, "PS256", pss_block(2048, digest, os.urandom(32)), True, d),
    case("pss: the unused top bit set", n, "PS256", below(n, lambda: pss_block(2048, digest, os.urandom(32), top_bits=0x80)), False, d),
    case("pss: trailer bd, not bc", n, "PS256", pss_block(2048, digest, os.urandom(32), trailer=0xBD), False, d),
    case("pss: salt of 20 bytes, not 32", n, "PS256", pss_block(2048, digest, os.urandom(20)), False, d),
]
# A 2049-bit modulus: EM is one byte shorter than the signature, whose first byte must then be 0.
n2, d2 = key(2049, 0x01)
k2 = 257
cases.append(case("pss 2049-bit: valid", n2, "PS256", b"\x00" + pss_block(2049, digest, os.urandom(32)), True, d2))
cases.append(case("pss 2049-bit: the byte before EM is 01", n2, "PS256",
                  below(n2, lambda: b"\x01" + pss_block(2049, digest, os.urandom(32))), False, d2))
cases.append(case("pkcs1 2049-bit: valid", n2, "RS256", pkcs1_block(k2, SHA256_INFO, digest), True, d2))
print(json.dumps({"comment": "made by make_vectors.py", "cases": cases}, indent=1))
