#ifndef GATEHOUSE_THREAD_SCRATCH_H
#define GATEHOUSE_THREAD_SCRATCH_H

#include "prepared_crypto.h"

#include <openssl/bn.h>

/// What one check works in, one per thread, kept between calls: the numbers of an RSA public operation.
struct scratch {
    BN_CTX *ctx;
    BIGNUM *signature;
    BIGNUM *decoded;
};

/// The calling thread's scratch, made on its first call and freed when the thread ends; NULL only
/// when OpenSSL could not make it.
struct scratch *thread_scratch(void);

#endif
