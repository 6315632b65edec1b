#!/usr/bin/env bash
# cuBLAS library steps on the GPU, one device command: build, the CUDA launch tests
# (TESTS, default the library/graph/launch/dynsmem ones), then bench/probe/cuda_libs_ab.py for
# AB rows "models:batch:precision[:extra args]" separated by spaces (default: b32 fp16 BERT,
# ViT, GPT-2; b8 fp32 BERT).
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/probe/gpu_prelude.sh
if [ -n "${PRE:-}" ]; then eval "$PRE"; fi
TESTS=${TESTS-tests/gpu/test_cublas_gemm.py tests/gpu/test_cuda_graphs.py tests/gpu/test_gemm_dynsmem.py tests/gpu/test_cuda_launch.py}
if [ -n "$TESTS" ]; then
    timeout ${TEST_S:-200} python3 -m pytest $TESTS -q -n 8 -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1
    echo "tests rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^(FAILED|ERROR)|passed|failed|Error" "$O/pytest.log" | tail -30
fi
for r in ${AB-hf_bert,tv_vit_b_16,hf_gpt2:32:fp16 hf_bert:8:fp32}; do
    IFS=: read -r models batch prec extra <<< "$r"
    left=$(( ${LIMIT:-570} - ($(date +%s) - T0) ))
    [ "$left" -le 30 ] && { echo "no time left for $r"; continue; }
    timeout "$left" python3 bench/probe/cuda_libs_ab.py --models "$models" --batch "$batch" --precision "$prec" --json "$O/ab.jsonl" $extra 2>&1 | \
        grep -v "^\[torchtrt_c" | tee -a "$O/ab.txt" | tail -20
done
echo "done in $(( $(date +%s) - T0 )) s"
