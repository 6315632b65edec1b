#!/usr/bin/env bash
# Session 13, one device command: build, the library-epilogue / vector-store tests on the GPU,
# the cuBLASLt facts (bench/probe/cublaslt_probe.py), ViT-B/16 b32 fp16's kernel profile in
# the CUDA launch path, then AB rows through cublas_gpu.sh (AB="models:batch:precision[:extra]").
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/probe/gpu_prelude.sh
TESTS=${TESTS-tests/gpu/test_lib_epilogue_vec.py tests/device/test_vec_store.py tests/gpu/test_cublas_gemm.py}
if [ -n "$TESTS" ]; then
    timeout ${TEST_S:-200} python3 -m pytest $TESTS -q -n 8 -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1
    echo "tests rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^(FAILED|ERROR)|passed|failed|Error" "$O/pytest.log" | tail -30
fi
if [ -n "${PROBE-1}" ]; then timeout 120 python3 bench/probe/cublaslt_probe.py 2>&1 | tee "$O/lt_probe.txt" | tail -40; fi
if [ -n "${PROFILE-tv_vit_b_16}" ]; then
    timeout 150 python3 bench/kernel_profile.py --models "${PROFILE-tv_vit_b_16}" --batch 32 --precision fp16 --cuda-path --top 25 \
        --json "$O/profile.json" 2>&1 | grep -v "^\[torchtrt_c" > "$O/profile.txt"; tail -60 "$O/profile.txt"
fi
# the AB rows through cublas_gpu.sh (its prelude finds the build done)
TESTS="" AB="${AB-tv_vit_b_16:32:fp16}" LIMIT=$(( ${LIMIT:-560} - ($(date +%s) - T0) )) bash bench/probe/cublas_gpu.sh
echo "done in $(( $(date +%s) - T0 )) s"
