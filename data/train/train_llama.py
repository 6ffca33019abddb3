#!/usr/bin/python3
"""Trains the "regime" Llama target (cross-entropy) or its draft (distillation from the trained
target) on the corpus train split and exports complete Hugging Face Llama directories.

  /usr/bin/python3 data/train/train_llama.py --model target [--threads 2] [--steps N] ...
  /usr/bin/python3 data/train/train_llama.py --model draft --teacher data/models/regime/target

Data and evaluation are train_gpt2.py's (same token stream cache, random ctx+1 windows from a
seeded torch.Generator, validation on --eval-windows windows spread over the valid split, final
loss on --final-eval-windows windows). Optimiser: AdamW (0.9, 0.95, wd 0.1 on matrices and
embeddings), linear warmup then cosine to 10% of peak (a LambdaLR), grad-norm clip 1.0.

Precision (--precision, default bf16): forward passes under CPU bf16 autocast (the projections'
matmuls in bf16; llama.py keeps the residual stream, RMSNorm, RoPE, attention softmax and LM
head in float32); loss, backward, master weights and AdamW state are float32; all evaluation is
float32 (what the C engine computes). ~2.1x the float32 throughput on this CPU (AVX512-BF16).

Draft loss: forward KL(p_target || q_draft) at temperature 1, per token, averaged over all ctx
positions, the teacher's logits computed under torch.no_grad (--teacher-precision bf16 by
default: KL(p_f32 || p_bf16) of a trained teacher is ~1e-4 nats, 3 orders below the draft's)
from the exported target directory (any GPT-2 or Llama directory with the same tokenizer works),
plus --ce-weight (default 0) x cross-entropy on the data. The draft's logged and final
validation metrics also include, against the float32 teacher on the same windows: mean KL, mean
total variation d_TV = 1/2 sum |p - q| (1 - d_TV is the expected per-token acceptance of
speculative sampling at temperature 1) and greedy (argmax) agreement. Its train_loss column is
the distillation loss.

Checkpoints (--ckpt-dir, default data/cache/train/regime-<model>, git-ignored): every
--ckpt-every-s seconds (and/or --ckpt-every-steps), and when training ends, written to
ckpt.pt.tmp then renamed to ckpt.pt. They hold model + optimizer + scheduler state, the data
generator's and torch/numpy/python RNG states, the step, log rows, running loss and the sha256
of the run's settings (everything that changes the result: shape, hyperparameters, precision,
seed, ctx, eval settings, tokenizer, corpus train/valid token streams, teacher weights). On start
an existing checkpoint with the same settings hash is resumed ("resuming from step N"); one with
different settings is refused (exit 1, one line) unless --restart, which discards it. When the
checkpoint is finished and the output directory holds that run's export (train_result.json's
settings and model sha256 match), the run prints "up to date" and stops (--force redoes the
final evaluation and export). At the same thread count a resumed run ends with bit-identical
weights to an uninterrupted one (the thread count is not part of the hash; a change is
reported). --threads sets torch's intra-op threads and OPENBLAS_NUM_THREADS/OMP_NUM_THREADS; on
CPUs with AVX-512, OPENBLAS_CORETYPE=SkylakeX is set unless already set (Debian's OpenBLAS does
not recognise Zen 4).
"""
import argparse
import hashlib
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)

CTX = 256
PRESETS = {
    # Llama target, ~19.4M parameters (78 MB f32): out of a 32 MB last-level cache.
    "target": dict(hidden=512, intermediate=1376, layers=6, heads=8, kv_heads=4, tied=False,
                   steps=1600, batch=16, lr=1.5e-3, warmup=80, seed=12, precision="bf16"),
    # Llama draft, ~0.6M parameters; ~3.5% of the target's forward FLOPs per token.
    "draft": dict(hidden=128, intermediate=344, layers=2, heads=4, kv_heads=2, tied=True,
                  steps=1500, batch=16, lr=3e-3, warmup=60, seed=11, precision="bf16"),
}
RMS_EPS = 1e-5
ROPE_THETA = 10000.0


def env_setup(threads, coretype=True):
    """Must run before torch is imported (OpenBLAS reads its environment when loaded)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    if coretype and "OPENBLAS_CORETYPE" not in os.environ:
        try:
            with open("/proc/cpuinfo") as f:
                if " avx512f" in f.read():
                    os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
        except OSError:
            pass


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def model_config(P, vocab, eos):
    import llama
    return llama.make_config(vocab, P["hidden"], P["intermediate"], P["layers"], P["heads"],
                             P["kv_heads"], CTX, eos, tie_word_embeddings=P["tied"],
                             rms_norm_eps=RMS_EPS, rope_theta=ROPE_THETA)


def build(P, cfg):
    import torch
    import llama
    torch.manual_seed(P["seed"])
    model = llama.LlamaForCausalLM(cfg)
    model.init_weights(P["seed"])
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=P["lr"], betas=(0.9, 0.95), eps=1e-8)
    return model, opt


def make_sched(opt, P):
    import torch
    from train_gpt2 import lr_at
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: lr_at(min(s, P["steps"] - 1), P["steps"], P["lr"], P["warmup"]) / P["lr"])


def distill_loss(student_logits, teacher_logits, targets, ce_weight):
    """Forward KL(p_t || q_s) per token, mean over tokens (+ ce_weight x CE). -> (loss, kl)."""
    import torch.nn.functional as F
    V = student_logits.shape[-1]
    s = F.log_softmax(student_logits.reshape(-1, V), dim=-1)
    t = F.log_softmax(teacher_logits.reshape(-1, V), dim=-1)
    kl = F.kl_div(s, t, reduction="batchmean", log_target=True)
    loss = kl
    if ce_weight:
        loss = loss + ce_weight * F.nll_loss(s, targets.reshape(-1))
    return loss, kl


def train_step(model, opt, sched, x, teacher=None, ce_weight=0.0, precision="bf16",
               teacher_precision="bf16"):
    """One optimiser step. precision "bf16": the model's forward pass under CPU bf16 autocast
    (projections in bf16; llama.py keeps norms, softmax, LM head in float32); the loss, backward
    pass, master weights and AdamW state are float32. teacher_precision likewise for the
    teacher's no_grad forward."""
    import torch
    import torch.nn.functional as F
    inp, tgt = x[:, :-1], x[:, 1:]
    if teacher is not None:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16,
                                             enabled=teacher_precision == "bf16"):
            tl = teacher(inp)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        logits = model(inp)
    logits = logits.float()
    if teacher is None:
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
    else:
        loss, _ = distill_loss(logits, tl.float(), tgt, ce_weight)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    return float(loss)


def teacher_metrics(model, teacher, stream, ctx, n_windows, batch=16):
    """Mean KL(p_t||q), d_TV and greedy agreement of model vs teacher over the same valid
    windows stream_loss uses (n_windows spread evenly; all positions of each window)."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    full = len(stream) // ctx
    n = min(n_windows or full, full)
    starts = [(i * full // n) * ctx for i in range(n)]
    kl = tv = agree = 0.0
    cnt = 0
    with torch.no_grad():
        for i in range(0, len(starts), batch):
            x = torch.from_numpy(np.stack([stream[o:o + ctx] for o in starts[i:i + batch]])
                                 .astype(np.int64))
            q = F.log_softmax(model(x).double(), -1)
            p = F.log_softmax(teacher(x).double(), -1)
            kl += float((p.exp() * (p - q)).sum())
            tv += float(0.5 * (p.exp() - q.exp()).abs().sum())
            agree += float((p.argmax(-1) == q.argmax(-1)).sum())
            cnt += x.shape[0] * x.shape[1]
    return {"kl": kl / cnt, "tv": tv / cnt, "greedy_agreement": agree / cnt, "tokens": cnt}


def save_ckpt(path, state):
    import torch
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(PRESETS), required=True)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--lr", type=float)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", choices=("bf16", "f32"),
                    help="the trained model's forward under bf16 autocast (default; ~2x faster "
                         "here) or plain float32; evaluation is always float32")
    ap.add_argument("--teacher-precision", choices=("bf16", "f32"), default="bf16",
                    help="draft: the teacher's forward (default bf16, ~3x faster here)")
    ap.add_argument("--teacher", help="draft: exported target dir (default data/models/regime/target)")
    ap.add_argument("--ce-weight", type=float, default=0.0,
                    help="draft: weight of the data cross-entropy added to the KL (default 0)")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-windows", type=int, default=128)
    ap.add_argument("--final-eval-windows", type=int, default=1024)
    ap.add_argument("--tokenizer", default=os.path.join(DATA, "models", "tokenizer"))
    ap.add_argument("--out", help="default data/models/regime/<model>")
    ap.add_argument("--ckpt-dir", help="default data/cache/train/regime-<model>")
    ap.add_argument("--ckpt-every-s", type=float, default=300.0)
    ap.add_argument("--ckpt-every-steps", type=int, default=0, help="also every N steps (0: off)")
    ap.add_argument("--restart", action="store_true", help="discard an existing checkpoint")
    ap.add_argument("--force", action="store_true",
                    help="redo the final evaluation and export even when the output is up to date")
    ap.add_argument("--no-coretype", action="store_true", help="do not set OPENBLAS_CORETYPE")
    a = ap.parse_args()
    env_setup(a.threads, not a.no_coretype)

    import numpy as np
    import torch
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(DATA, "tokenizer"))
    import bpe
    import llama
    from train_gpt2 import lr_at, sha256_file, stream_loss, token_stream

    torch.set_num_threads(a.threads)
    P = dict(PRESETS[a.model])
    for k in ("steps", "batch", "lr", "warmup", "seed", "precision"):
        if getattr(a, k) is not None:
            P[k] = getattr(a, k)
    out = a.out or os.path.join(DATA, "models", "regime", a.model)
    ckpt_dir = a.ckpt_dir or os.path.join(DATA, "cache", "train", "regime-" + a.model)
    ckpt = os.path.join(ckpt_dir, "ckpt.pt")
    for f in ("vocab.json", "merges.txt"):
        if not os.path.exists(os.path.join(a.tokenizer, f)):
            sys.exit(f"train_llama: {a.tokenizer}/{f}: missing (run make tokenizer)")
    tag = f"train_llama: {a.model}"

    t_start = time.time()
    enc = bpe.Encoder.load(a.tokenizer)
    V = len(enc.vocab)
    train = token_stream("train", a.tokenizer)
    valid = token_stream("valid", a.tokenizer)
    ctx = CTX

    teacher, teacher_dir, teacher_sha = None, None, None
    if a.model == "draft":
        teacher_dir = a.teacher or os.path.join(DATA, "models", "regime", "target")
        st = os.path.join(teacher_dir, "model.safetensors")
        if not os.path.exists(st):
            sys.exit(f"train_llama: teacher {st}: missing (train the target first)")
        teacher_sha = sha256_file(st)
        from perplexity import load_model_dir  # GPT-2 or Llama directory
        teacher = load_model_dir(teacher_dir)
        for p in teacher.parameters():
            p.requires_grad_(False)
        if teacher.cfg["vocab_size"] != V or teacher.cfg.get("eos_token_id") != enc.eot:
            sys.exit(f"train_llama: teacher {teacher_dir}: vocabulary differs from the tokenizer's")

    cfg = model_config(P, V, enc.eot)
    model, opt = build(P, cfg)
    sched = make_sched(opt, P)
    n_params = llama.count_params(model)
    settings = {"model": a.model, "P": P, "config": cfg, "ctx": ctx,
                "loss": ("forward_kl_T1" + (f"+{a.ce_weight}*ce" if a.ce_weight else ""))
                if teacher is not None else "ce",
                "eval_every": a.eval_every, "eval_windows": a.eval_windows,
                "tokenizer_merges_sha256": sha256_file(os.path.join(a.tokenizer, "merges.txt")),
                "train_tokens": int(len(train)), "valid_tokens": int(len(valid)),
                "train_sha256": sha256_bytes(train.tobytes()),
                "valid_sha256": sha256_bytes(valid.tobytes()),
                "teacher_sha256": teacher_sha,
                "teacher_precision": a.teacher_precision if teacher is not None else None,
                "version": 1}
    settings_hash = sha256_bytes(json.dumps(settings, sort_keys=True).encode())
    print(f"{tag}: {n_params} parameters ({n_params * 4 / 1e6:.1f} MB f32), "
          f"{llama.forward_flops_per_token(cfg, ctx // 2) / 1e6:.2f} MFLOP/token at ctx/2, {P}, "
          f"threads {a.threads}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '-')}, "
          f"settings {settings_hash[:12]}", flush=True)

    gen = torch.Generator().manual_seed(P["seed"] + 1000)
    train_t = torch.from_numpy(train.astype(np.int64))
    step, rows, run_loss, run_n, train_s, resumes = 0, [], 0.0, 0, 0.0, 0
    if os.path.exists(ckpt) and a.restart:
        os.remove(ckpt)
        print(f"{tag}: --restart: removed {ckpt}", flush=True)
    rp = os.path.join(out, "train_result.json")
    if os.path.exists(ckpt) and os.path.exists(rp) and not a.force:
        # finished before with these settings and the exported weights are that run's: done
        with open(rp) as f:
            prev = json.load(f)
        wp = os.path.join(out, "model.safetensors")
        if (prev.get("settings_sha256") == settings_hash and os.path.exists(wp)
                and prev.get("model_sha256") == sha256_file(wp)):
            st = torch.load(ckpt)
            if st.get("settings_hash") == settings_hash and st.get("step") == P["steps"]:
                print(f"{tag}: up to date ({out} is the finished run of checkpoint {ckpt}; "
                      "--force re-exports)", flush=True)
                return
    if os.path.exists(ckpt):
        st = torch.load(ckpt)
        if st.get("settings_hash") != settings_hash:
            sys.exit(f"train_llama: {ckpt}: checkpoint of different settings "
                     f"({str(st.get('settings_hash'))[:12]} != {settings_hash[:12]}); "
                     "remove it or pass --restart")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        sched.load_state_dict(st["sched"])
        gen.set_state(st["gen"])
        torch.set_rng_state(st["torch_rng"])
        np.random.set_state(st["numpy_rng"])
        random.setstate(st["python_rng"])
        step, rows, run_loss, run_n = st["step"], st["rows"], st["run_loss"], st["run_n"]
        train_s, resumes = st["train_seconds"], st["resumes"] + 1
        if st["threads"] != a.threads:
            print(f"{tag}: note: checkpoint was written at {st['threads']} threads, now "
                  f"{a.threads}: not bit-identical to an uninterrupted run", flush=True)
        print(f"{tag}: resuming from step {step}", flush=True)

    def checkpoint():
        save_ckpt(ckpt, {"settings_hash": settings_hash, "settings": settings, "step": step,
                         "model": model.state_dict(), "opt": opt.state_dict(),
                         "sched": sched.state_dict(), "gen": gen.get_state(),
                         "torch_rng": torch.get_rng_state(), "numpy_rng": np.random.get_state(),
                         "python_rng": random.getstate(), "rows": rows, "run_loss": run_loss,
                         "run_n": run_n, "train_seconds": train_s + (time.time() - t_seg),
                         "resumes": resumes, "threads": a.threads})

    def evaluate():
        model.eval()
        tot, cnt = stream_loss(model, valid, ctx, a.eval_windows)
        row = {"step": step, "tokens_seen": step * P["batch"] * ctx,
               "train_loss": round(run_loss / run_n, 5) if run_n else "",
               "val_loss": round(tot / cnt, 5)}
        if teacher is not None:
            m = teacher_metrics(model, teacher, valid, ctx, a.eval_windows)
            row.update(val_kl=round(m["kl"], 5), val_tv=round(m["tv"], 5),
                       val_greedy_agree=round(m["greedy_agreement"], 5))
        model.train()
        row.update(lr=round(lr_at(min(step, P["steps"] - 1), P["steps"], P["lr"], P["warmup"]), 7),
                   elapsed_s=round(train_s + time.time() - t_seg, 1))
        rows.append(row)
        extra = f" kl {row['val_kl']} tv {row['val_tv']}" if teacher is not None else ""
        print(f"{tag} step {step}/{P['steps']} train {row['train_loss']} val {row['val_loss']}"
              f"{extra} ({row['elapsed_s']}s)", flush=True)

    t_seg = time.time()
    t_ckpt = time.time()
    model.train()
    if step == 0 and not rows:
        evaluate()
    while step < P["steps"]:
        offs = torch.randint(0, len(train_t) - ctx - 1, (P["batch"],), generator=gen)
        x = torch.stack([train_t[o:o + ctx + 1] for o in offs.tolist()])
        run_loss += train_step(model, opt, sched, x, teacher, a.ce_weight, P["precision"],
                               a.teacher_precision)
        run_n += 1
        step += 1
        if step % a.eval_every == 0 or step == P["steps"]:
            evaluate()
            run_loss, run_n = 0.0, 0
        if (step == P["steps"] or time.time() - t_ckpt >= a.ckpt_every_s
                or (a.ckpt_every_steps and step % a.ckpt_every_steps == 0)):
            checkpoint()
            t_ckpt = time.time()
            print(f"{tag}: checkpoint at step {step} -> {ckpt}", flush=True)
    train_s += time.time() - t_seg

    model.eval()
    tot, cnt = stream_loss(model, valid, ctx, a.final_eval_windows or None)
    full_val = tot / cnt
    result_extra = {}
    if teacher is not None:
        m = teacher_metrics(model, teacher, valid, ctx, a.final_eval_windows or None)
        result_extra = {"final_val_kl_to_teacher": round(m["kl"], 5),
                        "final_val_tv_to_teacher": round(m["tv"], 5),
                        "final_val_greedy_agreement": round(m["greedy_agreement"], 5),
                        "teacher_dir": os.path.relpath(teacher_dir, os.path.dirname(DATA)),
                        "teacher_sha256": teacher_sha}
        print(f"{tag}: final vs teacher: KL {m['kl']:.4f}, d_TV {m['tv']:.4f}, greedy agreement "
              f"{m['greedy_agreement']:.4f}", flush=True)
    print(f"{tag}: final validation loss {full_val:.5f} over {cnt} tokens (ppl "
          f"{np.exp(full_val):.3f}); training {train_s:.0f}s over {resumes + 1} run(s)", flush=True)

    llama.save_hf_dir(model, cfg, out, a.tokenizer)
    log_path = os.path.join(out, "training_log.csv")
    fields = list(rows[-1])
    with open(log_path + ".tmp", "w") as f:
        f.write(",".join(fields) + "\n")
        for r in rows:
            f.write(",".join(str(r.get(k, "")) for k in fields) + "\n")
    os.replace(log_path + ".tmp", log_path)
    f32 = 4 * n_params
    result = {"model": a.model, "architecture": "llama", "parameters": n_params,
              "f32_bytes": f32, "config": cfg,
              "forward_flops_per_token_ctx_half": llama.forward_flops_per_token(cfg, ctx // 2),
              "hyperparameters": dict(P, n_positions=ctx, optimizer="AdamW(0.9,0.95,wd=0.1)",
                                      schedule="linear warmup + cosine to 10%", grad_clip=1.0,
                                      threads=a.threads, loss=settings["loss"],
                                      teacher_precision=settings["teacher_precision"],
                                      init="N(0,0.02), o/down_proj /sqrt(2L), norms 1"),
              "settings_sha256": settings_hash,
              "model_sha256": sha256_file(os.path.join(out, "model.safetensors")),
              "train_tokens_in_stream": int(len(train)), "tokens_seen": P["steps"] * P["batch"] * ctx,
              "final_eval_val_loss": rows[-1]["val_loss"], "final_val_loss": round(full_val, 5),
              "final_val_tokens": cnt, **result_extra,
              "train_seconds": round(train_s, 1), "runs": resumes + 1,
              "last_run_total_seconds": round(time.time() - t_start, 1),
              "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
              "torch": torch.__version__}
    with open(rp + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(rp + ".tmp", rp)
    print(f"{tag}: wrote {out}", flush=True)


if __name__ == "__main__":
    main()
