#!/usr/bin/python3
"""Every done run's token log (tokens/RUNHASH.h5) as a pandas DataFrame through h5py, one row per
emitted token (results/README.md, "tokens/RUNHASH.h5"), and per run what the log counts: tokens,
verifier accepts (kind 2), SD resamples (kind 4) and tokens the target decided.

usage: python3 tokens_h5py.py RESULTS_DIR
"""
import os
import sqlite3
import sys

import h5py
import pandas as pd

res = sys.argv[1]
con = sqlite3.connect(f"file:{res}/runs.sqlite?mode=ro", uri=True)
logs = con.execute("SELECT run_hash, method, token_log FROM runs WHERE status = 'done' ORDER BY run_index").fetchall()
con.close()
print("run_hash\tmethod\ttokens\tverifier_accepts\trejected\ttarget_decided")
for run_hash, method, rel in logs:
    with h5py.File(os.path.join(res, rel), "r") as f:
        log = pd.DataFrame({name: f[name][()] for name in f.keys() if f[name].ndim == 1})
    print(f"{run_hash}\t{method}\t{len(log)}\t{(log['kind'] == 2).sum()}\t{(log['kind'] == 4).sum()}"
          f"\t{log['target_called'].sum()}")
