#ifndef GATEHOUSE_THREAD_SCRATCH_H
#define GATEHOUSE_THREAD_SCRATCH_H

#include "prepared_crypto.h"

#include <openssl/bn.h>
#include <openssl/evp.h>

#define MAX_DIGEST_BYTES 64

/// What one check works in, one per thread, kept between calls: the numbers of an RSA public
/// operation and a digest context.
struct scratch {
    BN_CTX *ctx;
    BIGNUM *signature;
    BIGNUM *decoded;
    EVP_MD_CTX *digest;
};

/// The calling thread's scratch, made on its first call and freed when the thread ends; NULL only
/// when OpenSSL could not make it.
struct scratch *thread_scratch(void);

/// The digest of `message` into `out` (MAX_DIGEST_BYTES at most) on the scratch's digest context;
/// its length, or 0 for an unknown digest or a failure.
size_t gatehouse_digest_on(struct scratch *scratch, gatehouse_digest digest, const uint8_t *message, size_t message_len,
                           uint8_t *out);

#endif
