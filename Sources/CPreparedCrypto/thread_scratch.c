// The per-thread scratch of prepared_crypto.h's checks, and the digests they and Gatehouse's token
// keys hash with: each digest fetched from OpenSSL's provider once (a one-shot SHA256() fetches on
// every call), each hash done on the thread's own context.

#include "thread_scratch.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_made;
static EVP_MD *sha256, *sha384, *sha512;

static void scratch_free(void *pointer) {
    struct scratch *scratch = pointer;
    BN_CTX_free(scratch->ctx);
    BN_free(scratch->signature);
    BN_free(scratch->decoded);
    EVP_MD_CTX_free(scratch->digest);
    free(scratch);
}

static void scratch_key_make(void) {
    sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    sha384 = EVP_MD_fetch(NULL, "SHA384", NULL);
    sha512 = EVP_MD_fetch(NULL, "SHA512", NULL);
    scratch_key_made = sha256 != NULL && sha384 != NULL && sha512 != NULL && pthread_key_create(&scratch_key, scratch_free) == 0;
}

struct scratch *thread_scratch(void) {
    pthread_once(&scratch_once, scratch_key_make);
    if (!scratch_key_made) return NULL;
    struct scratch *scratch = pthread_getspecific(scratch_key);
    if (scratch != NULL) return scratch;
    scratch = calloc(1, sizeof *scratch);
    if (scratch == NULL) return NULL;
    scratch->ctx = BN_CTX_new();
    scratch->signature = BN_new();
    scratch->decoded = BN_new();
    scratch->digest = EVP_MD_CTX_new();
    if (scratch->ctx == NULL || scratch->signature == NULL || scratch->decoded == NULL || scratch->digest == NULL ||
        pthread_setspecific(scratch_key, scratch) != 0) {
        scratch_free(scratch);
        return NULL;
    }
    return scratch;
}

size_t gatehouse_digest_on(struct scratch *scratch, gatehouse_digest digest, const uint8_t *message, size_t message_len,
                           uint8_t *out) {
    const EVP_MD *md = digest == GATEHOUSE_SHA256 ? sha256 : digest == GATEHOUSE_SHA384 ? sha384 : digest == GATEHOUSE_SHA512 ? sha512 : NULL;
    unsigned int length = 0;
    if (md == NULL || !EVP_DigestInit_ex(scratch->digest, md, NULL) || !EVP_DigestUpdate(scratch->digest, message, message_len) ||
        !EVP_DigestFinal_ex(scratch->digest, out, &length)) {
        return 0;
    }
    return length;
}

int gatehouse_hash(gatehouse_digest digest, const uint8_t *message, size_t message_len, uint8_t *out) {
    struct scratch *scratch = thread_scratch();
    if (scratch == NULL) return 0;
    return (int)gatehouse_digest_on(scratch, digest, message, message_len, out);
}
