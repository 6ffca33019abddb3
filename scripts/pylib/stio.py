"""Minimal safetensors reader/writer (json + struct + numpy only).

File layout: u64 little-endian header length N, N bytes of JSON
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
then the data buffer; offsets are relative to the start of the data buffer.

bf16 is held in numpy as uint16 (the top 16 bits of a float32).

The one safetensors module of the Python side: the oracle and fault tests (tests/), the trainers
(data/train/) and the PyTorch baseline (bench/) all import it. An importer puts this directory
(scripts/pylib, found relative to its own __file__) on sys.path first.
"""
import json
import os
import struct

import numpy as np

# dtype name -> (numpy storage dtype, bytes per element)
DTYPES = {
    "F32": (np.dtype("<f4"), 4),
    "F16": (np.dtype("<f2"), 2),
    "BF16": (np.dtype("<u2"), 2),
    "F64": (np.dtype("<f8"), 8),
}


# ---------------------------------------------------------------- bf16 helpers
def f32_to_bf16_bits(a):
    """float32 array -> uint16 bf16 bits, round-to-nearest-even (NaN kept NaN)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    rounding = ((u >> 16) & 1) + 0x7FFF
    r = ((u + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        r[nan] = 0x7FC0
    return r


def bf16_bits_to_f32(b):
    b = np.ascontiguousarray(b, dtype=np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32)


def to_storage(a, dtype):
    """float array -> numpy array in the storage representation for `dtype`."""
    a = np.asarray(a)
    if dtype == "F32":
        return np.ascontiguousarray(a, dtype="<f4")
    if dtype == "F16":
        with np.errstate(over="ignore"):  # e.g. masked_bias -1e9 -> -inf
            return np.ascontiguousarray(a.astype(np.float32).astype("<f2"))
    if dtype == "BF16":
        if a.dtype == np.uint16:
            return np.ascontiguousarray(a)
        return f32_to_bf16_bits(a.astype(np.float32))
    if dtype == "F64":
        return np.ascontiguousarray(a, dtype="<f8")
    raise ValueError("unsupported dtype " + dtype)


def to_f32(stored, dtype):
    """storage representation -> float32 (exact widening for F16/BF16)."""
    if dtype == "BF16":
        return bf16_bits_to_f32(stored)
    return np.asarray(stored).astype(np.float32)


# ---------------------------------------------------------------- reading
def read_header(path):
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: shorter than 8 bytes")
        (n,) = struct.unpack("<Q", raw)
        hdr = f.read(n)
        if len(hdr) != n:
            raise ValueError(f"{path}: header length {n} exceeds file")
    return n, json.loads(hdr.decode("utf-8"))


def check_dtypes(path, allowed, complaint):
    """Refuse a file holding a tensor whose dtype is not in `allowed`, before any data is read:
    ValueError(complaint.format(path=, name=, dtype=)) for the first such tensor in header order."""
    _, header = read_header(path)
    for name, info in header.items():
        if name != "__metadata__" and info["dtype"] not in allowed:
            raise ValueError(complaint.format(path=path, name=name, dtype=info["dtype"]))


def read_raw(path):
    """-> (tensors {name: (dtype, shape, stored ndarray)}, metadata, order).

    The data is mapped, not read, and every tensor copied out of the map: each array is aligned and
    owned, and a large model (bench/torch_models.py) is not held twice in memory."""
    n, header = read_header(path)
    meta = header.pop("__metadata__", None)
    buf = np.memmap(path, dtype=np.uint8, mode="r")[8 + n:]
    out = {}
    for name, info in header.items():
        dt = info["dtype"]
        shape = tuple(int(s) for s in info["shape"])
        b, e = info["data_offsets"]
        if dt not in DTYPES:
            raise ValueError(f"{path}: {name}: unsupported dtype {dt}")
        npdt, size = DTYPES[dt]
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not (0 <= b <= e <= len(buf)) or e - b != count * size:
            raise ValueError(f"{path}: {name}: bad data_offsets {b},{e}")
        arr = np.frombuffer(buf[b:e], dtype=npdt).reshape(shape).copy()
        out[name] = (dt, shape, arr)
    order = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    return out, meta, order


def read_f32(path):
    """-> ({name: float32 ndarray}, metadata, {name: dtype})."""
    raw, meta, _ = read_raw(path)
    return ({k: to_f32(a, dt) for k, (dt, _, a) in raw.items()}, meta,
            {k: dt for k, (dt, _, _) in raw.items()})


def load_model_tensors(model_dir):
    """Load every tensor of a HF model directory (single or sharded) as float32.

    Returns ({name: float32 ndarray}, {name: stored dtype})."""
    single = os.path.join(model_dir, "model.safetensors")
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            wm = json.load(f)["weight_map"]
        files = sorted(set(wm.values()))
        tensors, dtypes = {}, {}
        for fn in files:
            t, _, d = read_f32(os.path.join(model_dir, fn))
            tensors.update(t)
            dtypes.update(d)
        missing = [k for k in wm if k not in tensors]
        if missing:
            raise ValueError(f"{index}: tensors not found in shards: {missing[:3]}")
        return tensors, dtypes
    t, _, d = read_f32(single)
    return t, d


# ---------------------------------------------------------------- writing
def build_bytes(items, metadata=None, align=8, pad_char=b" "):
    """items: list of (name, dtype, shape, raw_bytes) in file order.

    Returns the complete file as bytes.  align: pad the header with spaces so
    the data buffer starts at a multiple of `align` (HF does 8); align=1 or 0
    means no padding."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    off = 0
    for name, dt, shape, data in items:
        header[name] = {"dtype": dt, "shape": list(shape),
                        "data_offsets": [off, off + len(data)]}
        off += len(data)
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if align and align > 1:
        pad = (-(8 + len(hj))) % align
        hj += pad_char * pad
    return struct.pack("<Q", len(hj)) + hj + b"".join(d for _, _, _, d in items)


def write(path, tensors, dtype="F32", order=None, metadata=None, align=8,
          dtypes=None, atomic=False):
    """tensors: {name: float ndarray}; dtype: storage dtype for all tensors
    (or per-tensor through `dtypes`); order: list of names giving file order.
    atomic: write path + ".tmp" and rename it, so a reader never sees half a file."""
    names = list(order) if order is not None else list(tensors)
    items = []
    for name in names:
        dt = (dtypes or {}).get(name, dtype)
        st = to_storage(tensors[name], dt)
        items.append((name, dt, st.shape, st.tobytes()))
    data = build_bytes(items, metadata, align)
    dest = path + ".tmp" if atomic else path
    with open(dest, "wb") as f:
        f.write(data)
    if atomic:
        os.replace(dest, path)
    return data


# ---------------------------------------------------------------- the trainers' F32 files
# data/train/ (gpt2.py, llama.py) writes and reads F32 only: tensors in sorted name order,
# __metadata__ {"format": "pt"}, header padded to a multiple of 8, written through a rename.
def save_f32(tensors, path):
    """tensors: {name: float32 ndarray} -> path, as the trainers export a model."""
    write(path, tensors, dtype="F32", order=sorted(tensors), metadata={"format": "pt"},
          align=8, atomic=True)


def load_f32(path):
    """-> {name: float32 ndarray} in header order; any dtype but F32 is refused."""
    check_dtypes(path, ("F32",), "{path}: tensor {name}: dtype {dtype} (only F32 supported)")
    raw, _, _ = read_raw(path)
    return {name: a for name, (_, _, a) in raw.items()}


def write_sharded(model_dir, tensors, nshards, dtype="F32", order=None,
                  metadata=None, base="model"):
    """Write HF-style shards model-0000k-of-0000N.safetensors + index json."""
    names = list(order) if order is not None else list(tensors)
    per = (len(names) + nshards - 1) // nshards
    weight_map = {}
    total = 0
    for k in range(nshards):
        part = names[k * per:(k + 1) * per]
        fn = f"{base}-{k + 1:05d}-of-{nshards:05d}.safetensors"
        write(os.path.join(model_dir, fn), {n: tensors[n] for n in part},
              dtype=dtype, order=part, metadata={"format": "pt"})
        for n in part:
            weight_map[n] = fn
            total += to_storage(tensors[n], dtype).nbytes
    idx = {"metadata": dict(metadata or {}, total_size=total),
           "weight_map": weight_map}
    with open(os.path.join(model_dir, f"{base}.safetensors.index.json"), "w") as f:
        json.dump(idx, f, indent=2)
    return weight_map
