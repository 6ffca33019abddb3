/* fsutil.c - file-system helpers (see fsutil.h). */
#include "fsutil.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

int sp_mkdir_p(const char *path, SpErr *err) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return sp_fail(err, "%s: bad directory path", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return sp_fail(err, "%s: cannot create directory: %s", buf, strerror(errno));
        buf[i] = c;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return sp_fail(err, "%s: not a directory", path);
    return 0;
}
