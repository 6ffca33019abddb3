/* error.h - errors as values.
 *
 * Every fallible function takes an `SpErr *` as its last argument, fills it with one line of
 * context ("model.safetensors: tensor wte.weight has shape [50257,768], config says [50257,769]")
 * and returns a negative value (or NULL). Callers may prepend context with sp_err_prefix().
 * Only main() prints and exits. No global state.
 */
#ifndef SP_ERROR_H
#define SP_ERROR_H

#include <stddef.h>

typedef struct SpErr {
    char msg[1024];
} SpErr;

/* Formats the message into e (if e is non-NULL) and returns -1. Control characters in the result
 * (say a "\n" echoed from a hostile file) become spaces, so the message stays one line. */
int sp_fail(SpErr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends "prefix: " to the current message. Returns -1. */
int sp_err_prefix(SpErr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
