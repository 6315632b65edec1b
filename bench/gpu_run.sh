#!/usr/bin/env bash
# The GPU benchmark matrix in two parts that each fit one device command (< 9 minutes):
#   bench/gpu_run.sh 1       resnet18, resnet50, mobilenet_v2, vit_b16 (fp32+fp16, batches
#                            1/8/32); kernels: elementwise, gemm
#   bench/gpu_run.sh 2       bert_base, gpt2 (fp32+fp16, batches 1/8/32); kernels: conv;
#                            partitioner scale
#   bench/gpu_run.sh check   resnet18 + bert_base, batch 1, fp32+fp16 (harness check)
# Registers NVIDIA's OpenCL ICD when the driver library is there, builds the extension, and
# writes one JSON per run.py call to $OUT (the device tool's output folder; else
# bench/out/gpu). Every run.py call gets a --deadline from the time left of LIMIT seconds
# (default 520) and is killed at the limit, so the part ends in time; rows are saved as they
# finish. Afterwards, here:
#   python bench/report.py OUTDIR/*.json --md bench/results/gpu.md --png bench/results/gpu-ratios.png
set -uo pipefail
cd "$(dirname "$0")/.."
PART=${1:?usage: bench/gpu_run.sh 1|2|check}
LIMIT=${LIMIT:-520}
ROW_MAX=${ROW_MAX:-75}          # worst single row seen (s): no row starts later than LIMIT-ROW_MAX
OUTDIR=${OUT:-bench/out/gpu}
mkdir -p "$OUTDIR"
T0=$(date +%s)
PY=${PYTHON:-python3}

icd=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
if [ -e "$icd" ] && [ -d /etc/OpenCL/vendors ] && [ ! -e /etc/OpenCL/vendors/nvidia.icd ]; then
    echo "$icd" > /etc/OpenCL/vendors/nvidia.icd
fi
"$PY" setup.py -q build_ext --inplace -j "$(nproc)" >"$OUTDIR/build-$PART.log" 2>&1 \
    || { tail -30 "$OUTDIR/build-$PART.log"; exit 1; }
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TORCHTRT_C_DEVICE=${TORCHTRT_C_DEVICE:-gpu}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$OUTDIR/gpu-$PART.txt" 2>&1 || true

COMMON=(--warmup 3 --budget "${BUDGET:-0.5}" --min-runs 5 --max-runs 200 --row-budget 60)

# bench NAME run.py-args...: one run.py call writing $OUTDIR/NAME.json, within the time left
bench() {
    local name=$1; shift
    local left=$(( LIMIT - ($(date +%s) - T0) ))
    if [ "$left" -le 20 ]; then echo "gpu_run.sh: no time left for $name" >&2; return 0; fi
    local dl=$(( left - ROW_MAX )); [ "$dl" -lt 1 ] && dl=1
    echo "== $name (left ${left}s, deadline ${dl}s)" >&2
    timeout --signal=INT --kill-after=10 "$left" "$PY" bench/run.py "$@" --deadline "$dl" \
        --tag "gpu part $PART: $name" --out "$OUTDIR/$name.json" >"$OUTDIR/$name.log" 2>&1
    local rc=$?
    [ $rc -ne 0 ] && { echo "gpu_run.sh: $name exited $rc" >&2; tail -5 "$OUTDIR/$name.log" >&2; }
    return 0
}

case "$PART" in
    1)
        bench p1-models --models resnet18,resnet50,mobilenet_v2,vit_b16 --batches 1,8,32 --precisions fp32,fp16 \
            "${COMMON[@]}"
        bench p1-kernels --models "" --kernels elementwise,gemm "${COMMON[@]}" ;;
    2)
        bench p2-models --models bert_base,gpt2 --batches 1,8,32 --precisions fp32,fp16 "${COMMON[@]}"
        bench p2-kernels --models "" --kernels conv --partition "${COMMON[@]}" ;;
    check)
        bench check --models resnet18,bert_base --batches 1 --precisions fp32,fp16 "${COMMON[@]}"
        bench check-kernels --models "" --kernels elementwise "${COMMON[@]}" ;;
    *) echo "usage: bench/gpu_run.sh 1|2|check" >&2; exit 2 ;;
esac
echo "gpu_run.sh part $PART done in $(( $(date +%s) - T0 ))s; JSON in $OUTDIR" >&2
ls -la "$OUTDIR" >&2
