// The SHA-2 digests of token keys and RSA checks, on OpenSSL's own SHA-2 code with the context on the
// stack. OpenSSL 3's EVP interface allocates the algorithm's context on every EVP_DigestInit_ex, even
// on a context that already has one (a malloc and a free per hash, two per verified token), and its
// one-shot SHA256() fetches the digest from the provider on every call; the SHA256_Init family,
// deprecated for the provider model but the same assembly (SHA-NI where the CPU has it), does neither.

#define OPENSSL_SUPPRESS_DEPRECATED

#include "digest.h"

#include <openssl/sha.h>

size_t gatehouse_digest_into(gatehouse_digest digest, const uint8_t *message, size_t message_len, uint8_t *out) {
    switch (digest) {
    case GATEHOUSE_SHA256: {
        SHA256_CTX context;
        if (!SHA256_Init(&context) || !SHA256_Update(&context, message, message_len) || !SHA256_Final(out, &context)) return 0;
        return SHA256_DIGEST_LENGTH;
    }
    case GATEHOUSE_SHA384: {
        SHA512_CTX context;
        if (!SHA384_Init(&context) || !SHA384_Update(&context, message, message_len) || !SHA384_Final(out, &context)) return 0;
        return SHA384_DIGEST_LENGTH;
    }
    case GATEHOUSE_SHA512: {
        SHA512_CTX context;
        if (!SHA512_Init(&context) || !SHA512_Update(&context, message, message_len) || !SHA512_Final(out, &context)) return 0;
        return SHA512_DIGEST_LENGTH;
    }
    }
    return 0;
}

int gatehouse_hash(gatehouse_digest digest, const uint8_t *message, size_t message_len, uint8_t *out) {
    return (int)gatehouse_digest_into(digest, message, message_len, out);
}
