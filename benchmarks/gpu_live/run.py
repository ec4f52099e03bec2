"""Live run on a real GPU through Ray (docs/live-ray.md, "On a real GPU").

One local Ray node whose GPU Ray detects (``GPU`` resource, so each rank actor gets ``CUDA_VISIBLE_DEVICES``), three
1-GPU training jobs (``ddlsched.live.jobs.train_job`` with ``device=cuda``) under Tiresias with a 2 GPU-second first
queue, so the first job is preempted by the later ones and resumes from its checkpoint; then that job's loss at every
step is compared with an uninterrupted run of the same job in one process.

    python benchmarks/gpu_live/run.py OUTDIR [--device cuda|cpu] [--ray-cli PATH]

``--device cpu`` tries the script on a machine without a GPU (Ray is then told it has one GPU it does not have).
The run's result folder is packed as OUTDIR/live.tgz; OUTDIR/summary.txt has the figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from ddlsched.live.localray import LocalRayCluster

HERE = Path(__file__).resolve().parent


def read_losses(path: Path) -> dict[int, float]:
    out: dict[int, float] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            step, loss = line.split()
            out[int(step)] = float(loss)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--ray-cli", default=None, help="the `ray` program (default: beside this Python)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="ddl-gpu-live-"))
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    import torch

    say(f"torch {torch.__version__}; cuda available {torch.cuda.is_available()}"
        + (f"; {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""))
    args = {"device": a.device, "loss_log": str(tmp / "loss_{job_id}.txt"), "step_sleep_s": 0.02}
    rc = 1
    try:
        with LocalRayCluster([{"ddl_server:s0": 1.0}], num_cpus=4, num_gpus=1, ray_cli=a.ray_cli) as ray:
            cmd = [sys.executable, "-m", "ddlsched.cli", "live", "run", "--trace", str(HERE / "jobs.csv"),
                   "--cluster", str(HERE / "cluster.yaml"), "--policy", "tiresias", "--policy-param",
                   "thresholds=[2]", "--executor", "ray", "--executor-opt", f"address={ray.address}",
                   "--executor-opt", "entrypoint=ddlsched.live.jobs.train_job:main",
                   "--executor-opt", f"job_args={json.dumps(args)}", "--executor-opt", "checkpoint_every=50",
                   "--executor-opt", f"checkpoint_dir={tmp / 'ckpt'}", "--executor-opt", "gpu_resource=GPU",
                   "--grace", "30", "--out", str(a.out / "live")]
            t0 = time.monotonic()
            p = subprocess.run(cmd, capture_output=True, text=True)
            (a.out / "live_run.log").write_text(p.stdout + p.stderr)
            say(f"live run: exit {p.returncode} in {time.monotonic() - t0:.1f} s wall")
            say((p.stdout + p.stderr).strip()[-3000:])
            rc = p.returncode
        env = {"DDLSCHED_ITERATIONS": "400",
               "DDLSCHED_JOB_ARGS": json.dumps({"device": a.device, "loss_log": str(tmp / "ref.txt")})}
        import os

        subprocess.run([sys.executable, "-c", "from ddlsched.live.jobs.train_job import main; main()"],
                       env={**os.environ, **env}, check=True)
        live, ref = read_losses(tmp / "loss_a.txt"), read_losses(tmp / "ref.txt")
        same = sum(live.get(k) == v for k, v in ref.items())
        say(f"job a: {len(ref)} steps uninterrupted, {len(live)} logged live; bitwise-equal losses {same}/{len(ref)}")
        rec = a.out / "live" / "records.csv"
        if rec.exists():
            say(rec.read_text())
    finally:
        if (a.out / "live").exists():
            with tarfile.open(a.out / "live.tgz", "w:gz") as t:
                t.add(a.out / "live", arcname="live")
            shutil.rmtree(a.out / "live")
        (a.out / "summary.txt").write_text("\n".join(lines) + "\n")
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
