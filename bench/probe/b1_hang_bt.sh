#!/usr/bin/env bash
# MobileNetV2 b1 fp32's first call with the CUDA libraries in auto mode stops (session 15,
# bench/probe/b1_hang.sh: inside _C.cuda_launch_run; with TORCHTRT_C_CUDA_LIBS=0 it runs). This
# looks at the stuck process from outside after WAIT_S: each thread's kernel wait channel
# (futex: a lock; else the driver) and, where gdb exists, the native stacks. Then the same row
# with TORCHTRT_C_CUDA_LIBS=1 (the library always, no timing) for LIBS1_S seconds.
set -u
cd "$(dirname "$0")/../.."
. bench/probe/gpu_prelude.sh
ROW="import sys; sys.argv=['bench/run.py','--models','mobilenet_v2','--batches','1','--precisions','fp32','--budget','0.2','--min-runs','3','--max-runs','20','--row-budget','30','--skip-inductor']; sys.path.insert(0,'bench'); exec(compile(open('bench/run.py').read(),'bench/run.py','exec'),{'__name__':'__main__','__file__':'bench/run.py'})"
python3 -c "$ROW" > "$O/row_auto.txt" 2>&1 &
PID=$!
sleep "${WAIT_S:-60}"
if kill -0 $PID 2>/dev/null; then
    echo "== still running after ${WAIT_S:-60} s: threads (state, wait channel)"
    for t in /proc/$PID/task/*; do echo "$(basename $t) $(cut -d' ' -f3 $t/stat) $(cat $t/wchan 2>/dev/null)"; done | sort -k3 | uniq -c -f1 | head -20
    if command -v gdb > /dev/null; then
        timeout 60 gdb -batch -p $PID -ex "thread apply all bt 30" 2>/dev/null | grep -E "^#|^Thread" | cut -c1-220 | head -150
    else echo "(no gdb)"; fi
    kill -9 $PID
else echo "== the auto row ended by itself"; fi
grep -v "^\[torchtrt_c" "$O/row_auto.txt" | grep -E "^\|.*mobilenet|Error|error" | head -5
echo "== TORCHTRT_C_CUDA_LIBS=1"
TORCHTRT_C_CUDA_LIBS=1 timeout "${LIBS1_S:-70}" python3 -c "$ROW" 2>&1 | grep -v "^\[torchtrt_c" | grep -E "^\|.*mobilenet|Error|error" | head -5
echo "libs=1 rc=${PIPESTATUS[0]} at $(( $(date +%s) - T0 )) s"
