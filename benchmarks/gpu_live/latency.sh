#!/usr/bin/env bash
# Scheduling latency of live runs on Ray with ≥ 200 jobs pending, and where a start goes, on a lent machine
# (16 cores; the GPU is not used: GPU slots are Ray custom resources). One script, under 4 minutes.
#   bash benchmarks/gpu_live/latency.sh OUTDIR        # from the repository root, ray importable (see docs/live-ray.md)
# Writes OUTDIR/latency.json, OUTDIR/calibrate.json and OUTDIR/summary.txt (everything printed).
set -u
out=${1:?usage: latency.sh OUTDIR}
mkdir -p "$out"
export PYTHONPATH=$PWD/src
py=${PYTHON:-python3}
{
  echo "== $(date -u) $(nproc) cores; $(uptime)"
  "$py" -c 'import ray, sys; print("python", sys.version.split()[0], "ray", ray.__version__)'
  timeout 170 "$py" benchmarks/live_latency.py --executor ray --jobs "${JOBS:-400}" --nodes 2 --slots 8 --num-cpus 4 \
    --min-pending "${MIN_PENDING:-200}" --policies fifo,tiresias --json "$out/latency.json"
  echo "live_latency exit $?"
  timeout 60 "$py" benchmarks/live_calibrate.py --repeats 3 --json "$out/calibrate.json" | tail -3
  echo "live_calibrate exit ${PIPESTATUS[0]}; $(uptime)"
} 2>&1 | tee "$out/summary.txt"
