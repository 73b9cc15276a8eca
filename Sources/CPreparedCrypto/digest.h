#ifndef GATEHOUSE_DIGEST_H
#define GATEHOUSE_DIGEST_H

#include "prepared_crypto.h"

#define MAX_DIGEST_BYTES 64

/// The digest of `message` into `out` (MAX_DIGEST_BYTES at most); its length, or 0 for an unknown digest.
size_t gatehouse_digest_into(gatehouse_digest digest, const uint8_t *message, size_t message_len, uint8_t *out);

#endif
