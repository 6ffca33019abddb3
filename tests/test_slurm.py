#!/usr/bin/env python3
"""A sharded sweep on a real Slurm cluster, started here for the test (Debian 12's slurm-wlm 22.05
and munge: scripts/install-deps.sh --test installs them).

The cluster: munged with a key generated for the test, slurmctld and slurmd in the foreground
(-D), one node (this machine, `hostname -s`, at 127.0.0.1) in one partition, no cgroups
(proctrack/linuxproc, task/none), no accounting; every file (key, sockets, state, spool, logs, pid
files) under a temporary directory, ports picked free at random, SLURM_CONF exported for the client
commands. The daemons are stopped by PID at the end, also when the test fails or is killed (a
SIGTERM on the parent's death, PR_SET_PDEATHSIG). A cluster that does not start is a FAIL with the
daemons' log tails, never a skip.

On it (tiny random models, tests/sweep_fixture.py; the three arrays at once):
- experiments/slurm/submit.sh SPEC 3: an array of 3 shards (sweep.sbatch) + the merge after it
  (merge.sbatch, afterany): every task COMPLETED, the merge exits 0 and the merged directory equals
  one unsharded sweep of the spec (sweep_dump: run hashes, prompt rows, token logs);
- the same with failed runs (--test-nan-logits sd): every task still COMPLETED (sweep.sbatch maps
  the sweep's exit 3 to 0 with one line saying so, in the tasks whose shard has sd runs), the merge
  runs, exits 3 with one line counting the failed runs of the grid, and equals the unsharded sweep
  with the same failures;
- negative control, the documented one-liner with --hold: task 2 cancelled before it runs, the
  merge (afterany) still runs and exits 4 with one line counting the runs of shard 2 as missing;
  the merged directory holds exactly the runs of shards 0 and 1. Resubmitting task 2 alone
  (--array=2) and the merge again completes it: exit 0, equal to the unsharded sweep.
Deterministic (fixed seeds; shards are decided by run index, not by timing). About 12 s (the
scheduler starts batch jobs without its default 3 s delay); the daemons' logs are kept in
WORK/slurm-logs when a check fails.

usage: test_slurm.py --sprinter BIN --dump SWEEP_DUMP --source REPO --work DIR
"""
import argparse
import ctypes
import getpass
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo")
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
         "BOOT_FAIL", "DEADLINE"}
JOB_OPTS = "--cpus-per-task=1 --mem=200M"  # sweep.sbatch asks for 4 CPUs and 8G: this node has less


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, **kw)


def find_exe(name):
    """name on PATH, or in /usr/sbin, /sbin (the daemons live there; PATH may lack them)."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/bin"
    return shutil.which(name, path=path)


def free_port(taken):
    """A TCP port in 20000..32767 (below Linux's ephemeral range) that binds now, not in taken."""
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(20000, 32768)
        if port in taken:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free TCP port in 20000..32767")


def die_with_parent():
    """preexec_fn: the daemon gets SIGTERM when this test process dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


def tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError as e:
        return "(%s)\n" % e


class Cluster:
    """munged + slurmctld + slurmd under one temporary directory."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="sp-slurm-")
        os.chmod(self.tmp, 0o755)  # munged: the socket's directory must be reachable by all
        self.procs = {}
        self.env = dict(os.environ)
        self.exe = {n: find_exe(n) for n in DAEMONS + CLIENTS + ("munge",)}
        self.host = socket.gethostname().split(".")[0]
        self.conf = os.path.join(self.tmp, "slurm.conf")
        self.env["SLURM_CONF"] = self.conf
        self.logs = {}

    def spawn(self, name, cmd):
        log = os.path.join(self.tmp, "log", name + ".out")
        self.logs[name] = log
        with open(log, "w") as f:
            self.procs[name] = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                env=self.env, preexec_fn=die_with_parent)

    def wait_for(self, what, ok, timeout):
        end = time.time() + timeout
        while time.time() < end:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError("%s exited with status %d while waiting for %s (log tails below)" %
                                       (name, p.returncode, what))
            if ok():
                return
            time.sleep(0.3)
        raise RuntimeError("%s: not ready after %d s (log tails below)" % (what, timeout))

    def diagnostics(self):
        out = ""
        for name, log in sorted(self.logs.items()):
            out += "--- %s (%s):\n%s" % (name, log, tail(log))
        return out

    def start_munge(self):
        mdir, sdir = os.path.join(self.tmp, "munge"), os.path.join(self.tmp, "munge-socket")
        os.makedirs(mdir, mode=0o700)
        os.makedirs(sdir, mode=0o755)
        os.chmod(sdir, 0o755)
        key = os.path.join(mdir, "munge.key")
        subprocess.run(["dd", "if=/dev/urandom", "of=" + key, "bs=1024", "count=1"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.chmod(key, 0o400)
        self.sock = os.path.join(sdir, "munge.sock")
        self.spawn("munged", [self.exe["munged"], "--foreground", "--force", "--key-file=" + key,
                              "--socket=" + self.sock, "--pid-file=" + os.path.join(mdir, "munged.pid"),
                              "--log-file=" + os.path.join(mdir, "munged.log"),
                              "--seed-file=" + os.path.join(mdir, "munged.seed")])

        def ready():
            if not os.path.exists(self.sock):
                return False
            if not self.exe["munge"]:
                return True
            return run([self.exe["munge"], "-n", "-S", self.sock], timeout=10).returncode == 0
        self.wait_for("munged", ready, 30)

    def write_conf(self):
        user = getpass.getuser()
        ctld, slurmd = free_port(set()), None
        slurmd = free_port({ctld})
        cpus = max(1, min(2, len(os.sched_getaffinity(0))))
        t = self.tmp
        for d in ("state", "spool"):
            os.makedirs(os.path.join(t, d), mode=0o755)
        with open(self.conf, "w") as f:
            f.write("""# generated by tests/test_slurm.py
ClusterName=sprintertest
SlurmctldHost={host}(127.0.0.1)
SlurmUser={user}
SlurmdUser={user}
SlurmctldPort={ctld}
SlurmdPort={slurmd}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
MailProg=/bin/true
StateSaveLocation={t}/state
SlurmdSpoolDir={t}/spool
SlurmctldPidFile={t}/slurmctld.pid
SlurmdPidFile={t}/slurmd.pid
SlurmctldLogFile={t}/log/slurmctld.log
SlurmdLogFile={t}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=3600
KillWait=5
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
""".format(host=self.host, user=user, ctld=ctld, slurmd=slurmd, sock=self.sock, t=t, cpus=cpus))
        self.logs["slurmctld.log"] = os.path.join(t, "log", "slurmctld.log")
        self.logs["slurmd.log"] = os.path.join(t, "log", "slurmd.log")

    def start(self):
        missing = [n for n, p in self.exe.items() if not p and n != "munge"]
        if missing:
            raise RuntimeError("not installed: %s (scripts/install-deps.sh --test installs slurm-wlm and munge)"
                               % ", ".join(missing))
        os.makedirs(os.path.join(self.tmp, "log"))
        self.start_munge()
        self.write_conf()
        self.spawn("slurmctld", [self.exe["slurmctld"], "-D", "-i", "-f", self.conf])
        self.wait_for("slurmctld", lambda: run([self.exe["sinfo"], "-h"], timeout=10, env=self.env).returncode == 0,
                      60)
        self.spawn("slurmd", [self.exe["slurmd"], "-D", "-N", self.host, "-f", self.conf])

        def idle():
            p = run([self.exe["sinfo"], "-h", "-N", "-o", "%T"], timeout=10, env=self.env)
            state = p.stdout.strip()
            if state.startswith(("drain", "down", "fail")):
                raise RuntimeError("node %s is %s: %s" % (self.host, state, run(
                    [self.exe["sinfo"], "-R"], env=self.env).stdout.strip()))
            return p.returncode == 0 and state.startswith(("idle", "mix", "alloc"))
        self.wait_for("slurmd (node idle)", idle, 60)

    def cmd(self, *args, cwd=None, env=None):
        return run([self.exe.get(args[0]) or args[0]] + list(args[1:]), env=env or self.env, cwd=cwd)

    def step_sockets(self):
        """The sockets of running slurmstepd in the spool directory (each removes its own on exit)."""
        spool, found = os.path.join(self.tmp, "spool"), []
        try:
            for f in os.listdir(spool):
                try:
                    if stat.S_ISSOCK(os.lstat(os.path.join(spool, f)).st_mode):
                        found.append(f)
                except OSError:
                    pass
        except OSError:
            pass
        return found

    def stop(self, jobs):
        """Cancels the test's jobs that are still there, then stops the daemons by PID."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None and jobs:
            self.cmd("scancel", *[str(j) for j in jobs])
            end = time.time() + 20
            while time.time() < end and self.cmd("squeue", "-h", "-o", "%i").stdout.strip():
                time.sleep(0.5)
        end = time.time() + 20  # the jobs' slurmstepd outlive them briefly
        while time.time() < end and self.step_sockets():
            time.sleep(0.3)
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=10)

    def keep_logs(self, dest):
        shutil.rmtree(dest, ignore_errors=True)
        if os.path.isdir(os.path.join(self.tmp, "log")):
            shutil.copytree(os.path.join(self.tmp, "log"), dest)

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def job_states(cluster, job):
    """{array task id or None: (state, exit code "N:S")} of a job or job array."""
    p = cluster.cmd("scontrol", "show", "job", "-o", str(job))
    out = {}
    for line in p.stdout.splitlines():
        st, ec = re.search(r"\bJobState=(\S+)", line), re.search(r"\bExitCode=(\S+)", line)
        task = re.search(r"\bArrayTaskId=(\S+)", line)
        if st:
            out[task.group(1) if task else None] = (st.group(1), ec.group(1) if ec else "?")
    return out


def wait_jobs(cluster, jobs, deadline):
    """Waits until every job (and each array task) has ended; returns {job: job_states}."""
    while True:
        states = {j: job_states(cluster, j) for j in jobs}
        if all(s and all(v[0] in ENDED for v in s.values()) for s in states.values()):
            return states
        if time.time() > deadline:
            raise RuntimeError("jobs not ended in time: %s\n%s" % (states, cluster.cmd("squeue").stdout))
        time.sleep(0.5)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError as e:
        return "(%s)" % e


def runs_of(out):
    """{run_hash: (run_index, method, status)} of a results directory."""
    con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
    r = {h: (i, m, s) for h, i, m, s in con.execute("SELECT run_hash, run_index, method, status FROM runs")}
    con.close()
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    t0 = time.time()
    S, work = os.path.abspath(a.sprinter), os.path.abspath(a.work)
    slurm_dir = os.path.join(os.path.abspath(a.source), "experiments", "slurm")
    shutil.rmtree(work, ignore_errors=True)
    fx.make_models(S, work)
    spec = fx.write_spec(work, name="slurm", methods="ar, sd, sprinter, oracle-iid", n_prompts=3, max_new=8)
    cache = os.path.join(work, "verifiers")
    t = fx.Checks("slurm_array")

    # the references: one unsharded sweep, and one where the sd runs fail (same hashes)
    ref, ref_nan = os.path.join(work, "ref"), os.path.join(work, "ref-nan")
    p = run([S, "sweep", spec, "--out", ref, "--quiet", "--verifier-cache", cache])
    t.check(p.returncode == 0, "unsharded sweep exits 0 (%s)" % p.stderr.strip()[-300:])
    q = run([S, "sweep", spec, "--out", ref_nan, "--quiet", "--verifier-cache", cache, "--test-nan-logits", "sd"])
    t.check(q.returncode == 3, "unsharded sweep with failing sd runs exits 3 (%d: %s)" % (q.returncode,
                                                                                       q.stderr.strip()[-300:]))
    if p.returncode != 0 or q.returncode != 3:
        t.finish()
    ref_dump, nan_dump = fx.dump(a.dump, ref)[1], fx.dump(a.dump, ref_nan)[1]
    grid = runs_of(ref)
    n_grid = len(grid)
    sd_shards = {i % 3 for i, m, _ in grid.values() if m == "sd"}
    n_sd = sum(1 for _, m, _ in grid.values() if m == "sd")
    in2 = sorted(i for i, _, _ in grid.values() if i % 3 == 2)

    cluster, jobs, t1 = Cluster(), [], time.time()

    def on_cluster():
        env = dict(cluster.env, SPRINTER=S, SBATCH_OPTS=JOB_OPTS)
        submit = os.path.join(slurm_dir, "submit.sh")
        dirs = {}
        for name in ("clean", "failed", "cancelled"):
            dirs[name] = os.path.join(work, name)
            os.makedirs(os.path.join(dirs[name], "results"))  # the jobs' output files (#SBATCH --output)
        out = {n: os.path.join(d, "out") for n, d in dirs.items()}
        sweep_opts = ["--verifier-cache", cache]

        def submitted(name, p):
            m = re.search(r"sweep array (\d+) .*merge (\d+)", p.stdout)
            t.check(p.returncode == 0 and m, "%s: submit.sh submits (%s%s)" % (name, p.stdout, p.stderr.strip()))
            if m:
                jobs.extend([int(m.group(1)), int(m.group(2))])
            return (int(m.group(1)), int(m.group(2))) if m else (None, None)

        # 1. the convenience script: array + merge (afterany)
        arr_a, merge_a = submitted("clean", run([submit, spec, "3", out["clean"]] + sweep_opts, env=env,
                                                cwd=dirs["clean"]))
        arr_b, merge_b = submitted("failed", run([submit, spec, "3", out["failed"]] + sweep_opts +
                                                 ["--test-nan-logits", "sd"], env=env, cwd=dirs["failed"]))
        # 2. the documented one-liner, held, task 2 cancelled before it runs
        c = dirs["cancelled"]

        def sbatch(*args):
            """(job id or None, stderr) of sbatch --parsable JOB_OPTS ARGS, from the directory c."""
            p = run([cluster.exe["sbatch"], "--parsable"] + JOB_OPTS.split() + list(args), env=env, cwd=c)
            return (int(p.stdout.strip().split(";")[0]) if p.returncode == 0 else None), p.stderr.strip()

        sweep_sbatch, merge_sbatch = os.path.join(slurm_dir, "sweep.sbatch"), os.path.join(slurm_dir, "merge.sbatch")
        arr_c, err = sbatch("--hold", "--array=0-2", sweep_sbatch, spec, out["cancelled"], *sweep_opts)
        t.check(arr_c is not None, "sbatch --hold --array=0-2 sweep.sbatch (%s)" % err)
        if arr_c is None:
            return
        jobs.append(arr_c)
        merge_c, err = sbatch("--dependency=afterany:%d" % arr_c, merge_sbatch, spec, out["cancelled"])
        jobs.extend([merge_c] if merge_c else [])
        # release 0 and 1 first (they split off the array's record), then cancel 2, still held: it
        # keeps a record, CANCELLED, and never runs
        p1 = cluster.cmd("scontrol", "release", "%d_0" % arr_c, "%d_1" % arr_c)
        p2 = cluster.cmd("scancel", "%d_2" % arr_c)
        t.check(merge_c is not None and p1.returncode == 0 and p2.returncode == 0,
                "merge submitted, tasks 0 and 1 released, task 2 cancelled (%s%s%s)" % (err, p1.stderr, p2.stderr))
        if None in (arr_a, arr_b, merge_c):
            return

        deadline = time.time() + 240
        st = wait_jobs(cluster, [arr_a, merge_a, arr_b, merge_b, arr_c, merge_c], deadline)
        print("  arrays ended %.1f s after the cluster came up" % (time.time() - t1), flush=True)

        def task_out(d, arr, i):
            return read(os.path.join(d, "results", "slurm-%d_%d.out" % (arr, i)))

        def merge_out(d, job):
            return read(os.path.join(d, "results", "slurm-merge-%d.out" % job))

        # clean
        tasks = st[arr_a]
        t.check(sorted(tasks) == ["0", "1", "2"] and all(v == ("COMPLETED", "0:0") for v in tasks.values()),
                "clean: the 3 array tasks COMPLETED with exit 0: %s" % tasks)
        mo = merge_out(dirs["clean"], merge_a)
        t.check(st[merge_a][None] == ("COMPLETED", "0:0") and ("merged %d runs from 3 directories" % n_grid) in mo
                and "sprinter merge:" not in mo, "clean: the merge ran after the array, exit 0, %d runs, no report "
                "line: %s\n%s" % (n_grid, st[merge_a], mo[-1500:]))
        rc, got, err = fx.dump(a.dump, out["clean"])
        t.check(rc == 0 and got == ref_dump, "clean: the merged directory equals one unsharded sweep: " +
                ("same" if got == ref_dump else err[:300] + fx.first_difference(ref_dump, got)))

        # failed runs
        tasks = st[arr_b]
        t.check(sorted(tasks) == ["0", "1", "2"] and all(v == ("COMPLETED", "0:0") for v in tasks.values()),
                "failed runs: the 3 array tasks still COMPLETED with exit 0: %s" % tasks)
        said = {i for i in range(3) if re.search(r"^sweep\.sbatch: shard %d/3 finished, but some runs failed" % i,
                                                 task_out(dirs["failed"], arr_b, i), re.M)}
        t.check(said == sd_shards, "failed runs: the tasks whose shard has sd runs (%s) say so in one line: %s" %
                (sorted(sd_shards), sorted(said)))
        mo = merge_out(dirs["failed"], merge_b)
        want = "sprinter merge: %d of %d runs of the grid failed" % (n_sd, n_grid)
        t.check(st[merge_b][None] == ("FAILED", "3:0") and want in mo and "missing" not in mo,
                "failed runs: the merge ran and exits 3 with '%s ...': %s\n%s" % (want, st[merge_b], mo[-1500:]))
        rc, got, err = fx.dump(a.dump, out["failed"])
        t.check(rc == 0 and got == nan_dump, "failed runs: the merged directory equals the unsharded sweep with the "
                "same failures: " + ("same" if got == nan_dump else err[:300] + fx.first_difference(nan_dump, got)))

        # a cancelled task
        tasks = st[arr_c]
        ran2 = os.path.exists(os.path.join(c, "results", "slurm-%d_2.out" % arr_c))
        t.check(tasks.get("2", ("?",))[0] == "CANCELLED" and not ran2 and tasks.get("0") == ("COMPLETED", "0:0") and
                tasks.get("1") == ("COMPLETED", "0:0"),
                "cancelled: task 2 CANCELLED (never ran: %s), 0 and 1 COMPLETED: %s" % (not ran2, tasks))
        mo = merge_out(c, merge_c)
        lines = [x for x in mo.splitlines() if x.startswith("sprinter merge:")]
        want = "sprinter merge: %d of %d runs of the grid are missing" % (len(in2), n_grid)
        t.check(st[merge_c][None] == ("FAILED", "4:0") and len(lines) == 1 and lines[0].startswith(want) and
                ("%d in shard 2/3" % len(in2)) in lines[0],
                "cancelled: the merge ran anyway and exits 4 with one line '%s ... %d in shard 2/3': %s\n%s" %
                (want, len(in2), st[merge_c], mo[-1500:]))
        got_runs = runs_of(out["cancelled"])
        want_runs = {h for h, (i, _, _) in grid.items() if i % 3 != 2}
        t.check(set(got_runs) == want_runs and all(s == "done" for _, _, s in got_runs.values()),
                "cancelled: the merged directory holds exactly the %d runs of shards 0 and 1 (%d)" %
                (len(want_runs), len(got_runs)))

        # recovery: task 2 alone, then the merge again
        arr_r, err = sbatch("--array=2", sweep_sbatch, spec, out["cancelled"], *sweep_opts)
        merge_r, err2 = sbatch("--dependency=afterany:%d" % arr_r, merge_sbatch, spec, out["cancelled"]) \
            if arr_r else (None, "")
        jobs.extend([j for j in (arr_r, merge_r) if j])
        if t.check(arr_r and merge_r, "resubmit task 2 and the merge (%s%s)" % (err, err2)):
            st = wait_jobs(cluster, [arr_r, merge_r], time.time() + 120)
            mo = merge_out(c, merge_r)
            rc, got, err = fx.dump(a.dump, out["cancelled"])
            t.check(st[arr_r].get("2") == ("COMPLETED", "0:0") and st[merge_r][None] == ("COMPLETED", "0:0") and
                    "sprinter merge:" not in mo and rc == 0 and got == ref_dump,
                    "cancelled: task 2 resubmitted alone (--array=2, shard 2/3) and merged: exit 0, equal to one "
                    "unsharded sweep: %s %s %s" % (st, mo[-800:], "same" if got == ref_dump else
                                                   err[:300] + fx.first_difference(ref_dump, got)))

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    try:
        try:
            cluster.start()
            started = True
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            t.check(False, "a single-node Slurm cluster (slurm-wlm + munge) starts here: %s" % e)
            started = False
        if started:
            print("  cluster up in %.1f s: munged, slurmctld, slurmd on %s (%s)" % (time.time() - t1, cluster.host,
                                                                                  cluster.tmp), flush=True)
            on_cluster()
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        t.check(False, "slurm: %s" % e)
    finally:
        try:
            cluster.stop(jobs)
            if t.failed and cluster.logs:
                print(cluster.diagnostics(), flush=True)
                cluster.keep_logs(os.path.join(work, "slurm-logs"))
                print("  (the daemons' logs: %s)" % os.path.join(work, "slurm-logs"), flush=True)
        finally:
            cluster.cleanup()
    print("  wall time %.1f s" % (time.time() - t0), flush=True)
    t.finish()


if __name__ == "__main__":
    main()
