#!/usr/bin/python3
"""PyTorch perplexity of a GPT-2 or Llama model directory on a text file.

  /usr/bin/python3 data/train/perplexity.py --model DIR --data FILE [--max-tokens M] [--threads 1]

Convention (shared with `sprinter perplexity --model DIR --data FILE`):
  - FILE is read as UTF-8; every non-empty line is one document (the trailing '\\n' is not part
    of it; a '\\r' before it is).
  - Each document is encoded separately with the model directory's GPT-2 tokenizer and followed by
    the eos id; all are concatenated into one token stream.
  - --max-tokens M truncates the stream to its first M tokens.
  - The stream is cut into consecutive non-overlapping windows of ctx = n_positions tokens
    (max_position_embeddings for Llama; the last window may be shorter; a window of length 1
    is dropped). Within each window, tokens
    1..len-1 are predicted from the preceding tokens of that window only.
  - perplexity = exp(total NLL / number of predicted tokens), natural log.
Prints one JSON object: {"tokens": predicted tokens, "nll": total NLL, "ppl": perplexity}.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tokenizer"))
import gpt2  # noqa: E402
import llama  # noqa: E402
import bpe  # noqa: E402


def load_model_dir(d):
    """GPT-2 (gpt2.py) or Llama (llama.py) directory, by config.json's model_type."""
    with open(os.path.join(d, "config.json")) as f:
        mt = json.load(f).get("model_type")
    return llama.load_hf_dir(d) if mt == "llama" else gpt2.load_model_dir(d)


def context_of(model):
    return model.cfg.get("n_positions") or model.cfg["max_position_embeddings"]


def read_stream(enc, path, max_tokens=None):
    ids = []
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8")  # strict: invalid UTF-8 is an error
    for line in text.split("\n"):
        if not line:
            continue
        ids.extend(enc.encode(line))
        ids.append(enc.eot)
        if max_tokens is not None and len(ids) >= max_tokens:
            break
    if max_tokens is not None:
        ids = ids[:max_tokens]
    return np.asarray(ids, dtype=np.int64)


@torch.no_grad()
def perplexity(model, stream, ctx, batch=8):
    total, count = 0.0, 0
    full = len(stream) // ctx
    for i in range(0, full, batch):
        j = min(full, i + batch)
        x = torch.from_numpy(stream[i * ctx:j * ctx]).view(j - i, ctx)
        logits = model(x)
        total += float(F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).double(),
                                       x[:, 1:].reshape(-1), reduction="sum"))
        count += (j - i) * (ctx - 1)
    rest = stream[full * ctx:]
    if len(rest) > 1:
        x = torch.from_numpy(rest).view(1, -1)
        logits = model(x)
        total += float(F.cross_entropy(logits[0, :-1].double(), x[0, 1:], reduction="sum"))
        count += len(rest) - 1
    return total, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--max-tokens", type=int)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.max_tokens is not None and a.max_tokens < 0:
        sys.exit("perplexity: --max-tokens must be >= 0")
    try:
        model = load_model_dir(a.model)
        enc = bpe.Encoder.load(a.model)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"perplexity: {a.model}: {e}")
    if enc.eot < 0:
        sys.exit(f"perplexity: {a.model}: tokenizer has no {bpe.EOT}")
    try:
        stream = read_stream(enc, a.data, a.max_tokens)
    except (OSError, UnicodeDecodeError) as e:
        sys.exit(f"perplexity: {a.data}: {e}")
    ctx = context_of(model)
    total, count = perplexity(model, stream, ctx)
    if count == 0:
        sys.exit(f"perplexity: {a.data}: no tokens to predict")
    print(json.dumps({"tokens": count, "nll": total, "ppl": math.exp(total / count)}))


if __name__ == "__main__":
    main()
