#!/bin/bash
# Time two checkouts of ddlsched alternately on the full Philly-derived trace (philly2048, maxmin), 3 rounds,
# whole processes, so both see the same machine state. Usage (from the repository root):
#   git worktree add /tmp/oldtree <commit> && ln -s "$PWD/data" /tmp/oldtree/data   # if data/ is not tracked there
#   benchmarks/ab_engines.sh /tmp/oldtree [ROUNDS]
# Prints one JSON line per cell: round, tree (old/new), and bench_philly.py's cell result.
set -euo pipefail
OLD=${1:?usage: benchmarks/ab_engines.sh OLD_TREE [ROUNDS]}
NEW=$(pwd)
PY=${PY:-$NEW/.venv/bin/python}
for rep in $(seq 1 "${2:-3}"); do
  for pol in fifo tiresias; do
    for spec in "old:$OLD:$pol+consolidated" "new:$NEW:$pol+pack" "new:$NEW:$pol+consolidated"; do
      IFS=: read -r tag tree p <<< "$spec"
      r=$(cd "$tree" && PYTHONPATH="$tree/src" "$PY" benchmarks/bench_philly.py --cell "[\"$p\", \"philly2048\", null, \"maxmin\"]" | tail -1)
      echo "$rep $tag $r"
    done
  done
done
