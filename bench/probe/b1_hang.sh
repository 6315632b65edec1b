#!/usr/bin/env bash
# Where bench/run.py stops at MobileNetV2 batch 1 on the GPU (sessions 14-15: the row never
# ended): the row under Python's faulthandler, which prints every thread's stack after
# HANG_S seconds and exits; then the same with the CUDA launch path's libraries off, to see
# whether it needs them. Run from the repository root after gpu_prelude.sh.
HANG_S=${HANG_S:-90}
row() {
    echo "== $1"
    env $1 python3 -X faulthandler -c "
import faulthandler, sys
faulthandler.dump_traceback_later($HANG_S, exit=True)
sys.argv = ['bench/run.py', '--models', 'mobilenet_v2', '--batches', '1', '--precisions', '${2:-fp32}', '--warm-batches', '1',
            '--budget', '0.3', '--min-runs', '5', '--max-runs', '50', '--row-budget', '40', '--skip-inductor']
sys.path.insert(0, 'bench')
exec(compile(open('bench/run.py').read(), 'bench/run.py', 'exec'), {'__name__': '__main__', '__file__': 'bench/run.py'})
" 2>&1 | grep -v "^\[torchtrt_c" | cut -c1-400 | tail -60
}
row "TTC_ROW=default"
row "TORCHTRT_C_CUDA_LIBS=0"
