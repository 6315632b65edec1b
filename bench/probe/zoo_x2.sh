#!/usr/bin/env bash
# One device command on a machine of two GPUs (kind nvidia-h200-x2): build once, then two
# groups at once, one per GPU (CUDA_VISIBLE_DEVICES; NVIDIA's OpenCL honours it):
#   GPU 0: the GPU tests (TESTS), the cuBLASLt probe, then AB rows ROWS0;
#   GPU 1: PRE1 (a command, output in $O/pre1.txt), then AB rows ROWS1.
# Rows are "models:batch:precision[:libs]" for bench/probe/cuda_libs_ab.py (libs default
# "auto"), each group stopping its rows at LIMIT seconds. Logs and JSON lines in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/probe/gpu_prelude.sh
LIMIT=${LIMIT:-540}
pick() {   # the OpenCL device index of GPU $1 when OpenCL sees every GPU despite CUDA_VISIBLE_DEVICES
    local n
    n=$(CUDA_VISIBLE_DEVICES=$1 python3 -c "import torchtrt_c._C as C; print(sum(d['type'] == 'gpu' for d in C.devices()))" 2>/dev/null || echo 1)
    if [ "$n" -gt 1 ]; then
        env -u CUDA_VISIBLE_DEVICES python3 -c "import torchtrt_c._C as C; print([d['index'] for d in C.devices() if d['type'] == 'gpu'][$1])"
    else echo gpu; fi
}
rows() {   # $1 GPU, $2 rows
    local g=$1 r models batch prec libs left
    for r in $2; do
        IFS=: read -r models batch prec libs <<< "$r"
        left=$(( LIMIT - ($(date +%s) - T0) ))
        [ "$left" -le 25 ] && { echo "no time left for $r"; continue; }
        timeout "$left" python3 bench/probe/cuda_libs_ab.py --models "$models" --batch "$batch" --precision "$prec" \
            --libs "${libs:-auto}" --runs "${RUNS:-30}" --json "$O/ab$g.jsonl" 2>&1 | grep -v "^\[torchtrt_c"
    done
}
D0=$(pick 0); D1=$(pick 1)
echo "OpenCL devices: GPU0 -> $D0, GPU1 -> $D1"
(
    export CUDA_VISIBLE_DEVICES=1 TORCHTRT_C_DEVICE=$D1
    if [ -n "${PRE1:-}" ]; then eval "$PRE1" > "$O/pre1.txt" 2>&1; fi
    rows 1 "${ROWS1:-}" > "$O/ab1.txt" 2>&1
) &
(
    export CUDA_VISIBLE_DEVICES=0 TORCHTRT_C_DEVICE=$D0
    if [ -n "${TESTS:-}" ]; then
        timeout "${TEST_S:-200}" python3 -m pytest $TESTS -q -n 8 -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1
        echo "tests rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^(FAILED|ERROR)|passed|failed" "$O/pytest.log" | tail -25
    fi
    if [ -n "${PROBE:-}" ]; then timeout 120 python3 bench/probe/cublaslt_probe.py > "$O/lt_probe.txt" 2>&1; grep -E "FAIL|ALL OK|SOME" "$O/lt_probe.txt"; fi
    rows 0 "${ROWS0:-}" > "$O/ab0.txt" 2>&1
) 
wait
echo "== GPU 0 rows"; grep -E "ms \(|no time|Error|error" "$O/ab0.txt" | sed 's/ (setup/\n   (setup/' | cut -c1-400
echo "== GPU 1 rows"; grep -E "ms \(|no time|Error|error" "$O/ab1.txt" | cut -c1-400
if [ -n "${PRE1:-}" ]; then echo "== GPU 1 PRE1"; grep -v "^\[torchtrt_c" "$O/pre1.txt" | tail -${PRE1_TAIL:-40}; fi
echo "done in $(( $(date +%s) - T0 )) s"
