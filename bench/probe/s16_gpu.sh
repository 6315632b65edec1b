#!/usr/bin/env bash
# Session 16's device command (nvidia-h200-x2), two groups at once. GPU 1: MobileNetV2 b1's first
# call with the CUDA libraries auto and on (bench/probe/b1_spy.sh), then the b1 rows (B1_MODELS)
# through bench/run.py. GPU 0: the wgmma probe (VARIANTS, SHAPES), then the tests TESTS.
# Carry .whl (py-spy). Logs in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
if ls .whl/*.whl > /dev/null 2>&1; then python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1; fi
. bench/probe/gpu_prelude.sh
(
    export CUDA_VISIBLE_DEVICES=1
    {
        for l in ${HANG_LIBS:-auto 1}; do bash bench/probe/b1_spy.sh $l; done
        if [ -n "${B1_MODELS:-}" ]; then
            timeout "${B1_S:-300}" python3 bench/run.py --models "$B1_MODELS" --batches 1 --precisions fp32,fp16 --order model \
                --warm-batches 1 --budget 0.3 --min-runs 5 --max-runs 100 --row-budget 40 --deadline "${B1_S:-300}" --skip-inductor \
                2>&1 | grep -v "^\[torchtrt_c" > "$O/b1.txt"
            echo "b1 rc=$? at $(( $(date +%s) - T0 )) s"
        fi
    } > "$O/g1.txt" 2>&1
) &
(
    export CUDA_VISIBLE_DEVICES=0
    if [ -n "${VARIANTS:-}" ]; then timeout "${PROBE_S:-200}" python3 bench/probe/wgmma_probe.py > "$O/probe.txt" 2>&1; echo "probe rc=$? at $(( $(date +%s) - T0 )) s"; fi
    if [ -n "${TESTS:-}" ]; then timeout "${TEST_S:-240}" python3 -m pytest $TESTS -q -n 4 -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1; echo "tests rc=$? at $(( $(date +%s) - T0 )) s"; fi
)
wait
echo "== probe"; grep -v "^\[torchtrt_c" "$O/probe.txt" 2>/dev/null | grep -v "Warning: Function" | cut -c1-300
echo "== tests"; grep -E "^(FAILED|ERROR)|passed|failed" "$O/pytest.log" 2>/dev/null | tail -20
echo "== GPU 1"; cat "$O/g1.txt" | tail -150
echo "== b1"; grep -E "^\| [a-z]" "$O/b1.txt" 2>/dev/null | cut -d'|' -f2-9 | head -20
echo "done in $(( $(date +%s) - T0 )) s"
