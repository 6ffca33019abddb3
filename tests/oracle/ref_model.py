#!/usr/bin/python3
"""Independent PyTorch reference forward pass for Hugging Face GPT-2, GPT-Neo,
Llama (with rope_scaling llama3 / linear), Qwen2 and Qwen3 model directories
(config.json + safetensors), written from the Hugging Face model definitions
(modeling_gpt2.py, modeling_gpt_neo.py, modeling_llama.py, modeling_qwen2.py,
modeling_qwen3.py, modeling_rope_utils.py), not from the C engine.

Weights stored as F16/BF16 are widened to float32 exactly on load (what the
C engine does).  The arithmetic then runs in `dtype` (float64 by default: the
most accurate value of the float32-weight model, so that any difference to the
C engine is the C engine's own float32 rounding; pass torch.float32 for a
plain float32 run).

forward(model_dir, ids) -> (logits [n, V], hidden [n, d]) as numpy float64;
hidden is the final hidden state after the final norm.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "pylib"))
import stio  # noqa: E402


# ------------------------------------------------------------------ config
def _get(cfg, key, default=None, required=True):
    if key in cfg and cfg[key] is not None:
        return cfg[key]
    if default is not None or not required:
        return default
    raise KeyError(f"config.json: missing {key}")


def expand_attention_types(attention_types):
    """GPTNeoConfig.expand_attention_types_params: [[["global","local"], 2]]
    -> ["global", "local", "global", "local"]."""
    out = []
    for kinds, reps in attention_types:
        for _ in range(reps):
            out.extend(kinds)
    return out


def parse_config(cfg):
    """Normalise an HF config dict to a flat description."""
    mt = cfg.get("model_type")
    c = {"model_type": mt}
    if mt == "gpt2":
        c["d"] = _get(cfg, "n_embd")
        c["L"] = _get(cfg, "n_layer")
        c["H"] = _get(cfg, "n_head")
        c["KV"] = c["H"]
        c["V"] = _get(cfg, "vocab_size")
        c["P"] = _get(cfg, "n_positions")
        c["inner"] = _get(cfg, "n_inner", required=False) or 4 * c["d"]
        c["eps"] = float(_get(cfg, "layer_norm_epsilon", 1e-5))
        c["act"] = _get(cfg, "activation_function", "gelu_new")
        c["scale_attn"] = bool(cfg.get("scale_attn_weights", True))
        c["scale_by_layer"] = bool(cfg.get("scale_attn_by_inverse_layer_idx", False))
        c["tie"] = bool(cfg.get("tie_word_embeddings", True))
        c["hd"] = c["d"] // c["H"]
    elif mt == "gpt_neo":
        c["d"] = _get(cfg, "hidden_size")
        c["L"] = _get(cfg, "num_layers")
        c["H"] = _get(cfg, "num_heads")
        c["KV"] = c["H"]
        c["V"] = _get(cfg, "vocab_size")
        c["P"] = _get(cfg, "max_position_embeddings")
        c["inner"] = _get(cfg, "intermediate_size", required=False) or 4 * c["d"]
        c["eps"] = float(_get(cfg, "layer_norm_epsilon", 1e-5))
        c["act"] = _get(cfg, "activation_function", "gelu_new")
        c["window"] = int(_get(cfg, "window_size", 256))
        if cfg.get("attention_types") is not None:
            layers = expand_attention_types(cfg["attention_types"])
        else:
            layers = list(_get(cfg, "attention_layers"))
        if len(layers) != c["L"]:
            raise ValueError("config.json: attention_types expands to "
                             f"{len(layers)} layers, num_layers={c['L']}")
        c["attention_layers"] = layers
        c["tie"] = bool(cfg.get("tie_word_embeddings", True))
        c["hd"] = c["d"] // c["H"]
    elif mt in ("llama", "qwen2", "qwen3"):
        c["d"] = _get(cfg, "hidden_size")
        c["L"] = _get(cfg, "num_hidden_layers")
        c["H"] = _get(cfg, "num_attention_heads")
        c["KV"] = _get(cfg, "num_key_value_heads", required=False) or c["H"]
        c["V"] = _get(cfg, "vocab_size")
        c["P"] = _get(cfg, "max_position_embeddings", required=False)
        c["inner"] = _get(cfg, "intermediate_size")
        c["eps"] = float(_get(cfg, "rms_norm_eps", 1e-6))
        c["theta"] = float(_get(cfg, "rope_theta", 10000.0))
        c["act"] = _get(cfg, "hidden_act", "silu")
        c["tie"] = bool(cfg.get("tie_word_embeddings", False))
        # Qwen3Config's head_dim defaults to 128; LlamaAttention / Qwen2Attention use
        # getattr(config, "head_dim", hidden // heads)
        c["hd"] = _get(cfg, "head_dim", required=False) or (128 if mt == "qwen3" else c["d"] // c["H"])
        # biases: Llama and Qwen3 attention_bias on q, k, v and o; Qwen2 on q, k, v only, always
        c["qkv_bias"] = True if mt == "qwen2" else bool(cfg.get("attention_bias", False))
        c["o_bias"] = False if mt == "qwen2" else bool(cfg.get("attention_bias", False))
        c["mlp_bias"] = bool(cfg.get("mlp_bias", False)) if mt == "llama" else False
        c["qk_norm"] = mt == "qwen3"
        if mt != "llama" and cfg.get("use_sliding_window"):
            raise NotImplementedError("sliding window attention not supported by the reference")
        c["rope_scaling"] = cfg.get("rope_scaling") or None
        if c["H"] % c["KV"]:
            raise ValueError("num_attention_heads not a multiple of num_key_value_heads")
    else:
        raise ValueError(f"config.json: unknown model_type {mt!r}")
    if mt in ("gpt2", "gpt_neo") and c["d"] % c["H"]:
        raise ValueError("hidden size not divisible by number of heads")
    return c


# ------------------------------------------------------------------ weights
PREFIXES = {"gpt2": ["", "transformer."],
            "gpt_neo": ["transformer.", ""],
            "llama": ["model.", ""], "qwen2": ["model.", ""], "qwen3": ["model.", ""]}


class Weights:
    def __init__(self, tensors, model_type, dtype):
        self.t = tensors
        self.prefixes = PREFIXES[model_type]
        self.dtype = dtype

    def has(self, name):
        return any(p + name in self.t for p in self.prefixes)

    def __call__(self, name, shape=None):
        for p in self.prefixes:
            if p + name in self.t:
                a = self.t[p + name]
                if shape is not None and tuple(a.shape) != tuple(shape):
                    raise ValueError(f"{p + name}: shape {a.shape}, expected {shape}")
                return torch.from_numpy(np.asarray(a, dtype=np.float32)).to(self.dtype)
        raise KeyError(f"missing tensor {name}")

    def raw(self, name):
        if name in self.t:
            return torch.from_numpy(np.asarray(self.t[name], dtype=np.float32)).to(self.dtype)
        raise KeyError(f"missing tensor {name}")


# ------------------------------------------------------------------ pieces
def act_fn(name):
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        return lambda x: 0.5 * x * (1.0 + torch.tanh(
            math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if name == "gelu":
        return lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if name == "relu":
        return torch.relu
    if name in ("silu", "swish"):
        return lambda x: x * torch.sigmoid(x)
    raise NotImplementedError(f"activation {name}")


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)  # biased, as nn.LayerNorm
    return (x - mu) / torch.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    var = (x * x).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def attention(q, k, v, mask, scale):
    """q [H,n,hd], k/v [H,n,hd] (already repeated for GQA), mask [n,n] bool
    (True = visible).  Returns [n, H*hd]."""
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    s = s.masked_fill(~mask, float("-inf"))
    p = torch.softmax(s, dim=-1)
    o = torch.matmul(p, v)  # [H,n,hd]
    return o.transpose(0, 1).reshape(q.shape[1], -1)


def causal_mask(n):
    return torch.tril(torch.ones(n, n, dtype=torch.bool))


def local_mask(n, window):
    """HF GPT-Neo: bias = tril(ones) ^ tril(tril(ones), -window):
    key j visible from query i iff i - window < j <= i."""
    full = torch.tril(torch.ones(n, n, dtype=torch.uint8))
    return (full ^ torch.tril(full, -window)).bool()


# ------------------------------------------------------------------ models
# Deliberate mutations of the reference, used only by the negative controls
# in check_forward.py to show the comparison can see such mistakes.
MUTATIONS = ("global_only", "rope_interleaved", "kv_tile", "no_attn_scale",
             "attn_scale", "gelu_exact", "no_rope_scaling", "no_qk_norm", "no_qkv_bias")


def pad_keys(mask, key_limit):
    """Right padding as a Hugging Face attention_mask: keys at positions >= key_limit are hidden
    from every query (the padding positions' own queries still run, at their positions)."""
    if key_limit is None:
        return mask
    return mask & (torch.arange(mask.shape[1]) < key_limit)[None, :]


def gpt2_forward(c, W, ids, mutate=(), key_limit=None):
    n, d, H, hd = len(ids), c["d"], c["H"], c["hd"]
    if n > c["P"]:
        raise ValueError("sequence longer than n_positions")
    act = act_fn("gelu" if "gelu_exact" in mutate else c["act"])
    wte = W("wte.weight", (c["V"], d))
    x = wte[ids] + W("wpe.weight", (c["P"], d))[torch.arange(n)]
    mask = pad_keys(causal_mask(n), key_limit)
    for i in range(c["L"]):
        p = f"h.{i}."
        h = layer_norm(x, W(p + "ln_1.weight", (d,)), W(p + "ln_1.bias", (d,)), c["eps"])
        # Conv1D: y = x @ W + b, W [in, out]
        qkv = h @ W(p + "attn.c_attn.weight", (d, 3 * d)) + W(p + "attn.c_attn.bias", (3 * d,))
        q, k, v = qkv.split(d, dim=-1)
        q, k, v = (t.reshape(n, H, hd).transpose(0, 1) for t in (q, k, v))
        scale = 1.0
        if c["scale_attn"] and "no_attn_scale" not in mutate:
            scale /= math.sqrt(hd)
        if c["scale_by_layer"]:
            scale /= float(i + 1)
        a = attention(q, k, v, mask, scale)
        a = a @ W(p + "attn.c_proj.weight", (d, d)) + W(p + "attn.c_proj.bias", (d,))
        x = x + a
        h = layer_norm(x, W(p + "ln_2.weight", (d,)), W(p + "ln_2.bias", (d,)), c["eps"])
        m = act(h @ W(p + "mlp.c_fc.weight", (d, c["inner"])) + W(p + "mlp.c_fc.bias", (c["inner"],)))
        m = m @ W(p + "mlp.c_proj.weight", (c["inner"], d)) + W(p + "mlp.c_proj.bias", (d,))
        x = x + m
    hid = layer_norm(x, W("ln_f.weight", (d,)), W("ln_f.bias", (d,)), c["eps"])
    head = wte if c["tie"] else W.raw("lm_head.weight")
    return hid @ head.T, hid


def gpt_neo_forward(c, W, ids, mutate=(), key_limit=None):
    n, d, H, hd = len(ids), c["d"], c["H"], c["hd"]
    if n > c["P"]:
        raise ValueError("sequence longer than max_position_embeddings")
    act = act_fn("gelu" if "gelu_exact" in mutate else c["act"])
    wte = W("wte.weight", (c["V"], d))
    x = wte[ids] + W("wpe.weight", (c["P"], d))[torch.arange(n)]
    gmask, lmask = pad_keys(causal_mask(n), key_limit), pad_keys(local_mask(n, c["window"]), key_limit)
    for i in range(c["L"]):
        p = f"h.{i}."
        a_ = p + "attn.attention."
        h = layer_norm(x, W(p + "ln_1.weight", (d,)), W(p + "ln_1.bias", (d,)), c["eps"])
        # nn.Linear: y = x @ W.T (+ b), W [out, in]
        q = h @ W(a_ + "q_proj.weight", (d, d)).T
        k = h @ W(a_ + "k_proj.weight", (d, d)).T
        v = h @ W(a_ + "v_proj.weight", (d, d)).T
        q, k, v = (t.reshape(n, H, hd).transpose(0, 1) for t in (q, k, v))
        local = c["attention_layers"][i] == "local" and "global_only" not in mutate
        # GPT-Neo does NOT scale scores by 1/sqrt(head_dim)
        scale = 1.0 / math.sqrt(hd) if "attn_scale" in mutate else 1.0
        a = attention(q, k, v, lmask if local else gmask, scale)
        a = a @ W(a_ + "out_proj.weight", (d, d)).T + W(a_ + "out_proj.bias", (d,))
        x = x + a
        h = layer_norm(x, W(p + "ln_2.weight", (d,)), W(p + "ln_2.bias", (d,)), c["eps"])
        m = act(h @ W(p + "mlp.c_fc.weight", (c["inner"], d)).T + W(p + "mlp.c_fc.bias", (c["inner"],)))
        m = m @ W(p + "mlp.c_proj.weight", (d, c["inner"])).T + W(p + "mlp.c_proj.bias", (d,))
        x = x + m
    hid = layer_norm(x, W("ln_f.weight", (d,)), W("ln_f.bias", (d,)), c["eps"])
    head = wte if c["tie"] else W.raw("lm_head.weight")
    return hid @ head.T, hid


def scaled_inv_freq(inv_freq, rs):
    """modeling_rope_utils.py: the rope_scaling rules this reference knows (None: unscaled)."""
    if rs is None:
        return inv_freq
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "default":
        return inv_freq
    if kind == "linear":  # _compute_linear_scaling_rope_parameters
        return inv_freq / rs["factor"]
    if kind == "llama3":  # _compute_llama3_parameters
        factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old_ctx = rs["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old_ctx / low, old_ctx / high
        wavelen = 2 * math.pi / inv_freq
        out = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (old_ctx / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        return torch.where(medium, smoothed, out)
    raise NotImplementedError(f"rope_scaling type {kind!r} not supported by the reference")


def rope_cos_sin(n, hd, theta, dtype, rope_scaling=None):
    """HF LlamaRotaryEmbedding: inv_freq = 1/theta^(2j/hd) (rescaled by rope_scaling),
    emb = cat(f, f)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    inv_freq = scaled_inv_freq(inv_freq, rope_scaling)
    pos = torch.arange(n, dtype=torch.float64)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def rotate_interleaved(x):
    """GPT-J/Meta style pairs (2i, 2i+1) -- WRONG for HF Llama; mutation only."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([-x2, x1], dim=-1).flatten(-2)


def llama_forward(c, W, ids, mutate=(), key_limit=None):
    n, d, H, KV, hd = len(ids), c["d"], c["H"], c["KV"], c["hd"]
    act = act_fn(c["act"])
    emb = W("embed_tokens.weight", (c["V"], d))
    x = emb[ids]
    mask = pad_keys(causal_mask(n), key_limit)
    cos, sin = rope_cos_sin(n, hd, c["theta"], W.dtype,
                            None if "no_rope_scaling" in mutate else c["rope_scaling"])
    qkv_bias = c["qkv_bias"] and "no_qkv_bias" not in mutate
    rep = H // KV
    for i in range(c["L"]):
        p = f"layers.{i}."
        s_ = p + "self_attn."
        h = rms_norm(x, W(p + "input_layernorm.weight", (d,)), c["eps"])

        def lin(name, out_f, in_f, bias):
            y = h @ W(name + ".weight", (out_f, in_f)).T
            if bias:
                y = y + W(name + ".bias", (out_f,))
            return y
        q = lin(s_ + "q_proj", H * hd, d, qkv_bias).reshape(n, H, hd).transpose(0, 1)
        k = lin(s_ + "k_proj", KV * hd, d, qkv_bias).reshape(n, KV, hd).transpose(0, 1)
        v = lin(s_ + "v_proj", KV * hd, d, qkv_bias).reshape(n, KV, hd).transpose(0, 1)
        if c["qk_norm"] and "no_qk_norm" not in mutate:  # Qwen3: RMSNorm over each head's hd values
            q = rms_norm(q, W(s_ + "q_norm.weight", (hd,)), c["eps"])
            k = rms_norm(k, W(s_ + "k_norm.weight", (hd,)), c["eps"])
        if "rope_interleaved" in mutate:
            ci, si = cos[:, :hd // 2].repeat_interleave(2, -1), sin[:, :hd // 2].repeat_interleave(2, -1)
            q = q * ci + rotate_interleaved(q) * si
            k = k * ci + rotate_interleaved(k) * si
        else:
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        # repeat_kv: query head h uses kv head h // rep
        if "kv_tile" in mutate:  # wrong mapping h -> h % KV; mutation only
            k, v = k.repeat(rep, 1, 1), v.repeat(rep, 1, 1)
        else:
            k = k.repeat_interleave(rep, dim=0)
            v = v.repeat_interleave(rep, dim=0)
        a = attention(q, k, v, mask, 1.0 / math.sqrt(hd))
        a = a @ W(s_ + "o_proj.weight", (d, H * hd)).T
        if c["o_bias"]:
            a = a + W(s_ + "o_proj.bias", (d,))
        x = x + a
        h = rms_norm(x, W(p + "post_attention_layernorm.weight", (d,)), c["eps"])
        g = lin(p + "mlp.gate_proj", c["inner"], d, c["mlp_bias"])
        u = lin(p + "mlp.up_proj", c["inner"], d, c["mlp_bias"])
        m = (act(g) * u) @ W(p + "mlp.down_proj.weight", (d, c["inner"])).T
        if c["mlp_bias"]:
            m = m + W(p + "mlp.down_proj.bias", (d,))
        x = x + m
    hid = rms_norm(x, W("norm.weight", (d,)), c["eps"])
    head = emb if c["tie"] else W.raw("lm_head.weight")
    if tuple(head.shape) != (c["V"], d):
        raise ValueError(f"lm_head.weight: shape {tuple(head.shape)}")
    return hid @ head.T, hid


def forward_tensors(cfg, tensors, ids, dtype=torch.float64, mutate=(), key_limit=None):
    c = parse_config(cfg)
    ids = torch.as_tensor(list(ids), dtype=torch.long)
    if len(ids) == 0 or int(ids.min()) < 0 or int(ids.max()) >= c["V"]:
        raise ValueError("token id out of range")
    W = Weights(tensors, c["model_type"], dtype)
    with torch.no_grad():
        if c["model_type"] == "gpt2":
            lg, hid = gpt2_forward(c, W, ids, mutate, key_limit)
        elif c["model_type"] == "gpt_neo":
            lg, hid = gpt_neo_forward(c, W, ids, mutate, key_limit)
        else:
            lg, hid = llama_forward(c, W, ids, mutate, key_limit)
    return lg.double().numpy(), hid.double().numpy()


def load(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    tensors, _ = stio.load_model_tensors(model_dir)
    return cfg, tensors


def forward(model_dir, ids, dtype=torch.float64, mutate=(), key_limit=None):
    """key_limit: ids[key_limit:] are right padding (see pad_keys)."""
    cfg, tensors = load(model_dir)
    return forward_tensors(cfg, tensors, ids, dtype, mutate, key_limit)


# ------------------------------------------------------------------ self test
def _rand_tensors(cfg, rng, std=0.08, emb_std=0.15):
    """Random weights with HF names for a config (used by the self test and by
    check_forward.py for Python-written models).  LayerNorm/RMSNorm weights are
    1 + noise, biases small noise, everything else N(0, std)."""
    c = parse_config(cfg)
    d, V, inner, L = c["d"], c["V"], c["inner"], c["L"]
    t = {}

    def nrm(*shape, s=std):
        return (rng.standard_normal(shape) * s).astype(np.float32)

    def ln(name, bias=True):
        t[name + ".weight"] = (1.0 + rng.standard_normal(d) * 0.1).astype(np.float32)
        if bias:
            t[name + ".bias"] = nrm(d, s=0.05)
    mt = c["model_type"]
    if mt == "gpt2":
        t["wte.weight"] = nrm(V, d, s=emb_std)
        t["wpe.weight"] = nrm(c["P"], d, s=0.1)
        for i in range(L):
            p = f"h.{i}."
            ln(p + "ln_1")
            t[p + "attn.c_attn.weight"] = nrm(d, 3 * d, s=0.12)
            t[p + "attn.c_attn.bias"] = nrm(3 * d, s=0.05)
            t[p + "attn.c_proj.weight"] = nrm(d, d)
            t[p + "attn.c_proj.bias"] = nrm(d, s=0.05)
            ln(p + "ln_2")
            t[p + "mlp.c_fc.weight"] = nrm(d, inner, s=0.12)
            t[p + "mlp.c_fc.bias"] = nrm(inner, s=0.05)
            t[p + "mlp.c_proj.weight"] = nrm(inner, d)
            t[p + "mlp.c_proj.bias"] = nrm(d, s=0.05)
        ln("ln_f")
    elif mt == "gpt_neo":
        t["wte.weight"] = nrm(V, d, s=emb_std)
        t["wpe.weight"] = nrm(c["P"], d, s=0.1)
        for i in range(L):
            p = f"h.{i}."
            ln(p + "ln_1")
            for nm in ("q_proj", "k_proj", "v_proj"):
                t[p + "attn.attention." + nm + ".weight"] = nrm(d, d, s=0.12)
            t[p + "attn.attention.out_proj.weight"] = nrm(d, d)
            t[p + "attn.attention.out_proj.bias"] = nrm(d, s=0.05)
            ln(p + "ln_2")
            t[p + "mlp.c_fc.weight"] = nrm(inner, d, s=0.12)
            t[p + "mlp.c_fc.bias"] = nrm(inner, s=0.05)
            t[p + "mlp.c_proj.weight"] = nrm(d, inner)
            t[p + "mlp.c_proj.bias"] = nrm(d, s=0.05)
        ln("ln_f")
        t = {"transformer." + k: v for k, v in t.items()}
    else:
        H, KV, hd = c["H"], c["KV"], c["hd"]
        t["embed_tokens.weight"] = nrm(V, d, s=emb_std)
        for i in range(L):
            p = f"layers.{i}."
            ln(p + "input_layernorm", bias=False)
            t[p + "self_attn.q_proj.weight"] = nrm(H * hd, d, s=0.12)
            t[p + "self_attn.k_proj.weight"] = nrm(KV * hd, d, s=0.12)
            t[p + "self_attn.v_proj.weight"] = nrm(KV * hd, d, s=0.12)
            t[p + "self_attn.o_proj.weight"] = nrm(d, H * hd)
            if c["qkv_bias"]:
                for nm, rows in (("q_proj", H * hd), ("k_proj", KV * hd), ("v_proj", KV * hd)):
                    t[p + f"self_attn.{nm}.bias"] = nrm(rows, s=0.3)
            if c["qk_norm"]:
                for nm in ("q_norm", "k_norm"):
                    t[p + f"self_attn.{nm}.weight"] = (1.0 + rng.standard_normal(hd) * 0.1).astype(np.float32)
            ln(p + "post_attention_layernorm", bias=False)
            t[p + "mlp.gate_proj.weight"] = nrm(inner, d, s=0.12)
            t[p + "mlp.up_proj.weight"] = nrm(inner, d, s=0.12)
            t[p + "mlp.down_proj.weight"] = nrm(d, inner)
        ln("norm", bias=False)
        t = {"model." + k: v for k, v in t.items()}
        if not c["tie"]:
            t["lm_head.weight"] = nrm(V, d, s=emb_std)
    return t


def selftest():
    """Internal consistency checks of the reference (no C involved)."""
    rng = np.random.default_rng(0)
    ok = True

    def check(name, cond, detail=""):
        nonlocal ok
        print(("ok   " if cond else "FAIL ") + name + (" " + detail if detail else ""))
        ok &= bool(cond)

    gpt2 = {"model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4,
            "n_positions": 32, "vocab_size": 50, "n_inner": 48}
    neo = {"model_type": "gpt_neo", "hidden_size": 32, "num_layers": 2, "num_heads": 4,
           "max_position_embeddings": 32, "vocab_size": 50, "window_size": 4,
           "attention_types": [[["global", "local"], 1]], "intermediate_size": None}
    llama = {"model_type": "llama", "hidden_size": 32, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 40,
             "vocab_size": 50, "rms_norm_eps": 1e-6, "tie_word_embeddings": False}
    ids = list(rng.integers(0, 50, 12))
    qwen2 = dict(llama, model_type="qwen2", rope_theta=1e6)
    qwen3 = dict(llama, model_type="qwen3", head_dim=16, rope_theta=1e6)
    llama3 = dict(llama, max_position_embeddings=64, rope_scaling={
        "rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64})
    for cfg in (gpt2, neo, llama, qwen2, qwen3, llama3):
        t = _rand_tensors(cfg, rng)
        lg, hid = forward_tensors(cfg, t, ids)
        lg32, _ = forward_tensors(cfg, t, ids, dtype=torch.float32)
        mt = cfg["model_type"]
        check(f"{mt}: finite, O(1) logits", np.isfinite(lg).all() and 0.1 < np.abs(lg).max() < 50,
              f"max|logit|={np.abs(lg).max():.3f}")
        check(f"{mt}: f32 vs f64 arithmetic", np.abs(lg - lg32).max() < 1e-4,
              f"{np.abs(lg - lg32).max():.2e}")
        # causality: logits at position i do not depend on later tokens
        lg_pre, _ = forward_tensors(cfg, t, ids[:7])
        check(f"{mt}: causal prefix", np.abs(lg_pre - lg[:7]).max() < 1e-10)
        ids2 = ids[:7] + [int(x) for x in rng.integers(0, 50, 5)]
        lg2, _ = forward_tensors(cfg, t, ids2)
        check(f"{mt}: later tokens matter", np.abs(lg2[7:] - lg[7:]).max() > 1e-2,
              f"{np.abs(lg2[7:] - lg[7:]).max():.3f}")
    # GPT-Neo: window >= n equals global; window < n differs
    t = _rand_tensors(neo, rng)
    lw, _ = forward_tensors(neo, t, ids)
    lg_glob, _ = forward_tensors(neo, t, ids, mutate=("global_only",))
    check("gpt_neo: local window matters for n > window",
          np.abs(lw - lg_glob).max() > 1e-2, f"{np.abs(lw - lg_glob).max():.3f}")
    check("gpt_neo: local == global within first window",
          np.abs(lw[:4] - lg_glob[:4]).max() < 1e-10)
    big = dict(neo, window_size=64)
    lbig, _ = forward_tensors(big, t, ids)
    check("gpt_neo: window >= n equals global", np.abs(lbig - lg_glob).max() < 1e-10)
    m = local_mask(6, 2)
    check("gpt_neo: local mask i-w<j<=i",
          all(bool(m[i, j]) == (i - 2 < j <= i) for i in range(6) for j in range(6)))
    # Llama GQA == MHA with explicitly replicated k/v heads
    t = _rand_tensors(llama, rng)
    mha = dict(llama, num_key_value_heads=4)
    t2 = dict(t)
    hd = 8
    for i in range(2):
        for nm in ("k_proj", "v_proj"):
            key = f"model.layers.{i}.self_attn.{nm}.weight"
            w = t[key].reshape(2, hd, 32)
            t2[key] = np.repeat(w, 2, axis=0).reshape(4 * hd, 32)
    a, _ = forward_tensors(llama, t, ids)
    b, _ = forward_tensors(mha, t2, ids)
    check("llama: GQA == replicated MHA", np.abs(a - b).max() < 1e-10)
    # RoPE: position 0 is identity; relative property q(m).k(n) depends on m-n
    cos, sin = rope_cos_sin(10, hd, 10000.0, torch.float64)
    q = torch.randn(hd, dtype=torch.float64)
    k = torch.randn(hd, dtype=torch.float64)
    rq = q * cos + rotate_half(q) * sin
    rk = k * cos + rotate_half(k) * sin
    check("rope: pos 0 identity", torch.allclose(rq[0], q))
    check("rope: relative", abs(float(rq[5] @ rk[3] - rq[2] @ rk[0])) < 1e-10)
    # llama3 scaling: high frequencies kept, low ones divided by factor, the band between blended
    # monotonically; factor 1 is no scaling at all
    inv = 1.0 / (500000.0 ** (torch.arange(0, 16, 2, dtype=torch.float64) / 16))
    rs = llama3["rope_scaling"]
    sc = scaled_inv_freq(inv, rs)
    wl = 2 * math.pi / inv
    hi, lo = wl < 64 / 4.0, wl > 64 / 1.0
    ratio = inv / sc
    check("llama3 scaling: three bands present at head_dim 16, theta 5e5, original 64",
          bool(hi.any() and lo.any() and (~hi & ~lo).any()), str(wl.numpy().round(1)))
    check("llama3 scaling: high kept, low / factor, between in (1, factor)",
          bool(torch.allclose(ratio[hi], torch.ones(int(hi.sum()), dtype=torch.float64)) and
               torch.allclose(ratio[lo], torch.full((int(lo.sum()),), 4.0, dtype=torch.float64)) and
               ((ratio[~hi & ~lo] > 1) & (ratio[~hi & ~lo] < 4)).all()), str(ratio.numpy().round(3)))
    check("llama3 scaling: factor 1 is none", torch.allclose(scaled_inv_freq(inv, dict(rs, factor=1.0)), inv))
    # Qwen3: the per-head q/k RMSNorm makes the logits blind to the scale of q_proj and k_proj
    t = _rand_tensors(qwen3, rng)
    t2 = {k: (v * 3.0 if k.endswith(("q_proj.weight", "k_proj.weight")) else v) for k, v in t.items()}
    a, _ = forward_tensors(qwen3, t, ids)
    b, _ = forward_tensors(qwen3, t2, ids)
    c, _ = forward_tensors(qwen3, t2, ids, mutate=("no_qk_norm",))
    # (up to rms_norm_eps, which the scale moves relative to the variance)
    check("qwen3: q/k norm makes logits invariant to scaling q_proj, k_proj", np.abs(a - b).max() < 1e-4,
          f"{np.abs(a - b).max():.2e}")
    check("qwen3: without q/k norm the scale matters", np.abs(a - c).max() > 1e-2, f"{np.abs(a - c).max():.3f}")
    # bf16 round trip and rounding
    x = np.array([1.0, 1.00390625, 1.01171875, -3.5e-3, 1e30], dtype=np.float32)
    y = stio.bf16_bits_to_f32(stio.f32_to_bf16_bits(x))
    check("bf16: round to nearest even", y[1] == 1.0 and y[2] == 1.015625 and y[0] == 1.0,
          str(y))
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--ids")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--f32", action="store_true", help="float32 arithmetic")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        sys.exit(0 if selftest() else 1)
    ids = [int(x) for x in a.ids.split(",")]
    lg, _ = forward(a.model, ids, torch.float32 if a.f32 else torch.float64)
    rows = lg if a.all else lg[-1:]
    for r in rows:
        print(" ".join(f"{v:.6f}" for v in r))


if __name__ == "__main__":
    main()
