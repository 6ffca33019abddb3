/* craft_h5.c - writes the hand-made HDF5 seeds of fuzz/corpus/{h5,tokread}: files whose chunked
 * datasets claim many rows while nothing is written (HDF5 reads unwritten chunks as fill values, so
 * a reader that trusts the extent allocates and fills gigabytes for a 5 kB file).
 *
 *   craft_h5 tokenlog OUT.h5 ROWS    the 12 token-log columns (+ hidden), ROWS rows each
 *   craft_h5 collect OUT.h5 ROWS     a verifier collect file (format "sprinter-collect", lambda,
 *                                     draft_sha256; hidden [ROWS, 16], q, p, label, ...)
 * Build: gcc craft_h5.c -o craft_h5 $(pkg-config --cflags --libs hdf5)   (fuzz/make_seeds.py does) */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void str_attr(hid_t f, const char *n, const char *v) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    hid_t s = H5Screate(H5S_SCALAR), a = H5Acreate2(f, n, t, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, v);
    H5Aclose(a), H5Sclose(s), H5Tclose(t);
}

static int column(hid_t f, const char *name, hid_t type, unsigned long long rows, int width) {
    int rank = width > 1 ? 2 : 1;
    hsize_t d[2] = {rows, (hsize_t)width}, m[2] = {H5S_UNLIMITED, (hsize_t)width}, c[2] = {4096, (hsize_t)width};
    hid_t sp = H5Screate_simple(rank, d, m), pl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(pl, rank, c);
    hid_t ds = H5Dcreate2(f, name, type, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
    H5Pclose(pl), H5Sclose(sp);
    if (ds < 0) return fprintf(stderr, "craft_h5: cannot create %s\n", name), -1;
    H5Dclose(ds);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "tokenlog") && strcmp(argv[1], "collect"))) {
        fprintf(stderr, "usage: craft_h5 tokenlog|collect OUT.h5 ROWS\n");
        return 2;
    }
    unsigned long long rows = strtoull(argv[3], NULL, 0);
    hid_t f = H5Fcreate(argv[2], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return 1;
    int rc = 0;
    if (!strcmp(argv[1], "tokenlog")) {
        static const char *const names[] = {"run_id", "prompt_index", "pos", "token", "draft_token", "q", "p",
                                            "score", "decision", "label", "target_called", "kind", "hidden"};
        hid_t types[] = {H5T_STD_I64LE, H5T_STD_I32LE, H5T_STD_I32LE, H5T_STD_I32LE, H5T_STD_I32LE,
                         H5T_IEEE_F32LE, H5T_IEEE_F32LE, H5T_IEEE_F32LE, H5T_STD_I8LE, H5T_STD_I8LE,
                         H5T_STD_I8LE, H5T_STD_I8LE, H5T_IEEE_F32LE};
        for (int i = 0; i < 13 && !rc; i++) rc = column(f, names[i], types[i], rows, 1);
    } else {
        str_attr(f, "format", "sprinter-collect");
        str_attr(f, "draft_sha256", "0000000000000000000000000000000000000000000000000000000000000000");
        double lambda = 1.5;
        hid_t s = H5Screate(H5S_SCALAR), a = H5Acreate2(f, "lambda", H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, H5T_NATIVE_DOUBLE, &lambda);
        H5Aclose(a), H5Sclose(s);
        rc = column(f, "hidden", H5T_IEEE_F32LE, rows, 16) || column(f, "q", H5T_IEEE_F32LE, rows, 1) ||
             column(f, "p", H5T_IEEE_F32LE, rows, 1) || column(f, "label", H5T_STD_I8LE, rows, 1) ||
             column(f, "token", H5T_STD_I32LE, rows, 1) || column(f, "pos", H5T_STD_I32LE, rows, 1) ||
             column(f, "prompt_index", H5T_STD_I32LE, rows, 1);
    }
    H5Fclose(f);
    return rc ? 1 : 0;
}
