#!/usr/bin/env bash
# One device command at the start of a session: build, the GPU suite (not slow), the
# tensor-core GEMM at its default tiles vs cuBLAS, and where ViT/ConvNeXt b32 fp16 spend time.
# Run from the repository root on the GPU machine (about 500 s): bash bench/probe/session_gpu_check.sh
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
mkdir -p /etc/OpenCL/vendors; echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
T0=$(date +%s)
python3 setup.py -q build_ext --inplace -j 16 > "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"; nvidia-smi -L
export PYTHONPATH=$PWD TORCHTRT_C_DEVICE=gpu
timeout ${SUITE_S:-330} python3 -m pytest tests -m "not slow" -q -n 14 -p no:cacheprovider -rfE \
  > "$O/pytest.log" 2>&1
echo "suite rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^(FAILED|ERROR)|passed|failed" "$O/pytest.log" | tail -30
timeout 60 python3 bench/gemm_tc.py --families tc,tf32 --no-sweep \
  --shapes 4096x4096x4096,4096x768x768,4096x3072x768,4096x768x3072 --ptx "$O/ptx" > "$O/gemm_tc.txt" 2> "$O/gemm_tc.err"
echo "gemm rc=$? at $(( $(date +%s) - T0 )) s"; grep -A12 "^| family" "$O/gemm_tc.txt"; tail -3 "$O/gemm_tc.err"
left=$(( 560 - ($(date +%s) - T0) ))
[ $left -gt 30 ] && timeout $left python3 bench/kernel_profile.py --models tv_vit_b_16,tv_convnext_tiny,hf_gpt2 \
  --batch 32 --precision fp16 --runs 5 --top 12 --json "$O/profile.json" > "$O/profile.txt" 2>&1
echo "profile rc=$? at $(( $(date +%s) - T0 )) s"; head -c 6000 "$O/profile.txt"
