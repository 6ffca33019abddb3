/* proc.h - a worker process that ends with the process that forked it (the --jobs workers of sweep,
 * their head preparation, and score). Header-only (no code to link).
 */
#ifndef SP_PROC_H
#define SP_PROC_H

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

/* fork(); in the child, a SIGKILL when `parent` (the caller's getpid() before the fork) dies, and an
 * immediate _exit(1) when it already has (it died before the request took effect). Returns what
 * fork() returns. */
static inline pid_t sp_fork_worker(pid_t parent) {
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
    }
    return pid;
}

#endif
