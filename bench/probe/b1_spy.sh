#!/usr/bin/env bash
# MobileNetV2 b1's first call with the CUDA libraries on (sessions 13-15: never returned).
# Runs the bench row with TORCHTRT_C_CUDA_LIBS=$1 (auto, 1) in the background; if it is still
# running after WAIT_S, dumps every thread's Python and native stacks with py-spy (carried as a
# wheel in .whl, installed to /tmp/site) and each thread's state, then kills it.
# Run from the repository root after gpu_prelude.sh; MODEL/PREC default mobilenet_v2/fp32.
LIBS=${1:-auto}
MODEL=${MODEL:-mobilenet_v2}; PREC=${PREC:-fp32}
ROW="import sys; sys.argv=['bench/run.py','--models','$MODEL','--batches','1','--precisions','$PREC','--budget','0.2','--min-runs','3','--max-runs','20','--row-budget','30','--skip-inductor']; sys.path.insert(0,'bench'); exec(compile(open('bench/run.py').read(),'bench/run.py','exec'),{'__name__':'__main__','__file__':'bench/run.py'})"
T1=$(date +%s)
TORCHTRT_C_CUDA_LIBS=$LIBS python3 -c "$ROW" > "$O/row_$LIBS.txt" 2>&1 &
PID=$!
for i in $(seq 1 "${WAIT_S:-50}"); do kill -0 $PID 2>/dev/null || break; sleep 1; done
if kill -0 $PID 2>/dev/null; then
    echo "== libs=$LIBS $MODEL $PREC: still running after ${WAIT_S:-50} s"
    for t in /proc/$PID/task/*; do echo "$(cut -d' ' -f3 $t/stat) $(cat $t/wchan 2>/dev/null)"; done | sort | uniq -c | head
    SPY=$(ls /tmp/site/bin/py-spy 2>/dev/null)
    if [ -n "$SPY" ]; then
        timeout 60 "$SPY" dump --native --pid $PID 2>&1 | cut -c1-200 | head -120
        sleep 5; echo "-- again, 5 s later (main thread only)"
        timeout 60 "$SPY" dump --native --pid $PID 2>&1 | cut -c1-200 | sed -n '1,40p'
    else echo "(no py-spy)"; fi
    kill -9 $PID
else
    wait $PID; echo "== libs=$LIBS $MODEL $PREC: ended (rc $?) in $(( $(date +%s) - T1 )) s"
fi
grep -v "^\[torchtrt_c" "$O/row_$LIBS.txt" | grep -E "^\| $MODEL|Error|error" | head -5
