#!/usr/bin/env bash
# The CUDA-driver launch path on a GPU machine (issue 13 item 3): its tests, the per-call
# overhead, and end to end vs resident. Run by the device tool from the repository root:
#   bench/probe/gpu_launch.sh tests overhead bench old     (any subset, in that order)
# tests: tests/gpu/test_cuda_launch.py + test_cuda_interop.py; overhead: bench/overhead.py --cuda;
# bench: bench/run.py --models tv_resnet50,hf_bert --batches 1,32 --precisions fp16 (launch path);
# old: the same with TORCHTRT_C_CUDA_LAUNCH=0 (the shared-memory path). Logs under $OUT.
set -u
cd "$(dirname "$0")/../.."
OUTDIR=${OUT:-build/gpu-launch}
mkdir -p "$OUTDIR"
icd=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
if [ -e "$icd" ]; then mkdir -p /etc/OpenCL/vendors; echo "$icd" > /etc/OpenCL/vendors/nvidia.icd; fi
python3 setup.py -q build_ext --inplace -j "$(nproc)" > "$OUTDIR/build.log" 2>&1 || { tail -30 "$OUTDIR/build.log"; exit 1; }
export PYTHONPATH=$PWD TORCHTRT_C_DEVICE=gpu
BENCH=(--models tv_resnet50,hf_bert --batches 1,32 --precisions fp16 --budget 0.5 --min-runs 5 --max-runs 50
       --skip-inductor --deadline "${DEADLINE:-200}")
for part in "$@"; do
    echo "=== $part $(date +%T)"
    case $part in
    tests) timeout "${TEST_TIMEOUT:-150}" python3 -m pytest tests/gpu/test_cuda_launch.py tests/gpu/test_cuda_interop.py \
               tests/device/test_runtime_fastpath.py::test_cuda_inputs_staged_through_pinned_buffers \
               tests/device/test_compile.py::test_cuda_tensors_in_and_out \
               -q -n 8 -p no:cacheprovider -rfEs 2>&1 | tee "$OUTDIR/pytest.log" | grep -v "^  warnings.warn\|Warning" | tail -60 ;;
    overhead) timeout 90 python3 bench/overhead.py --cuda --runs 500 2>&1 | tee "$OUTDIR/overhead.log" | grep -v Warn | tail -22 ;;
    bench) timeout 260 python3 bench/run.py "${BENCH[@]}" --tag "cuda launch" --out "$OUTDIR/bench" > "$OUTDIR/bench.log" 2>&1
           tail -5 "$OUTDIR/bench.log"; cat "$OUTDIR"/bench/results.md 2>/dev/null | head -30 ;;
    old) TORCHTRT_C_CUDA_LAUNCH=0 timeout 260 python3 bench/run.py "${BENCH[@]}" --tag "shared memory" --out "$OUTDIR/old" \
           > "$OUTDIR/old.log" 2>&1; tail -5 "$OUTDIR/old.log"; cat "$OUTDIR"/old/results.md 2>/dev/null | head -30 ;;
    esac
done
