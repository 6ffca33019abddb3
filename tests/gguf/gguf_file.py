"""A GGUF v3 file read in plain Python, independent of the engine's reader (engine/model/gguf_read.c):
the metadata and the tensors' raw bytes, for the tests that check what export-gguf wrote."""
import struct

GGML_Q8_0 = 8
SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
TYPE_BYTES = {0: (4, 1), 1: (2, 1), 30: (2, 1), GGML_Q8_0: (34, 32)}  # ggml type: (bytes, values) per block


def gguf_read(path):
    """(metadata dict with arrays as lists, {tensor name: (ggml type, ne tuple, data bytes)})."""
    with open(path, "rb") as f:
        b = f.read()
    assert b[:4] == b"GGUF", path + ": not GGUF"
    pos = 4

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, b, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        n = take("<Q")
        s = b[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<i"), take("<Q")
            return [value(et) for _ in range(n)]
        return take(SCALAR[t])

    _version, n_tensors, n_kv = take("<I"), take("<Q"), take("<Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("<i"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        nd = take("<I")
        ne = tuple(take("<Q") for _ in range(nd))
        infos.append((name, ne, take("<i"), take("<Q")))
    align = kv.get("general.alignment", 32)
    data = (pos + align - 1) // align * align
    tensors = {}
    for name, ne, t, off in infos:
        n_values = 1
        for d in ne:
            n_values *= d
        per_block, values = TYPE_BYTES.get(t, (None, None))
        nbytes = n_values // values * per_block if per_block else 0  # a type this reader has no size for: no bytes
        tensors[name] = (t, ne, b[data + off:data + off + nbytes])
    return kv, tensors


def gguf_kv(path):
    """The metadata of a GGUF v3 file (arrays as lists)."""
    return gguf_read(path)[0]
