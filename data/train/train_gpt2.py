#!/usr/bin/python3
"""Trains the default draft or target GPT-2 on the corpus train split and exports a complete
Hugging Face directory (config.json, model.safetensors, vocab.json, merges.txt, tokenizer.json).

  /usr/bin/python3 data/train/train_gpt2.py --model draft|target [--steps N] [--threads 1]

Data: every line of data/corpus/out/{train,valid}.txt is one document, encoded with the tokenizer
in data/models/tokenizer and followed by <|endoftext|>; the documents are concatenated into one
token stream (cached as data/cache/tokens/<split>-<tokenizer hash>.npy). Each training step takes
`batch` windows of n_positions + 1 tokens at uniformly random offsets of the train stream (a
seeded torch.Generator). Validation loss (logged every --eval-every steps to training_log.csv) is
the mean next-token NLL over --eval-windows (128) full n_positions windows spread evenly over the
whole valid stream (the split files are ordered by source, so a prefix would be GCIDE only); at
the end the same over --final-eval-windows (1024, ~262k tokens) is written, with the run's
settings, to train_result.json. Evaluation does not touch the training RNG streams.

AdamW (betas 0.9/0.95, weight decay 0.1 on matrices and embeddings only), linear warmup then
cosine decay to 10% of the peak learning rate, gradient clipping at 1.0, fp32, one thread.
"""
import argparse
import csv
import hashlib
import json
import math
import os
import shutil
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(DATA, "tokenizer"))
import gpt2  # noqa: E402
import bpe  # noqa: E402

PRESETS = {
    # ~0.45M parameters (embeddings included)
    "draft": dict(n_embd=96, n_layer=2, n_head=3, steps=800, batch=16, lr=3e-3, warmup=40, seed=1),
    # ~4.5M parameters, ~10x the draft
    "target": dict(n_embd=256, n_layer=5, n_head=4, steps=1100, batch=16, lr=2e-3, warmup=50, seed=2),
}
N_POSITIONS = 256
TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer.json")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def encode_file(enc, path):
    """One document per non-empty line; each followed by the eos id. -> int32 ndarray."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            out.extend(enc.encode(line))
            out.append(enc.eot)
    return np.asarray(out, dtype=np.int32)


def token_stream(split, tok_dir):
    src = os.path.join(DATA, "corpus", "out", split + ".txt")
    if not os.path.exists(src):
        raise SystemExit(f"train_gpt2: {src}: missing (run make corpus)")
    key = hashlib.sha256((sha256_file(os.path.join(tok_dir, "merges.txt")) +
                          sha256_file(src)).encode()).hexdigest()[:16]
    cache = os.path.join(DATA, "cache", "tokens", f"{split}-{key}.npy")
    if os.path.exists(cache):
        return np.load(cache)
    t = time.time()
    arr = encode_file(bpe.Encoder.load(tok_dir), src)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    np.save(cache + ".tmp.npy", arr)
    os.replace(cache + ".tmp.npy", cache)
    print(f"train_gpt2: encoded {split}: {len(arr)} tokens in {time.time() - t:.0f}s", flush=True)
    return arr


@torch.no_grad()
def stream_loss(model, stream, ctx, n_windows=None, batch=16):
    """NLL over ctx-token windows of the stream. n_windows=None: all consecutive non-overlapping
    windows (the last may be shorter; length-1 windows dropped), the perplexity.py convention.
    n_windows=K: K full windows spread evenly over the whole stream (window i starts at
    floor(i * W / K) * ctx, W = number of full windows), so the estimate covers every source of
    the split (the split files are ordered by source). -> (total nll, predicted tokens)."""
    full = len(stream) // ctx
    if n_windows is not None and n_windows < full:
        starts = [(i * full // n_windows) * ctx for i in range(n_windows)]
        rest = stream[:0]
    else:
        starts = [i * ctx for i in range(full)]
        rest = stream[full * ctx:]
    total, count = 0.0, 0
    for i in range(0, len(starts), batch):
        x = torch.from_numpy(np.stack([stream[o:o + ctx] for o in starts[i:i + batch]])
                             .astype(np.int64))
        logits = model(x)
        nll = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1),
                              reduction="sum")
        total += float(nll)
        count += x.shape[0] * (ctx - 1)
    if len(rest) > 1:
        x = torch.from_numpy(rest.astype(np.int64)).view(1, -1)
        logits = model(x)
        total += float(F.cross_entropy(logits[0, :-1], x[0, 1:], reduction="sum"))
        count += len(rest) - 1
    return total, count


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(PRESETS), required=True)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--lr", type=float)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-windows", type=int, default=128,
                    help="valid windows (spread over the split) for the logged validation loss")
    ap.add_argument("--final-eval-windows", type=int, default=1024,
                    help="valid windows for the final validation loss (0 = the whole split)")
    ap.add_argument("--tokenizer", default=os.path.join(DATA, "models", "tokenizer"))
    ap.add_argument("--out", help="default data/models/<model>")
    a = ap.parse_args()
    P = dict(PRESETS[a.model])
    for k in ("steps", "batch", "lr", "seed"):
        if getattr(a, k) is not None:
            P[k] = getattr(a, k)
    out = a.out or os.path.join(DATA, "models", a.model)
    torch.set_num_threads(a.threads)
    for f in TOKENIZER_FILES[:2]:
        if not os.path.exists(os.path.join(a.tokenizer, f)):
            raise SystemExit(f"train_gpt2: {a.tokenizer}/{f}: missing (run make tokenizer)")

    t_start = time.time()
    enc = bpe.Encoder.load(a.tokenizer)
    V = len(enc.vocab)
    train = token_stream("train", a.tokenizer)
    valid = token_stream("valid", a.tokenizer)
    ctx = N_POSITIONS

    torch.manual_seed(P["seed"])
    cfg = gpt2.make_config(V, ctx, P["n_embd"], P["n_layer"], P["n_head"], enc.eot)
    model = gpt2.GPT2LMHeadModel(cfg)
    model.init_weights(P["seed"])
    n_params = gpt2.count_params(model)
    print(f"train_gpt2: {a.model}: {n_params} parameters, {P}", flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=P["lr"], betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(P["seed"] + 1000)
    train_t = torch.from_numpy(train.astype(np.int64))
    os.makedirs(out, exist_ok=True)
    log_path = os.path.join(out, "training_log.csv")
    rows = []
    t_train = time.time()
    run_loss, run_n = 0.0, 0

    def evaluate(step):
        model.eval()
        tot, cnt = stream_loss(model, valid, ctx, a.eval_windows)
        model.train()
        row = {"step": step, "tokens_seen": step * P["batch"] * ctx,
               "train_loss": round(run_loss / run_n, 5) if run_n else "",
               "val_loss": round(tot / cnt, 5), "lr": round(lr_at(min(step, P["steps"] - 1), P["steps"],
                                                                   P["lr"], P["warmup"]), 7),
               "elapsed_s": round(time.time() - t_train, 1)}
        rows.append(row)
        print(f"train_gpt2: {a.model} step {step}/{P['steps']} train {row['train_loss']} "
              f"val {row['val_loss']} ({row['elapsed_s']}s)", flush=True)

    model.train()
    evaluate(0)
    for step in range(P["steps"]):
        lr = lr_at(step, P["steps"], P["lr"], P["warmup"])
        for g in opt.param_groups:
            g["lr"] = lr
        offs = torch.randint(0, len(train_t) - ctx - 1, (P["batch"],), generator=gen)
        x = torch.stack([train_t[o:o + ctx + 1] for o in offs.tolist()])
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run_loss += float(loss)
        run_n += 1
        if (step + 1) % a.eval_every == 0 or step + 1 == P["steps"]:
            evaluate(step + 1)
            run_loss, run_n = 0.0, 0
    train_s = time.time() - t_train

    model.eval()
    tot, cnt = stream_loss(model, valid, ctx, a.final_eval_windows or None)
    full_val = tot / cnt
    print(f"train_gpt2: {a.model}: final validation loss {full_val:.5f} over {cnt} tokens "
          f"(ppl {math.exp(full_val):.3f}); training {train_s:.0f}s", flush=True)

    gpt2.export(model, out)
    for f in TOKENIZER_FILES:
        src = os.path.join(a.tokenizer, f)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(out, f))
    with open(log_path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    os.replace(log_path + ".tmp", log_path)
    result = {"model": a.model, "parameters": n_params, "config": cfg,
              "hyperparameters": dict(P, n_positions=ctx, optimizer="AdamW(0.9,0.95,wd=0.1)",
                                      schedule="linear warmup + cosine to 10%", grad_clip=1.0,
                                      threads=a.threads),
              "train_tokens_in_stream": int(len(train)), "tokens_seen": P["steps"] * P["batch"] * ctx,
              "final_eval_val_loss": rows[-1]["val_loss"], "final_val_loss": round(full_val, 5),
              "final_val_tokens": cnt, "train_seconds": round(train_s, 1),
              "total_seconds": round(time.time() - t_start, 1),
              "torch": torch.__version__}
    with open(os.path.join(out, "train_result.json.tmp"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(os.path.join(out, "train_result.json.tmp"), os.path.join(out, "train_result.json"))
    print(f"train_gpt2: wrote {out}", flush=True)


if __name__ == "__main__":
    main()
