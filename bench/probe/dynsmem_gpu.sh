#!/usr/bin/env bash
# One GPU call for the dynamic-shared-memory GEMM tiles (issue 12 item 2): build, optionally the
# __local-argument probe (PROBE=1), then bench/gemm_tc_cuda.py (CUDA launch path vs cuBLAS) on
# TILES x SHAPES, then optionally tests (TESTS="pytest args"). Everything lands in $OUT.
#   PROBE=1 TILES=d,42,43 SHAPES=4096x4096x4096 bash bench/probe/dynsmem_gpu.sh
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
mkdir -p /etc/OpenCL/vendors; echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
T0=$(date +%s)
python3 setup.py -q build_ext --inplace -j 16 > "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"; nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw --format=csv
export PYTHONPATH=$PWD TORCHTRT_C_DEVICE=gpu
if [ "${PROBE:-0}" = 1 ]; then
  timeout 60 python3 bench/probe/dynsmem_probe.py > "$O/probe.txt" 2>&1; echo "probe rc=$?"; cat "$O/probe.txt" | cut -c1-600
fi
S=${SHAPES:-4096x4096x4096,4096x3072x768}
if [ -n "${TILES:-}" ]; then
  timeout ${BENCH_S:-150} python3 bench/gemm_tc_cuda.py --families ${FAMS:-tc} --tiles "$TILES" --shapes "$S" > "$O/bench.txt" 2> "$O/bench.err"
  echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -A40 "^| family" "$O/bench.txt" || grep "'error'" "$O/bench.txt" | head; tail -5 "$O/bench.err"
fi
if [ -n "${TESTS:-}" ]; then
  timeout ${TEST_S:-120} python3 -m pytest $TESTS -m "" -k "${TK:-}" -q -n 8 -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1
  echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -15 "$O/pytest.log"
fi
