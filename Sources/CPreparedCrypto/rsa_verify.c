// RSA signature verification with a public key prepared once (OpenSSL's libcrypto numbers).
//
// What a verification needs of a key, its modulus, exponent and Montgomery context, is made when
// the JWK is loaded and only read after, so one key serves every event loop. What a verification
// works in belongs to the calling thread (thread_scratch.c): a verification allocates nothing once
// its thread has made its scratch. The padding is checked here too, on stack buffers: PKCS #1 v1.5
// by encoding the expected block and comparing it whole, PSS by RFC 8017 §9.1.2 step by step. None of it is secret (a public key, a signature anyone can
// send), so nothing here needs to run in constant time.

#include "prepared_crypto.h"
#include "digest.h"
#include "thread_scratch.h"

#include <openssl/bn.h>
#include <stdlib.h>
#include <string.h>

// 16 384 bits: larger keys are refused (JWKs are 2048-4096 bits; the cost grows with the cube).
#define MAX_MODULUS_BYTES 2048
#define MAX_EXPONENT_BITS 33

struct gatehouse_rsa_key {
    BIGNUM *n;
    BIGNUM *e;
    BN_MONT_CTX *mont;
    size_t size;
    int bits;
};

// --- the key ------------------------------------------------------------------------------------

gatehouse_rsa_key *gatehouse_rsa_key_new(const uint8_t *n, size_t n_len, const uint8_t *e, size_t e_len) {
    // Lengths past any usable key are refused before OpenSSL reads them (its lengths are ints).
    if (n_len > 2 * MAX_MODULUS_BYTES || e_len > 2 * MAX_MODULUS_BYTES) return NULL;
    gatehouse_rsa_key *key = calloc(1, sizeof *key);
    BN_CTX *ctx = BN_CTX_new();
    if (key == NULL || ctx == NULL) goto fail;
    key->n = BN_bin2bn(n, (int)n_len, NULL);
    key->e = BN_bin2bn(e, (int)e_len, NULL);
    key->mont = BN_MONT_CTX_new();
    if (key->n == NULL || key->e == NULL || key->mont == NULL) goto fail;
    // Montgomery needs an odd modulus; an RSA modulus is one (a product of two odd primes).
    if (!BN_is_odd(key->n) || BN_num_bytes(key->n) > MAX_MODULUS_BYTES) goto fail;
    // An exponent over 33 bits is refused as BoringSSL refuses it: no issuer uses one, and each bit costs.
    if (BN_is_zero(key->e) || BN_num_bits(key->e) > MAX_EXPONENT_BITS) goto fail;
    if (!BN_MONT_CTX_set(key->mont, key->n, ctx)) goto fail;
    key->size = (size_t)BN_num_bytes(key->n);
    key->bits = BN_num_bits(key->n);
    BN_CTX_free(ctx);
    return key;
fail:
    BN_CTX_free(ctx);
    gatehouse_rsa_key_free(key);
    return NULL;
}

void gatehouse_rsa_key_free(gatehouse_rsa_key *key) {
    if (key == NULL) return;
    BN_free(key->n);
    BN_free(key->e);
    BN_MONT_CTX_free(key->mont);
    free(key);
}

int gatehouse_rsa_key_bits(const gatehouse_rsa_key *key) { return key->bits; }

// RSAVP1 (RFC 8017 §5.2.2) and I2OSP: `signature`^e mod n into `decoded` as key->size big-endian
// bytes. 0 when the signature is not key->size bytes or not a number below n.
static int public_operation(struct scratch *scratch, const gatehouse_rsa_key *key, const uint8_t *signature, size_t signature_len,
                            uint8_t *decoded) {
    if (signature_len != key->size) return 0;
    if (BN_bin2bn(signature, (int)signature_len, scratch->signature) == NULL) return 0;
    if (BN_ucmp(scratch->signature, key->n) >= 0) return 0;
    if (!BN_mod_exp_mont(scratch->decoded, scratch->signature, key->e, key->n, scratch->ctx, key->mont)) return 0;
    return BN_bn2binpad(scratch->decoded, decoded, (int)key->size) == (int)key->size;
}

// What both checks begin with: the message's digest into `hash` and the signature's decoded block
// into `decoded` (key->size bytes), on the thread's scratch. The digest's length, or 0 on any failure.
static size_t hash_and_decode(struct scratch **scratch, const gatehouse_rsa_key *key, gatehouse_digest digest,
                              const uint8_t *message, size_t message_len, const uint8_t *signature, size_t signature_len,
                              uint8_t *hash, uint8_t *decoded) {
    *scratch = thread_scratch();
    if (*scratch == NULL) return 0;
    size_t hash_len = gatehouse_digest_into(digest, message, message_len, hash);
    if (hash_len == 0 || !public_operation(*scratch, key, signature, signature_len, decoded)) return 0;
    return hash_len;
}

// --- RSASSA-PKCS1-v1_5 --------------------------------------------------------------------------

// The DER DigestInfo before the hash (RFC 8017 §9.2, note 1), parameters NULL as the RFC writes them.
static const uint8_t sha256_prefix[] = {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
                                        0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20};
static const uint8_t sha384_prefix[] = {0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
                                        0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30};
static const uint8_t sha512_prefix[] = {0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
                                        0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40};

int gatehouse_rsa_verify_pkcs1(const gatehouse_rsa_key *key, gatehouse_digest digest,
                               const uint8_t *message, size_t message_len,
                               const uint8_t *signature, size_t signature_len) {
    struct scratch *scratch;
    uint8_t hash[MAX_DIGEST_BYTES], decoded[MAX_MODULUS_BYTES];
    size_t hash_len = hash_and_decode(&scratch, key, digest, message, message_len, signature, signature_len, hash, decoded);
    if (hash_len == 0) return 0;
    const uint8_t *prefix = digest == GATEHOUSE_SHA256 ? sha256_prefix : digest == GATEHOUSE_SHA384 ? sha384_prefix : sha512_prefix;
    size_t prefix_len = sizeof sha256_prefix;  // the three are the same length

    // EMSA-PKCS1-v1_5 (RFC 8017 §9.2): 00 01 FF..FF 00 DigestInfo, at least 8 bytes of FF.
    size_t k = key->size, t_len = prefix_len + hash_len;
    if (k < t_len + 11) return 0;
    uint8_t expected[MAX_MODULUS_BYTES];
    expected[0] = 0x00;
    expected[1] = 0x01;
    memset(expected + 2, 0xff, k - t_len - 3);
    expected[k - t_len - 1] = 0x00;
    memcpy(expected + k - t_len, prefix, prefix_len);
    memcpy(expected + k - hash_len, hash, hash_len);
    return memcmp(decoded, expected, k) == 0;
}

// --- RSASSA-PSS ---------------------------------------------------------------------------------

// MGF1 (RFC 8017 §B.2.1) with `digest`, XORed into `mask_into` (mask_len bytes); 0 when a digest failed.
static int xor_mgf1(struct scratch *scratch, gatehouse_digest digest, const uint8_t *seed, size_t seed_len, uint8_t *mask_into, size_t mask_len) {
    uint8_t input[MAX_DIGEST_BYTES + 4], block[MAX_DIGEST_BYTES];
    memcpy(input, seed, seed_len);
    size_t done = 0;
    for (uint32_t counter = 0; done < mask_len; counter++) {
        input[seed_len] = (uint8_t)(counter >> 24);
        input[seed_len + 1] = (uint8_t)(counter >> 16);
        input[seed_len + 2] = (uint8_t)(counter >> 8);
        input[seed_len + 3] = (uint8_t)counter;
        size_t block_len = gatehouse_digest_into(digest, input, seed_len + 4, block);
        if (block_len == 0) return 0;
        for (size_t i = 0; i < block_len && done < mask_len; i++) mask_into[done++] ^= block[i];
    }
    return 1;
}

int gatehouse_rsa_verify_pss(const gatehouse_rsa_key *key, gatehouse_digest digest,
                             const uint8_t *message, size_t message_len,
                             const uint8_t *signature, size_t signature_len) {
    struct scratch *scratch;
    uint8_t m_hash[MAX_DIGEST_BYTES], decoded[MAX_MODULUS_BYTES];
    size_t h_len = hash_and_decode(&scratch, key, digest, message, message_len, signature, signature_len, m_hash, decoded);
    if (h_len == 0) return 0;
    size_t s_len = h_len;

    // §8.1.2 step 2c: EM is emLen = ceil((modBits - 1) / 8) bytes; a leading byte beyond it must be 0.
    size_t em_bits = (size_t)key->bits - 1;
    size_t em_len = (em_bits + 7) / 8;
    uint8_t *em = decoded;
    if (em_len < key->size) {
        if (decoded[0] != 0) return 0;
        em = decoded + 1;
    }
    // §9.1.2 steps 3-6.
    if (em_len < h_len + s_len + 2) return 0;
    if (em[em_len - 1] != 0xbc) return 0;
    size_t db_len = em_len - h_len - 1;
    uint8_t *db = em;  // maskedDB, unmasked in place
    const uint8_t *h = em + db_len;
    uint8_t top_mask = (uint8_t)(0xff >> (8 * em_len - em_bits));
    if ((db[0] & ~top_mask) != 0) return 0;
    // Steps 7-11: DB = maskedDB xor MGF(H), its top bits cleared; PS zeros, then 0x01, then the salt.
    if (!xor_mgf1(scratch, digest, h, h_len, db, db_len)) return 0;
    db[0] &= top_mask;
    size_t ps_len = em_len - h_len - s_len - 2;
    for (size_t i = 0; i < ps_len; i++) {
        if (db[i] != 0) return 0;
    }
    if (db[ps_len] != 0x01) return 0;
    // Steps 12-14: H' = Hash(00 x 8 || mHash || salt) must be H.
    uint8_t m_prime[8 + 2 * MAX_DIGEST_BYTES], h_prime[MAX_DIGEST_BYTES];
    memset(m_prime, 0, 8);
    memcpy(m_prime + 8, m_hash, h_len);
    memcpy(m_prime + 8 + h_len, db + db_len - s_len, s_len);
    if (gatehouse_digest_into(digest, m_prime, 8 + h_len + s_len, h_prime) != h_len) return 0;
    return memcmp(h, h_prime, h_len) == 0;
}
