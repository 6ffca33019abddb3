#!/usr/bin/python3
"""The summary table of a results directory, from runs.sqlite with pandas: per method, dataset,
temperature and grid parameters, the figures `sprinter summary --tsv` prints under the same names (results/README.md).

usage: python3 summary_pandas.py RESULTS_DIR
"""
import sqlite3
import sys

import pandas as pd

res = sys.argv[1]
con = sqlite3.connect(f"file:{res}/runs.sqlite?mode=ro", uri=True)  # read-only: the sweep may be running
runs = pd.read_sql("SELECT * FROM runs WHERE status = 'done'", con)
prompts = pd.read_sql("SELECT * FROM prompts", con)
con.close()

# grid parameters: NULL (NaN) where a method does not use one; runs.eta_fp / eta_tp are an oracle's
# configured rates (renamed here), the eta_fp / eta_tp below the measured ones
runs = runs.rename(columns={"eta_fp": "oracle_eta_fp", "eta_tp": "oracle_eta_tp"})
grid = [c for c in ("lambda", "tau", "gamma", "max_run", "alpha", "p_min", "oracle_eta_fp", "oracle_eta_tp",
                    "oracle_stay", "bonus", "finish_round") if c in runs.columns]
rows = prompts.merge(runs[["run_hash", "method", "dataset", "temperature"] + grid], on="run_hash")
rows["dataset"] = rows["dataset"].str.rsplit("/", n=1).str[-1]
g = rows.groupby(["method", "dataset", "temperature"] + grid, dropna=False, sort=False)
s = g[["tokens", "t_total", "target_calls", "accepted", "verifier_accepts", "rejected", "fp", "tp",
       "audited_neg", "audited_pos"]].sum(min_count=1)
s["runs"] = g["run_hash"].nunique()
checked = s["accepted"] - s["verifier_accepts"] + s["rejected"]  # drafts the target decided
s["tokens_per_s"] = s["tokens"] / s["t_total"]
s["tokens_per_call"] = s["tokens"] / s["target_calls"].where(s["target_calls"] > 0)
s["accept_rate"] = (s["accepted"] - s["verifier_accepts"]) / checked.where(checked > 0)
s["eta_fp"] = s["fp"] / s["audited_neg"].where(s["audited_neg"] > 0)
s["eta_tp"] = s["tp"] / s["audited_pos"].where(s["audited_pos"] > 0)
out = s.reset_index()[["method", "dataset", "temperature"] + grid + ["runs", "tokens", "tokens_per_s", "tokens_per_call",
                                                           "accept_rate", "eta_fp", "eta_tp"]]
print(out.to_csv(sep="\t", index=False, float_format="%.9g"), end="")
