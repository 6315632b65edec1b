#!/usr/bin/env bash
# The GPU benchmark matrix in two parts that each fit one device command (< 9 minutes):
#   bench/gpu_run.sh 1       kernels: elementwise, gemm; resnet18, resnet50, mobilenet_v2,
#                            vit_b16 (fp32+fp16, batches 1/32/8)
#   bench/gpu_run.sh 2       kernels: conv; partitioner scale; bert_base, gpt2 (fp32+fp16,
#                            batches 1/32/8)
#   bench/gpu_run.sh 3       (only if parts 1/2 skipped rows for time) every zoo row not yet
#                            measured in bench/out/gpu/*.json: copy the parts' JSON there and
#                            pass carry=["bench/out/gpu"] to the device tool
#   bench/gpu_run.sh all     everything above in one go, no time limit (any GPU machine)
#   bench/gpu_run.sh par     everything, split into four groups that run at once, one per GPU
#                            (a machine with 4 GPUs: the whole matrix within one device command;
#                            with fewer GPUs, groups sharing a GPU run one after the other)
#   bench/gpu_run.sh check   elementwise kernels; resnet18 + bert_base, batch 1, fp32+fp16
#   bench/gpu_run.sh vision  torchvision/timm's own models (bench/vision_models.py; fp32+fp16,
#                            batches 1/32/8; rows past the deadline are recorded as skipped)
#   bench/gpu_run.sh quant   quantization and LLM decode (issue 35), LIMIT 560 by default: the
#                            quantized/LLM kernels' tests on the GPU, then bench/quant.py (1B
#                            Llama fp16/int8/int4, batches 1 and 8, with the step profile),
#                            the tensor-core weight-only form (TORCHTRT_C_WQ_MMA=1, then =auto), bench/quant.py
#                            without the gated GEMV (TORCHTRT_C_WQ_GLU=0, A/B), bench/qconv_mma.py
#                            and bench/llm.py, each within the time left; logs in $OUT
#   bench/gpu_run.sh ab      settings A/B on the 1B Llama's batch-1 decode step (bench/decode_ab.py;
#                            AB_RUNS lines "MODES VARIANT...", AB_BATCHES (default 1), default the weight-only GEMV's geometry
#                            and the norm's row split), then the quick tests
#   bench/gpu_run.sh quick   quant's essentials in about 5 minutes (LIMIT 300): the tests, batch-1
#                            decode with the profile, batch 8 and the prompt under WQ_MMA=auto
# Registers NVIDIA's OpenCL ICD when the driver library is there, builds the extension, and
# writes one JSON per run.py call to $OUT (the device tool's output folder; else
# bench/out/gpu). Every run.py call gets a --deadline from the time left of LIMIT seconds
# (default 500, so that with the build before it a part stays under 9 minutes) and is killed at the limit, so the part ends in time; rows are saved as they
# finish. Afterwards, here:
#   python bench/report.py OUTDIR/*.json --md bench/results/gpu.md --png bench/results/gpu-ratios.png
set -uo pipefail
cd "$(dirname "$0")/.."
PART=${1:?usage: bench/gpu_run.sh 1|2|3|all|par|check|vision|quant|quick|ab}
LIMIT=${LIMIT:-$(case "$PART" in quant) echo 560 ;; quick) echo 300 ;; *) echo 500 ;; esac)}
ROW_MAX=${ROW_MAX:-50}          # a typical late row (s): no row starts later than LIMIT-ROW_MAX
OUTDIR=${OUT:-bench/out/gpu}
mkdir -p "$OUTDIR"
T0=$(date +%s)
PY=${PYTHON:-python3}

icd=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
if [ -e "$icd" ] && [ -d /etc/OpenCL/vendors ] && [ ! -e /etc/OpenCL/vendors/nvidia.icd ]; then
    echo "$icd" > /etc/OpenCL/vendors/nvidia.icd
fi
"$PY" setup.py -q build_ext --inplace -j "$(nproc)" >"$OUTDIR/build-$PART.log" 2>&1 \
    || { tail -30 "$OUTDIR/build-$PART.log"; exit 1; }
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TORCHTRT_C_DEVICE=${TORCHTRT_C_DEVICE:-gpu}
# pytest's -n where pytest-xdist is installed (the machine has no network to install it)
XDIST=$("$PY" -c "import xdist" 2>/dev/null && echo "-n 8")

# rows in batch-major order (1, 32, then 8): if time runs short, batch-8 rows are the ones skipped
COMMON=(--batches 1,32,8 --order batch --precisions fp32,fp16 --warm-batches 1 --warmup 2
        --budget "${BUDGET:-0.4}" --min-runs 5 --max-runs 200 --row-budget 90)

# bench NAME run.py-args...: one run.py call writing $OUTDIR/NAME.json, within the time left
bench() {
    local name=$1; shift
    local left=$(( LIMIT - ($(date +%s) - T0) ))
    if [ "$left" -le 20 ]; then echo "gpu_run.sh: no time left for $name" >&2; return 0; fi
    local dl=$(( left - ROW_MAX )); [ "$dl" -lt 1 ] && dl=1
    echo "== $name (left ${left}s, deadline ${dl}s)" >&2
    # shellcheck disable=SC2086  # RUN_ARGS: extra run.py arguments, e.g. "--size tiny" to try the script
    timeout --signal=INT --kill-after=5 "$left" "$PY" bench/run.py "$@" ${RUN_ARGS:-} --deadline "$dl" \
        --tag "gpu part $PART" --out "$OUTDIR/$name.json" >"$OUTDIR/$name.log" 2>&1
    local rc=$?
    [ $rc -ne 0 ] && { echo "gpu_run.sh: $name exited $rc" >&2; tail -5 "$OUTDIR/$name.log" >&2; }
    grep -c '"skipped: --deadline' "$OUTDIR/$name.json" 2>/dev/null | sed 's/^/rows skipped for time: /' >&2
    return 0
}

# step NAME SECONDS CMD...: CMD's output in $OUTDIR/NAME.log, at most SECONDS and the time left
step() {
    local name=$1 lim=$2; shift 2
    local left=$(( LIMIT - ($(date +%s) - T0) ))
    [ "$left" -lt "$lim" ] && lim=$left
    if [ "$lim" -le 15 ]; then echo "gpu_run.sh: no time left for $name" >&2; return 0; fi
    echo "== $name (${lim}s)" >&2
    timeout --kill-after=5 "$lim" "$@" >"$OUTDIR/$name.log" 2>&1
    echo "$name rc=$?" >&2
    grep -E "passed|failed|FAILED|ERROR|^\||^(fp16|int8|int4) " "$OUTDIR/$name.log" | tail -30 >&2
}

case "$PART" in
    1) bench gpu-part1 --models resnet18,resnet50,mobilenet_v2,vit_b16 --kernels elementwise,gemm "${COMMON[@]}" ;;
    2) bench gpu-part2 --models bert_base,gpt2 --kernels conv --partition "${COMMON[@]}" ;;
    3) bench gpu-part3 --models resnet18,resnet50,mobilenet_v2,vit_b16,bert_base,gpt2 \
           --skip-done "bench/out/gpu/*.json" "${COMMON[@]}" ;;
    all) LIMIT=1000000
         bench gpu-all --models resnet18,resnet50,mobilenet_v2,vit_b16,bert_base,gpt2 \
             --kernels elementwise,gemm,conv --partition "${COMMON[@]}" ;;
    par)
        # four groups of about equal time (part 1/2 timings); group i on GPU i % NG
        NG=$("$PY" -c "import torch; print(max(1, torch.cuda.device_count()))" 2>/dev/null || echo 1)
        # one OpenCL GPU per CUDA_VISIBLE_DEVICES value (NVIDIA's OpenCL honours it); else
        # pick the OpenCL GPU by index in the same (PCI) order
        export CUDA_DEVICE_ORDER=PCI_BUS_ID
        ncl=$(CUDA_VISIBLE_DEVICES=0 "$PY" -c "import torchtrt_c._C as C; print(sum(d['type'] == 'gpu' for d in C.devices()))" 2>/dev/null || echo 1)
        all_groups=("gpu-par-a --models resnet18,resnet50 --kernels gemm"
                    "gpu-par-b --models mobilenet_v2,vit_b16 --kernels elementwise"
                    "gpu-par-c --models bert_base --kernels conv"
                    "gpu-par-d --models gpt2 --partition")
        # PAR_GROUPS="c d": only those groups (to redo some on a smaller machine)
        groups=()
        letters=(a b c d)
        for gi in 0 1 2 3; do
            case " ${PAR_GROUPS:-a b c d} " in *" ${letters[$gi]} "*) groups+=("${all_groups[$gi]}") ;; esac
        done
        NGR=${#groups[@]}
        echo "gpu_run.sh par: $NG GPU(s), OpenCL GPUs seen per CUDA device: $ncl" >&2
        for g in $(seq 0 $(( NG < NGR ? NG - 1 : NGR - 1 ))); do
            (
                export CUDA_VISIBLE_DEVICES=$g
                if [ "$ncl" -gt 1 ]; then
                    TORCHTRT_C_DEVICE=$(env -u CUDA_VISIBLE_DEVICES "$PY" -c "import torchtrt_c._C as C; print([d['index'] for d in C.devices() if d['type'] == 'gpu'][$g])" 2>/dev/null)
                    export TORCHTRT_C_DEVICE
                fi
                for i in $(seq 0 $(( NGR - 1 ))); do
                    [ $(( i % NG )) -eq "$g" ] || continue
                    # shellcheck disable=SC2086
                    bench ${groups[$i]} "${COMMON[@]}"
                done
            ) &
        done
        wait ;;
    check) bench gpu-check --models resnet18,bert_base --kernels elementwise "${COMMON[@]}" --batches 1 ;;
    vision) bench gpu-vision --models tv_resnet50,tv_mobilenet_v2,tv_mobilenet_v3_large,tv_efficientnet_b0,tv_convnext_tiny,tv_vit_b_16,timm_mobilevit_s,timm_levit_128s \
                "${COMMON[@]}" ;;
    quant)
        step tests 150 "$PY" -m pytest tests/gpu/test_quant_gpu.py tests/gpu/test_wq_linear_cuda.py tests/gpu/test_llm_gpu.py \
            tests/device/test_qconv_mma.py tests/device/test_qgemm_mma.py tests/device/test_norm_warp.py \
            tests/device/test_wq_linear.py tests/device/test_wq_gated.py tests/device/test_kv_attention.py tests/device/test_fuse_copies.py \
            tests/models/test_llm_kernels.py tests/models/test_llm_quant.py -q $XDIST -p no:cacheprovider -rfE
        step quant 150 "$PY" bench/quant.py --config 1b --dtype fp16 --group 128 --new 64 --prompt 128 --batches 1,8 \
            --linear '' --profile --json "$OUTDIR/quant.json"
        step quant-mma 100 env TORCHTRT_C_WQ_MMA=1 "$PY" bench/quant.py --config 1b --dtype fp16 --group 128 --new 64 \
            --prompt 128 --batches 1,8 --modes int8,int4 --linear '' --json "$OUTDIR/quant-mma.json"
        step quant-auto 60 env TORCHTRT_C_WQ_MMA=auto "$PY" bench/quant.py --config 1b --dtype fp16 --group 128 --new 64 \
            --prompt 128 --batches 1 --modes int8 --linear '' --json "$OUTDIR/quant-auto.json"
        step quant-noglu 80 env TORCHTRT_C_WQ_GLU=0 "$PY" bench/quant.py --config 1b --dtype fp16 --group 128 --new 64 \
            --prompt 128 --batches 1,8 --modes int8,int4 --linear '' --json "$OUTDIR/quant-noglu.json"
        step qconv 40 "$PY" bench/qconv_mma.py --batch 8 --runs 5
        step llm 140 "$PY" bench/llm.py --config 1b --dtype fp16 --batches 1,8 --prompts 128 --new 128 --json "$OUTDIR/llm.json"
        echo "gpu_run.sh quant done in $(( $(date +%s) - T0 ))s; logs in $OUTDIR" >&2
        exit 0 ;;
    quick)
        # quant in about 5 minutes (LIMIT 300): the weight-only/LLM kernels' tests on the GPU, the 1B
        # Llama's batch-1 decode with the step profile, then batch 8 and the prompt under WQ_MMA=auto
        step tests 110 "$PY" -m pytest tests/device/test_wq_linear.py tests/device/test_wq_rms.py tests/device/test_wq_gated.py \
            tests/models/test_llm_quant.py \
            tests/models/test_llm_kernels.py tests/device/test_qconv_mma.py tests/device/test_qgemm_mma.py \
            tests/gpu/test_llm_gpu.py tests/gpu/test_wq_linear_cuda.py tests/models/test_torchao_weight_only.py \
            tests/models/test_quant.py -q $XDIST -p no:cacheprovider -rfE -x
        step quant 100 "$PY" bench/quant.py --config 1b --dtype fp16 --group 128 --new 32 --prompt 128 --batches 1 \
            --runs 2 --linear '' --profile --json "$OUTDIR/quant.json"
        step quant-auto 80 env TORCHTRT_C_WQ_MMA=auto "$PY" bench/quant.py --config 1b --dtype fp16 --group 128 --new 32 \
            --prompt 128 --batches 8 --runs 2 --modes int8,int4 --linear '' --json "$OUTDIR/quant-auto.json"
        echo "gpu_run.sh quick done in $(( $(date +%s) - T0 ))s; logs in $OUTDIR" >&2
        exit 0 ;;
    ab)
        # A/B of settings on the 1B Llama's batch-1 decode step (bench/decode_ab.py: ms/token, the
        # step's kernels by device time, their registers), then the quick tests. AB_RUNS: lines
        # "MODES VARIANT..." (one decode_ab.py call each), default the weight-only GEMV's geometry
        # and the norm's row split
        AB_RUNS=${AB_RUNS:-"int8 base WQ_MB=1 WQ_MB=1,WQ_U=4 WQ_MB=2 WQ_MB=1,WQ_R=2 WQ_MB=1,WQ_R=8
int4 base WQ_MB=1 WQ_MB=1,WQ_U=4
float base NORM_SPLIT=1 GEMM_GEMV=auto"}
        # the norm kernel's tests first (its row split, NORM_SPLIT, was tested on PoCL only)
        step pretest 60 "$PY" -m pytest tests/device/test_norm_warp.py -q $XDIST -p no:cacheprovider -rfE
        n=0
        while read -r modes variants; do
            [ -z "$modes" ] && continue
            n=$((n + 1))
            # shellcheck disable=SC2086
            # AB_LIMITS: seconds for each line (default 190 for the first, 100 for the others)
            lim=$(echo "${AB_LIMITS:-}" | awk -v n="$n" '{print $n}')
            step "ab$n" "${lim:-$([ "$n" = 1 ] && echo 190 || echo 100)}" "$PY" bench/decode_ab.py --config 1b --dtype fp16 --modes "$modes" \
                --batches "${AB_BATCHES:-1}" --variants $variants --json "$OUTDIR/ab$n.json"
            grep -E "^#|^ " "$OUTDIR/ab$n.log" >&2
        done <<< "$AB_RUNS"
        step argmax 25 "$PY" bench/argmax_rows.py
        cat "$OUTDIR/argmax.log" >&2
        step tests 110 "$PY" -m pytest tests/device/test_norm_warp.py tests/device/test_wq_linear.py tests/device/test_wq_rms.py \
            tests/device/test_wq_gated.py tests/models/test_llm_quant.py tests/models/test_llm_kernels.py \
            tests/gpu/test_llm_gpu.py tests/gpu/test_wq_linear_cuda.py -q $XDIST -p no:cacheprovider -rfE
        echo "gpu_run.sh ab done in $(( $(date +%s) - T0 ))s; logs in $OUTDIR" >&2
        exit 0 ;;
    *) echo "usage: bench/gpu_run.sh 1|2|3|all|par|check|vision|quant|quick|ab" >&2; exit 2 ;;
esac
# merged tables (and chart, where matplotlib is) of every JSON in OUTDIR so far
png=()
"$PY" -c "import matplotlib" 2>/dev/null && png=(--png "$OUTDIR/gpu-ratios.png")
"$PY" bench/report.py "$OUTDIR"/*.json --md "$OUTDIR/gpu.md" "${png[@]}" >/dev/null 2>"$OUTDIR/report.log" \
    || tail -3 "$OUTDIR/report.log" >&2
# one archive of everything (the device tool brings back only a few files per command)
(cd "$OUTDIR" && tar czf "gpu-$PART-results.tgz" --exclude='*.tgz' -- *) 2>/dev/null
echo "gpu_run.sh part $PART done in $(( $(date +%s) - T0 ))s; JSON in $OUTDIR (all of it in gpu-$PART-results.tgz)" >&2
ls -la "$OUTDIR" >&2
