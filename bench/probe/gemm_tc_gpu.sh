#!/usr/bin/env bash
# One GPU call for the tensor-core GEMMs (issue 12 items 2-3): build, the GEMM table vs cuBLAS
# (bench/gemm_tc.py: tc and tf32 sweeps, the old mma tiles), the PTX of the default tiles at
# 4096^3 (under $OUT/ptx: look for ld.local / the main loop), then the GEMM/TF32 tests natively.
# Run from the repository root on the GPU machine (about 180 s):  bash bench/probe/gemm_tc_gpu.sh
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
mkdir -p /etc/OpenCL/vendors; echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
T0=$(date +%s)
python3 setup.py -q build_ext --inplace -j 16 > "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"; nvidia-smi -L
export PYTHONPATH=$PWD TORCHTRT_C_DEVICE=gpu
timeout 125 python3 bench/gemm_tc.py --families tc,tf32 > "$O/gemm_tc.txt" 2> "$O/gemm_tc.err"
echo "bench tc/tf32 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A40 "^| family" "$O/gemm_tc.txt"; tail -3 "$O/gemm_tc.err"
timeout 25 python3 bench/gemm_tc.py --families mma --tiles 9,10 --shapes 4096x4096x4096,4096x768x768,4096x3072x768 > "$O/gemm_mma.txt" 2>&1
echo "bench mma rc=$? at $(( $(date +%s) - T0 )) s"; grep -A10 "^| family" "$O/gemm_mma.txt"
timeout 20 python3 bench/gemm_tc.py --families tc,tf32 --shapes 4096x4096x4096 --no-sweep --ptx "$O/ptx" > /dev/null 2>&1
ls "$O/ptx" 2>/dev/null | head
timeout $(( 285 - ($(date +%s) - T0) )) python3 -m pytest tests/device/test_gemm_tc.py tests/device/test_tf32_policy.py \
  tests/unit/test_tf32_settings.py tests/gpu/test_gpu_device.py -m "" -q -n 8 -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -25 "$O/pytest.log"
grep -h "'error'" "$O"/gemm_*.txt | head -5
