/* mapguard.c - SIGBUS on a truncated mapped file as a one-line error (see mapguard.h). */
#include "mapguard.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct Mapping {
    volatile sig_atomic_t used;
    uintptr_t start;
    size_t len;
    char path[512];
} Mapping;

/* The table the handler reads (see mapguard.h for why it is global). */
static Mapping g_mappings[MAPGUARD_MAX];
static char g_program[64] = "sprinter";
static int g_installed;

/* Appends s to buf[*k..cap) (async-signal-safe: no stdio). */
static void put(char *buf, size_t cap, size_t *k, const char *s) {
    while (*s && *k + 1 < cap) buf[(*k)++] = *s++;
}

static void put_u(char *buf, size_t cap, size_t *k, uintptr_t v) {
    char digits[24];
    int n = 0;
    do digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < 24);
    while (n && *k + 1 < cap) buf[(*k)++] = digits[--n];
}

static void on_sigbus(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    uintptr_t addr = (uintptr_t)info->si_addr;
    for (int i = 0; i < MAPGUARD_MAX; i++) {
        const Mapping *m = &g_mappings[i];
        if (!m->used || addr < m->start || addr - m->start >= m->len) continue;
        char line[800];
        size_t k = 0;
        put(line, sizeof line, &k, g_program);
        put(line, sizeof line, &k, ": ");
        put(line, sizeof line, &k, m->path);
        put(line, sizeof line, &k, ": the file was truncated while in use (reading byte ");
        put_u(line, sizeof line, &k, addr - m->start);
        put(line, sizeof line, &k, " of the mapping raised SIGBUS); nothing was written after it, rerun\n");
        ssize_t w = write(STDERR_FILENO, line, k);
        (void)w;
        _exit(1);
    }
    signal(sig, SIG_DFL); /* not ours: the default action, as without mapguard */
    raise(sig);
}

void mapguard_set_program(const char *program) { snprintf(g_program, sizeof g_program, "%s", program); }

int mapguard_add(const void *start, size_t len, const char *path) {
    if (!g_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, NULL) != 0) return -1;
        g_installed = 1;
    }
    for (int i = 0; i < MAPGUARD_MAX; i++)
        if (!g_mappings[i].used) {
            g_mappings[i].start = (uintptr_t)start;
            g_mappings[i].len = len;
            snprintf(g_mappings[i].path, sizeof g_mappings[i].path, "%s", path);
            g_mappings[i].used = 1; /* last: the handler sees a complete entry */
            return 0;
        }
    return -1;
}

void mapguard_remove(const void *start) {
    for (int i = 0; i < MAPGUARD_MAX; i++)
        if (g_mappings[i].used && g_mappings[i].start == (uintptr_t)start) g_mappings[i].used = 0;
}
