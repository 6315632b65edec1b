#!/usr/bin/env bash
# One device command on nvidia-h200-x2 for the warpgroup-MMA GEMM (issue 12 item 2), two groups
# at once: GPU 0: the wgmma probe (VARIANTS, SHAPES), bench/gemm_tc_cuda.py over TILES and
# GSHAPES, then the tests TESTS; GPU 1: the command G1 (output in $O/g1.txt). Logs in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/probe/gpu_prelude.sh
(
    export CUDA_VISIBLE_DEVICES=1
    if [ -n "${G1:-}" ]; then timeout "${G1_S:-400}" bash -c "$G1" > "$O/g1.txt" 2>&1; echo "g1 rc=$? at $(( $(date +%s) - T0 )) s" >> "$O/g1.txt"; fi
) &
(
    export CUDA_VISIBLE_DEVICES=0
    if [ -n "${VARIANTS:-}" ]; then timeout "${PROBE_S:-200}" python3 bench/probe/wgmma_probe.py > "$O/probe.txt" 2>&1; echo "probe rc=$? at $(( $(date +%s) - T0 )) s"; fi
    if [ -n "${TILES:-}" ]; then timeout "${GEMM_S:-200}" python3 bench/gemm_tc_cuda.py --tiles "$TILES" --shapes "${GSHAPES:-4096x4096x4096}" --runs "${RUNS:-30}" 2>&1 | grep -v "^\[torchtrt_c" > "$O/gemm.txt"; echo "gemm rc=$? at $(( $(date +%s) - T0 )) s"; fi
    if [ -n "${TESTS:-}" ]; then timeout "${TEST_S:-200}" python3 -m pytest $TESTS -q -n 4 -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1; echo "tests rc=$? at $(( $(date +%s) - T0 )) s"; fi
)
wait
echo "== probe"; grep -v "^\[torchtrt_c" "$O/probe.txt" 2>/dev/null | grep -v "Warning: Function" | cut -c1-300
echo "== gemm"; sed -n '/^| family/,$p' "$O/gemm.txt" 2>/dev/null
echo "== tests"; grep -E "^(FAILED|ERROR)|passed|failed" "$O/pytest.log" 2>/dev/null | tail -20
echo "== GPU 1"; grep -v "^\[torchtrt_c" "$O/g1.txt" 2>/dev/null | tail -${G1_TAIL:-60}
echo "done in $(( $(date +%s) - T0 )) s"
