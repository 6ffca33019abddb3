/* damage_h5.c - the exact token-log corruptions of issue 27, class 1, for tests/test_tokenlog_damage.py.
 *
 *   damage_h5 dimbyte FILE DSET    zeroes the dimensionality byte of DSET's chunked-layout message
 *                                  (libhdf5 1.10 then divides by zero in H5D__chunk_set_info: SIGFPE)
 *   damage_h5 chunkkey FILE DSET   flips the 8 bytes of the first chunk offset in DSET's chunk index
 *                                  (v1 B-tree): the chunk is not found and reads as zeros, no error
 * The dataset's object header is found by H5Oget_info1 (its address); the layout message (type 8,
 * version 3, class 2 = chunked) inside it by its bytes. Exit 0 when the file was changed. */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *slurp(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*n);
    if (b && fread(b, 1, (size_t)*n, f) != (size_t)*n) free(b), b = NULL;
    fclose(f);
    return b;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "dimbyte") && strcmp(argv[1], "chunkkey")))
        return fprintf(stderr, "usage: damage_h5 dimbyte|chunkkey FILE DSET\n"), 2;
    const char *path = argv[2];
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = f >= 0 ? H5Dopen2(f, argv[3], H5P_DEFAULT) : -1;
    H5O_info_t info;
    if (d < 0 || H5Oget_info1(d, &info) < 0) return fprintf(stderr, "damage_h5: %s: cannot open /%s\n", path, argv[3]), 1;
    H5Dclose(d), H5Fclose(f);
    long n = 0;
    unsigned char *b = slurp(path, &n);
    if (!b) return fprintf(stderr, "damage_h5: %s: cannot read\n", path), 1;
    long at = -1;
    /* message header (v1 object header): type u16 = 8, size u16, flags u8, 3 reserved; then 03 02 ndims */
    for (long i = (long)info.addr; i + 19 < n && i < (long)info.addr + 4096; i++)
        if (b[i] == 8 && b[i + 1] == 0 && b[i + 5] == 0 && b[i + 6] == 0 && b[i + 7] == 0 && b[i + 8] == 3 &&
            b[i + 9] == 2 && b[i + 10] >= 2 && b[i + 10] <= 3) {
            at = i + 10;
            break;
        }
    if (at < 0) return fprintf(stderr, "damage_h5: %s: no chunked-layout message for /%s\n", path, argv[3]), 1;
    if (!strcmp(argv[1], "dimbyte")) {
        b[at] = 0;
    } else {
        uint64_t bt = 0;
        for (int k = 7; k >= 0; k--) bt = bt << 8 | b[at + 1 + k];
        if ((long)bt + 48 > n || memcmp(b + bt, "TREE", 4))
            return fprintf(stderr, "damage_h5: %s: /%s has no v1 B-tree chunk index\n", path, argv[3]), 1;
        for (int k = 0; k < 8; k++) b[bt + 24 + 8 + k] ^= 0xff; /* key 0: size u32, mask u32, offset[0] u64 */
    }
    FILE *o = fopen(path, "r+b");
    if (!o || fwrite(b, 1, (size_t)n, o) != (size_t)n || fclose(o))
        return fprintf(stderr, "damage_h5: %s: cannot write\n", path), 1;
    free(b);
    return 0;
}
