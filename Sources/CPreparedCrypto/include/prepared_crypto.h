#ifndef GATEHOUSE_PREPARED_CRYPTO_H
#define GATEHOUSE_PREPARED_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

/// An RSA public key prepared once for many verifications: its modulus and exponent as OpenSSL
/// numbers and its Montgomery context, all read-only after creation, so any thread may use it.
typedef struct gatehouse_rsa_key gatehouse_rsa_key;

/// The digests JWS signs with (RFC 7518 §3.3, §3.5).
typedef enum {
    GATEHOUSE_SHA256 = 256,
    GATEHOUSE_SHA384 = 384,
    GATEHOUSE_SHA512 = 512,
} gatehouse_digest;

/// The digest of `message` into `out` (64 bytes of room), its context on the stack: nothing allocated
/// (digest.c). Its length, or 0 when OpenSSL failed.
int gatehouse_hash(gatehouse_digest digest, const uint8_t *message, size_t message_len, uint8_t *out);

/// The key for big-endian `n` and `e`, or NULL when OpenSSL refuses it (an even or zero modulus,
/// a modulus over 16 384 bits, an exponent of zero or over 33 bits, no memory). Free it with `gatehouse_rsa_key_free`.
gatehouse_rsa_key *gatehouse_rsa_key_new(const uint8_t *n, size_t n_len, const uint8_t *e, size_t e_len);
void gatehouse_rsa_key_free(gatehouse_rsa_key *key);

/// The modulus in bits (its bytes are the length of every signature this key verifies).
int gatehouse_rsa_key_bits(const gatehouse_rsa_key *key);

/// 1 when `signature` is an RSASSA-PKCS1-v1_5 signature of `message` under `key` with `digest`,
/// else 0. The message is hashed here; the decoded block must equal the one encoding of that hash
/// byte for byte (RFC 8017 §8.2.2: encode and compare, never parse the padding).
int gatehouse_rsa_verify_pkcs1(const gatehouse_rsa_key *key, gatehouse_digest digest,
                               const uint8_t *message, size_t message_len,
                               const uint8_t *signature, size_t signature_len);

/// 1 when `signature` is an RSASSA-PSS signature of `message` under `key`, MGF1 with the same
/// digest and a salt as long as the digest (RFC 7518 §3.5), else 0 (RFC 8017 §8.1.2, §9.1.2).
int gatehouse_rsa_verify_pss(const gatehouse_rsa_key *key, gatehouse_digest digest,
                             const uint8_t *message, size_t message_len,
                             const uint8_t *signature, size_t signature_len);

#endif
