#!/usr/bin/env bash
# fp32 tensor-core attention (attn_tf32.cl) on the GPU, one device command: build, its tests
# and the attention op cases, bench/attn_kernel.py at fp32 over TILES, then kernel profiles
# of PROFILE models ("model:batch:precision" rows) on the CUDA launch path.
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/probe/gpu_prelude.sh
TESTS=${TESTS-tests/device/test_attn_mma.py tests/device/test_nonfinite.py tests/device/test_op_harness.py}
if [ -n "$TESTS" ]; then
    timeout ${TEST_S:-200} python3 -m pytest $TESTS -q -n 14 -p no:cacheprovider -rfE -k "${TEST_K:-attn or attention or sdpa or scaled_dot}" > "$O/pytest.log" 2>&1
    echo "tests rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^(FAILED|ERROR)|passed|failed|Error" "$O/pytest.log" | tail -30
fi
if [ -n "${TILES-4x32,4x64,2x32,8x32}" ]; then
    timeout 200 python3 bench/attn_kernel.py --precision fp32 --tiles "${TILES-4x32,4x64,2x32,8x32}" --no-row 2>&1 | grep -v "^\[torchtrt_c" | tee "$O/attn_fp32.txt"
fi
for r in ${PROFILE-tv_vit_b_16:32:fp32 hf_bert:32:fp32}; do
    IFS=: read -r model batch prec <<< "$r"
    left=$(( ${LIMIT:-570} - ($(date +%s) - T0) ))
    [ "$left" -le 40 ] && { echo "no time left for $r"; continue; }
    timeout "$left" python3 bench/kernel_profile.py --models "$model" --batch "$batch" --precision "$prec" --cuda-path --top 12 --runs 5 2>&1 | \
        grep -v "^\[torchtrt_c" > "$O/prof_${model}_${batch}_${prec}.txt"
    echo "$r: $(grep -E "end to end|eager" "$O/prof_${model}_${batch}_${prec}.txt" | head -3)"
done
echo "done in $(( $(date +%s) - T0 )) s"
