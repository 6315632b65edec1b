#!/usr/bin/env bash
# One device command for the CUDA-interop work: build, the interop tests, overhead.py with CUDA
# rows, and end-to-end vs resident (bench/run.py) with shared memory on and off.
#   bench/probe/gpu_interop.sh [tests|overhead|bench|all]
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-build/interop}
mkdir -p "$O"
WHAT=${1:-all}
T0=$(date +%s)
icd=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
[ -e "$icd" ] && mkdir -p /etc/OpenCL/vendors && echo "$icd" > /etc/OpenCL/vendors/nvidia.icd
python3 setup.py -q build_ext --inplace -j "$(nproc)" >"$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCHTRT_C_DEVICE=gpu
t() { echo "== $* ($(( $(date +%s) - T0 ))s)"; }
if [ "$WHAT" = tests ] || [ "$WHAT" = all ]; then
    t tests
    timeout 200 python3 -m pytest tests/gpu/test_cuda_interop.py tests/device/test_cuda_interop_fallback.py \
        tests/unit/test_cuda_interop_import.py tests/device/test_runtime_fastpath.py -q -rfEs -p no:cacheprovider \
        -n 4 2>&1 | tail -40 | tee "$O/tests.log"
fi
if [ "$WHAT" = overhead ] || [ "$WHAT" = all ]; then
    t overhead
    timeout 90 python3 bench/overhead.py --cuda --runs 1000 2>&1 | tee "$O/overhead.log" | grep -v "^  "
    t overhead host-wait
    TORCHTRT_C_CUDA_INTEROP_WAIT=host timeout 60 python3 bench/overhead.py --cuda --runs 500 2>&1 | grep "CUDA" | tee "$O/overhead-hostwait.log"
fi
if [ "$WHAT" = bench ] || [ "$WHAT" = all ]; then
    B=(--batches 1,32 --warm-batches 999 --skip-inductor --warmup 3 --budget 1.0 --min-runs 10 --max-runs 200)
    for mode in 1 0; do
        t "run.py interop=$mode"
        TORCHTRT_C_CUDA_INTEROP=$mode timeout 170 python3 bench/run.py --models resnet50 --precisions fp32 "${B[@]}" \
            --out "$O/resnet50-interop$mode.json" > "$O/resnet50-interop$mode.log" 2>&1
        TORCHTRT_C_CUDA_INTEROP=$mode timeout 120 python3 bench/run.py --models bert_base --precisions fp16 \
            --batches 32 --warm-batches 999 --skip-inductor --warmup 3 --budget 1.0 --min-runs 10 --max-runs 200 \
            --out "$O/bert-interop$mode.json" > "$O/bert-interop$mode.log" 2>&1
    done
    python3 - "$O" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*-interop*.json")):
    d = json.load(open(f))
    for r in d["models"]:
        e2e = r.get("ttc_end_to_end", {}).get("median_ms"); res = r.get("ttc_resident", {}).get("median_ms")
        eag = r.get("eager", {}).get("median_ms")
        print(f"{f.split('/')[-1]:28s} {r.get('model')} {r.get('precision')} b{r.get('batch')}: e2e {e2e} ms, "
              f"resident {res} ms, eager {eag} ms, e2e/resident {e2e / res if e2e and res else None}, "
              f"err {r.get('ttc_max_abs_err')} path {r.get('cuda_path')} {r.get('ttc_error', '')}{r.get('error', '')}")
PY
fi
t done
