#!/usr/bin/env bash
# One GPU call for the tensor-core GEMM tiles (issue 12 item 2): build, chosen tiles of the tc and
# tf32 families on chosen shapes vs cuBLAS (bench/gemm_tc.py, PTX of every row in $OUT/ptx.tgz: the
# device tool returns only a few loose files; `ptxas -arch=sm_90 -v x.ptx` gives registers and
# spills, here too (/usr/local/cuda-13.0/bin), and `ptxas -o x.cubin` + nvdisasm (pip wheel
# nvidia-cuda-nvdisasm) the SASS; PTX=0: none), then the GEMM tests natively (every
# tile, slow ones included; TESTS=0: none). TF_S=0 skips the tf32 rows. Fits a 240 s device call:
#   TC=26,39 TF32=34,45 SHAPES=4096x4096x4096,... bash bench/probe/gemm_tc_sweep.sh
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
mkdir -p /etc/OpenCL/vendors; echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
T0=$(date +%s); left() { echo $(( ${BUDGET:-230} - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace -j 16 > "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"; nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw --format=csv
export PYTHONPATH=$PWD TORCHTRT_C_DEVICE=gpu
S=${SHAPES:-4096x4096x4096,4096x768x768,4096x2304x768,4096x3072x768,4096x768x3072}
P=(--ptx "$O/ptx"); [ "${PTX:-1}" = 0 ] && P=()
timeout ${TC_S:-80} python3 bench/gemm_tc.py --families tc --tiles "${TC:-}" --shapes "$S" "${P[@]}" > "$O/gemm_tc.txt" 2> "$O/gemm_tc.err"
echo "bench tc rc=$? at $(( $(date +%s) - T0 )) s"; grep -A20 "^| family" "$O/gemm_tc.txt"; tail -3 "$O/gemm_tc.err"
[ "${TF_S:-50}" != 0 ] && timeout ${TF_S:-50} python3 bench/gemm_tc.py --families tf32 --tiles "${TF32:-}" --shapes "$S" "${P[@]}" > "$O/gemm_tf32.txt" 2> "$O/gemm_tf32.err"
echo "bench tf32 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A20 "^| family" "$O/gemm_tf32.txt" 2>/dev/null; tail -3 "$O/gemm_tf32.err" 2>/dev/null
grep -h "'error'" "$O"/gemm_*.txt | head -5
[ "${TESTS:-1}" = 1 ] && timeout $(left) python3 -m pytest tests/device/test_gemm_tc.py tests/device/test_tf32_policy.py \
  tests/gpu/test_gpu_device.py -m "" -q -n 8 -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -15 "$O/pytest.log"
[ -d "$O/ptx" ] && tar czf "$O/ptx.tgz" -C "$O" ptx && rm -rf "$O/ptx"
