#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Keeps a message on one line: a control character echoed from hostile input (a tensor name or a
 * JSON string holding "\n") becomes a space. */
static void one_line(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7F) *s = ' ';
}

int sp_fail(SpErr *e, const char *fmt, ...) {
    if (!e) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    one_line(e->msg);
    return -1;
}

/* Whether msg already opens with prefix, then ": " (a model file given alone, whose reader names it in
 * its messages): prefixing it again would name the same file twice. */
static int names_already(const char *msg, const char *prefix) {
    size_t n = strlen(prefix);
    return n && !strncmp(msg, prefix, n) && msg[n] == ':' && msg[n + 1] == ' ';
}

int sp_err_prefix(SpErr *e, const char *fmt, ...) {
    if (!e) return -1;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (names_already(e->msg, prefix)) return -1;
    char old[sizeof e->msg];
    memcpy(old, e->msg, sizeof old);
    /* Truncation is acceptable here: the message stays a valid, shorter line. */
    size_t k = strlen(prefix);
    if (k > sizeof e->msg - 3) k = sizeof e->msg - 3;
    memcpy(e->msg, prefix, k);
    e->msg[k] = ':';
    e->msg[k + 1] = ' ';
    size_t room = sizeof e->msg - k - 3, ol = strlen(old);
    if (ol > room) ol = room;
    memcpy(e->msg + k + 2, old, ol);
    e->msg[k + 2 + ol] = '\0';
    one_line(e->msg);
    return -1;
}
