// The per-thread scratch of prepared_crypto.h's checks: the numbers of an RSA public operation.

#include "thread_scratch.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_made;

static void scratch_free(void *pointer) {
    struct scratch *scratch = pointer;
    BN_CTX_free(scratch->ctx);
    BN_free(scratch->signature);
    BN_free(scratch->decoded);
    free(scratch);
}

static void scratch_key_make(void) {
    scratch_key_made = pthread_key_create(&scratch_key, scratch_free) == 0;
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
    if (scratch->ctx == NULL || scratch->signature == NULL || scratch->decoded == NULL ||
        pthread_setspecific(scratch_key, scratch) != 0) {
        scratch_free(scratch);
        return NULL;
    }
    return scratch;
}
