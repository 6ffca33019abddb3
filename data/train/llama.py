"""A small Llama in PyTorch whose state-dict names and layouts are exactly those of Hugging Face's
LlamaForCausalLM (nn.Linear weights stored [out, in], no biases), so exporting is writing
state_dict() to safetensors + a Llama config.json.

  model.embed_tokens.weight                      [V, d]
  model.layers.{i}.input_layernorm.weight        [d]          RMSNorm (eps = rms_norm_eps)
  model.layers.{i}.self_attn.q_proj.weight       [H*hd, d]
  model.layers.{i}.self_attn.k_proj.weight       [KV*hd, d]   grouped-query attention:
  model.layers.{i}.self_attn.v_proj.weight       [KV*hd, d]   query head h uses kv head h // (H/KV)
  model.layers.{i}.self_attn.o_proj.weight       [d, H*hd]
  model.layers.{i}.post_attention_layernorm.weight [d]
  model.layers.{i}.mlp.gate_proj.weight          [I, d]       SwiGLU: down(silu(gate x) * up x)
  model.layers.{i}.mlp.up_proj.weight            [I, d]
  model.layers.{i}.mlp.down_proj.weight          [d, I]
  model.norm.weight                              [d]
  lm_head.weight                                 [V, d]       absent when tie_word_embeddings

Mixed precision: under torch.autocast("cpu", dtype=torch.bfloat16) (train_llama.py --precision
bf16) the q/k/v/o and MLP projections run in bf16 while the residual stream, the norms, RoPE,
the attention softmax and the LM head stay float32; outside autocast everything is float32.

RoPE is HF's rotate-half form (inv_freq = 1 / theta^(2j/hd), cos/sin of cat(freqs, freqs), q' =
q cos + rotate_half(q) sin with rotate_half(x) = cat(-x2, x1)), applied to q and k of every head.
Attention scores are scaled by 1/sqrt(hd), causal, no dropout. Computation in float32.

save_hf_dir(model, cfg, out_dir) writes config.json, model.safetensors (F32, by scripts/pylib/stio.py:
8-byte little-endian header length + JSON header padded with spaces to a multiple of 8 +
raw little-endian data, tensors in sorted name order) and copies the tokenizer files.
load_hf_dir(dir) reads such a directory back.
"""
import json
import math
import os
import shutil
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

# scripts/pylib holds the safetensors module shared with tests/ and bench/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "pylib"))
import stio  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TOKENIZER = os.path.join(os.path.dirname(HERE), "models", "tokenizer")
TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer.json")


def make_config(vocab_size, hidden_size, intermediate_size, num_hidden_layers,
                num_attention_heads, num_key_value_heads, max_position_embeddings, eos_id,
                tie_word_embeddings=False, rms_norm_eps=1e-5, rope_theta=10000.0):
    """A Hugging Face LlamaConfig dict (the keys engine/model/config.c and tests/oracle read).
    bos = eos = <|endoftext|>, as the default GPT-2 pair."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": vocab_size,
        "hidden_size": hidden_size,
        "intermediate_size": intermediate_size,
        "num_hidden_layers": num_hidden_layers,
        "num_attention_heads": num_attention_heads,
        "num_key_value_heads": num_key_value_heads,
        "head_dim": hidden_size // num_attention_heads,
        "hidden_act": "silu",
        "max_position_embeddings": max_position_embeddings,
        "rms_norm_eps": rms_norm_eps,
        "rope_theta": rope_theta,
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "initializer_range": 0.02,
        "tie_word_embeddings": bool(tie_word_embeddings),
        "bos_token_id": eos_id,
        "eos_token_id": eos_id,
        "use_cache": True,
        "torch_dtype": "float32",
    }


def _head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, self.H = cfg["hidden_size"], cfg["num_attention_heads"]
        self.KV = cfg.get("num_key_value_heads") or self.H
        self.hd = _head_dim(cfg)
        if self.H % self.KV:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        self.q_proj = nn.Linear(d, self.H * self.hd, bias=False)
        self.k_proj = nn.Linear(d, self.KV * self.hd, bias=False)
        self.v_proj = nn.Linear(d, self.KV * self.hd, bias=False)
        self.o_proj = nn.Linear(self.H * self.hd, d, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.KV, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.KV, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.H // self.KV
        if rep > 1:  # HF repeat_kv: query head h uses kv head h // rep
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-2, -1)).float() * (1.0 / math.sqrt(self.hd))
        att = att.masked_fill(mask, float("-inf"))
        att = torch.softmax(att, dim=-1)  # float32 also under bf16 autocast
        y = (att @ v).transpose(1, 2).reshape(B, T, self.H * self.hd)
        return self.o_proj(y)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, i = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(d, i, bias=False)
        self.up_proj = nn.Linear(d, i, bias=False)
        self.down_proj = nn.Linear(i, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        eps = cfg["rms_norm_eps"]
        self.input_layernorm = RMSNorm(cfg["hidden_size"], eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg["hidden_size"], eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([DecoderLayer(cfg) for _ in range(cfg["num_hidden_layers"])])
        self.norm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = LlamaModel(cfg)
        self.tied = bool(cfg.get("tie_word_embeddings", False))
        if not self.tied:
            self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        n, hd = cfg["max_position_embeddings"], _head_dim(cfg)
        # HF LlamaRotaryEmbedding (float32 inv_freq, as modeling_llama computes it)
        inv_freq = 1.0 / (float(cfg.get("rope_theta", 10000.0)) **
                          (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
        freqs = torch.outer(torch.arange(n, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("rope_cos", emb.cos(), persistent=False)
        self.register_buffer("rope_sin", emb.sin(), persistent=False)
        self.register_buffer("mask", torch.triu(torch.ones(n, n, dtype=torch.bool), 1),
                             persistent=False)

    def init_weights(self, seed, std=0.02):
        """N(0, std) for embeddings and projections (HF's initializer_range), ones for the RMSNorm
        weights; the residual-stream writers (o_proj, down_proj) scaled by 1/sqrt(2 L) as in
        GPT-2, which keeps the residual stream's variance flat in depth at init."""
        g = torch.Generator().manual_seed(seed)
        L = self.cfg["num_hidden_layers"]
        for name, p in self.named_parameters():
            with torch.no_grad():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
                    p.copy_(torch.randn(p.shape, generator=g) * std / math.sqrt(2 * L))
                else:
                    p.copy_(torch.randn(p.shape, generator=g) * std)

    def forward(self, idx):
        T = idx.shape[1]
        if T > self.cfg["max_position_embeddings"]:
            raise ValueError("sequence longer than max_position_embeddings")
        m = self.model
        x = m.embed_tokens(idx)
        cos, sin, mask = self.rope_cos[:T], self.rope_sin[:T], self.mask[:T, :T]
        for layer in m.layers:
            x = layer(x, cos, sin, mask)
        x = m.norm(x)
        w = m.embed_tokens.weight if self.tied else self.lm_head.weight
        with torch.autocast("cpu", enabled=False):  # LM head in float32 also under autocast
            return x.float() @ w.t()


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def forward_flops_per_token(cfg, context):
    """Multiply-adds x 2 of one token's forward at a given attention context length: all weight
    matmuls (q, k, v, o, gate, up, down, LM head; the embedding lookup is free) plus the score and
    value products over `context` keys. Norms, RoPE, softmax and activations are ignored (< 1%)."""
    d, L, V, I = (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"],
                  cfg["intermediate_size"])
    H, hd = cfg["num_attention_heads"], _head_dim(cfg)
    KV = cfg.get("num_key_value_heads") or H
    per_layer = d * H * hd * 2 + d * KV * hd * 2 + 3 * d * I + 2 * H * hd * context
    return 2 * (L * per_layer + d * V)


# ------------------------------------------------------------------ safetensors (F32)
# The F32 writer and reader are scripts/pylib/stio.py's (save_f32: sorted names, __metadata__
# {"format": "pt"}, header padded to a multiple of 8, written via path.tmp + rename).
save_safetensors = stio.save_f32
load_safetensors = stio.load_f32


def _write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)


def save_hf_dir(model, cfg, out_dir, tokenizer_dir=DEFAULT_TOKENIZER):
    """Complete Hugging Face Llama directory: config.json, model.safetensors, tokenizer files."""
    os.makedirs(out_dir, exist_ok=True)
    sd = {k: v.detach().cpu().float().numpy() for k, v in model.state_dict().items()}
    if cfg.get("tie_word_embeddings"):
        sd.pop("lm_head.weight", None)
    save_safetensors(sd, os.path.join(out_dir, "model.safetensors"))
    _write_json(os.path.join(out_dir, "config.json"), cfg)
    for f in TOKENIZER_FILES:
        src = os.path.join(tokenizer_dir, f)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(out_dir, f + ".tmp"))
            os.replace(os.path.join(out_dir, f + ".tmp"), os.path.join(out_dir, f))


def load_hf_dir(d):
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "llama":
        raise ValueError(f"{d}/config.json: model_type {cfg.get('model_type')!r}, expected 'llama'")
    if cfg.get("rope_scaling"):
        raise ValueError(f"{d}/config.json: rope_scaling is not supported")
    cfg.setdefault("rms_norm_eps", 1e-6)
    cfg.setdefault("max_position_embeddings", 2048)
    m = LlamaForCausalLM(cfg)
    sd = {k: torch.from_numpy(v) for k, v in
          load_safetensors(os.path.join(d, "model.safetensors")).items()}
    missing, unexpected = m.load_state_dict(sd, strict=False)
    if missing or unexpected:
        raise ValueError(f"{d}/model.safetensors: missing {missing}, unexpected {unexpected}")
    m.eval()
    return m
