"""A plain GPT-2 in PyTorch whose parameter names and layouts are exactly those of Hugging Face's
GPT2LMHeadModel (Conv1D weights stored [in, out], y = x @ W + b; tied LM head), so exporting is
writing state_dict() to safetensors. No dropout. gelu_new = tanh-approximated GELU.

Also: the safetensors writer/reader (F32, from scripts/pylib/stio.py) and the config.json writer.
"""
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

# scripts/pylib holds the safetensors module shared with tests/ and bench/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "pylib"))
import stio  # noqa: E402


class Conv1D(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(
            *x.shape[:-1], self.weight.shape[1])


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Attention(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = Conv1D(d, 3 * d)
        self.c_proj = Conv1D(d, d)

    def forward(self, x, mask):
        B, T, D = x.shape
        h = self.n_head
        q, k, v = self.c_attn(x).split(D, dim=2)
        q = q.view(B, T, h, D // h).transpose(1, 2)
        k = k.view(B, T, h, D // h).transpose(1, 2)
        v = v.view(B, T, h, D // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // h))
        att = att.masked_fill(mask[:T, :T], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, d, inner):
        super().__init__()
        self.c_fc = Conv1D(d, inner)
        self.c_proj = Conv1D(inner, d)

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, d, n_head, inner, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(d, n_head)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.mlp = MLP(d, inner)

    def forward(self, x, mask):
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["n_embd"]
        inner = cfg.get("n_inner") or 4 * d
        self.wte = nn.Embedding(cfg["vocab_size"], d)
        self.wpe = nn.Embedding(cfg["n_positions"], d)
        self.h = nn.ModuleList([Block(d, cfg["n_head"], inner, cfg["layer_norm_epsilon"])
                                for _ in range(cfg["n_layer"])])
        self.ln_f = nn.LayerNorm(d, eps=cfg["layer_norm_epsilon"])


class GPT2LMHeadModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.transformer = Transformer(cfg)
        n = cfg["n_positions"]
        self.register_buffer("mask", torch.triu(torch.ones(n, n, dtype=torch.bool), 1),
                             persistent=False)

    def init_weights(self, seed):
        """GPT-2 initialisation: N(0, 0.02) weights, zero biases, unit LayerNorm, residual output
        projections scaled by 1/sqrt(2 n_layer)."""
        g = torch.Generator().manual_seed(seed)
        std = 0.02
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln_" in name:
                nn.init.ones_(p)
            elif name.endswith("c_proj.weight"):
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=g) * std / math.sqrt(2 * self.cfg["n_layer"]))
            else:
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=g) * std)

    def forward(self, idx):
        t = self.transformer
        T = idx.shape[1]
        x = t.wte(idx) + t.wpe(torch.arange(T, device=idx.device))
        for blk in t.h:
            x = blk(x, self.mask)
        x = t.ln_f(x)
        return x @ t.wte.weight.t()  # tied LM head


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def make_config(vocab_size, n_positions, n_embd, n_layer, n_head, eos_id):
    return {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": vocab_size,
        "n_positions": n_positions,
        "n_ctx": n_positions,
        "n_embd": n_embd,
        "n_layer": n_layer,
        "n_head": n_head,
        "n_inner": None,
        "activation_function": "gelu_new",
        "layer_norm_epsilon": 1e-5,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "initializer_range": 0.02,
        "bos_token_id": eos_id,
        "eos_token_id": eos_id,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    }


# ------------------------------------------------------------------ safetensors (F32)
# The F32 writer and reader are scripts/pylib/stio.py's (save_f32: sorted names, __metadata__
# {"format": "pt"}, header padded to a multiple of 8, written via path.tmp + rename).
save_safetensors = stio.save_f32
load_safetensors = stio.load_f32


def export(model, out_dir):
    sd = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    os.makedirs(out_dir, exist_ok=True)
    save_safetensors(sd, os.path.join(out_dir, "model.safetensors"))
    tmp = os.path.join(out_dir, "config.json.tmp")
    with open(tmp, "w") as f:
        json.dump(model.cfg, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(out_dir, "config.json"))


def load_model_dir(d):
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "gpt2":
        raise ValueError(f"{d}/config.json: model_type {cfg.get('model_type')!r}, expected 'gpt2'")
    cfg.setdefault("layer_norm_epsilon", 1e-5)
    m = GPT2LMHeadModel(cfg)
    sd = load_safetensors(os.path.join(d, "model.safetensors"))
    sd = {k: torch.from_numpy(v) for k, v in sd.items() if k != "lm_head.weight"}
    missing, unexpected = m.load_state_dict(sd, strict=False)
    if missing or unexpected:
        raise ValueError(f"{d}/model.safetensors: missing {missing}, unexpected {unexpected}")
    m.eval()
    return m
