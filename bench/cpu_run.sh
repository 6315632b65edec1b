#!/usr/bin/env bash
# The CPU benchmark run on PoCL (run it on an otherwise idle machine: timings of a shared one
# are noise):
#   bench/cpu_run.sh              whole zoo, batch 1 and 8, fp32; batch 32 for as many models
#                                 as fit in B32_BUDGET seconds (default 1200); partitioner scale
#   bench/cpu_run.sh check        tiny resnet18, batch 1 (harness check, ~2 min)
# Writes bench/out/cpu/{b1-8,b32,partition}.json (OUTDIR= to change), then the merged
# tables and chart: bench/out/cpu/cpu.md and cpu-ratios.png (chart needs matplotlib).
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-full}
OUTDIR=${OUTDIR:-bench/out/cpu}
PY=${PYTHON:-python3}
mkdir -p "$OUTDIR"
T0=$(date +%s)

"$PY" setup.py -q build_ext --inplace -j 2 >"$OUTDIR/build.log" 2>&1 || { tail -30 "$OUTDIR/build.log"; exit 1; }
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TORCHTRT_C_DEVICE=${TORCHTRT_C_DEVICE:-cpu}

run() {
    local name=$1; shift
    echo "== $name" >&2
    "$PY" bench/run.py "$@" --tag "cpu: $name" --out "$OUTDIR/$name.json" >"$OUTDIR/$name.log" 2>&1 \
        || { echo "cpu_run.sh: $name failed" >&2; tail -5 "$OUTDIR/$name.log" >&2; }
}

case "$MODE" in
    full)
        run b1-8 --models resnet18,resnet50,mobilenet_v2,vit_b16,bert_base,gpt2 --batches 1,8 --precisions fp32 \
            --warmup 2 --budget 3 --min-runs 5 --max-runs 100
        # batch 32: cheapest models first, no new row after B32_BUDGET seconds
        run b32 --models mobilenet_v2,resnet18,resnet50,bert_base,vit_b16,gpt2 --batches 32 --precisions fp32 \
            --warmup 1 --budget 3 --min-runs 3 --max-runs 50 --deadline "${B32_BUDGET:-1200}"
        run partition --models "" --partition
        files=("$OUTDIR/b1-8.json" "$OUTDIR/b32.json" "$OUTDIR/partition.json") ;;
    check)
        run check --size tiny --models resnet18 --batches 1 --precisions fp32 --warmup 1 --budget 0.5
        files=("$OUTDIR/check.json") ;;
    *) echo "usage: bench/cpu_run.sh [full|check]" >&2; exit 2 ;;
esac
existing=()
for f in "${files[@]}"; do [ -e "$f" ] && existing+=("$f"); done
png=()
"$PY" -c "import matplotlib" 2>/dev/null && png=(--png "$OUTDIR/cpu-ratios.png")
"$PY" bench/report.py "${existing[@]}" --md "$OUTDIR/cpu.md" "${png[@]}"
echo "cpu_run.sh $MODE done in $(( $(date +%s) - T0 ))s: $OUTDIR/cpu.md" >&2
