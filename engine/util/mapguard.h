/* mapguard.h - a read-only file mapping whose file shrinks under it (another process truncated the
 * model file) makes the next read of a vanished page raise SIGBUS, which would kill the process
 * with no word about why. mapguard turns that into one line on stderr naming the file, then exits 1
 * (what any failed command exits; nothing is committed after it: the sweep redoes the run in
 * progress, as after a kill).
 *
 * The engine's one piece of process-wide state: a signal handler can find the mapping only through a
 * global. It is explicit and bounded: safetensors registers each mapping it makes and removes it
 * before unmapping; the CLI names the program for the message. The handler only reads the table and
 * calls write() and _exit(). A SIGBUS outside every registered mapping is re-raised with the default
 * action, as if mapguard were not there. Under AddressSanitizer, run with ASAN_OPTIONS=handle_sigbus=0
 * to let this handler act.
 */
#ifndef SP_MAPGUARD_H
#define SP_MAPGUARD_H

#include <stddef.h>

/* "sprinter sweep": the prefix of the message (default "sprinter"). Copied. */
void mapguard_set_program(const char *program);
/* Registers [start, start + len) as a mapping of path (installs the handler the first time).
 * Returns 0, or -1 when the table (MAPGUARD_MAX mappings) is full: the mapping then works as before,
 * only without the message. */
#define MAPGUARD_MAX 64
int mapguard_add(const void *start, size_t len, const char *path);
/* Forgets the mapping that starts at start (before munmap). */
void mapguard_remove(const void *start);

#endif
