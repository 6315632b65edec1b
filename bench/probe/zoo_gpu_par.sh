#!/usr/bin/env bash
# The real-model GPU zoo spread over every GPU of one host in one device command, optionally with
# the GPU test suite on GPU 0 (SUITE=1). Run from the repository root on the GPU machine:
#   SUITE=1 LIMIT=540 bash bench/probe/zoo_gpu_par.sh
# Env: MODELS = comma list of name[:weight[:batches[:precisions[:noind]]]] (batches/precisions
# with '/' between values; noind: skip Inductor), default: the 10 real models of issue 12's zoo
# + "kernels" (the GEMM/conv kernel tables vs cuBLAS/cuDNN); BATCHES (default 32,8) and
# PRECISIONS (fp16,fp32) where a model names none; LIMIT (s, whole run).
# Each model is one bench/run.py process writing $OUT/<model>.json (+ .log); models go to GPUs
# longest-first onto the least-loaded GPU (weights = rough minutes per row set). Afterwards
# bench/report.py merges them into $OUT/zoo.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
LIMIT=${LIMIT:-540}
T0=$(date +%s)
mkdir -p /etc/OpenCL/vendors; echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
python3 setup.py -q build_ext --inplace -j "$(nproc)" > "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
export PYTHONPATH=$PWD CUDA_DEVICE_ORDER=PCI_BUS_ID
NG=$(python3 -c "import torch; print(max(1, torch.cuda.device_count()))")
echo "build $(( $(date +%s) - T0 )) s; $NG GPU(s)"; nvidia-smi -L
MODELS=${MODELS:-hf_gpt2:3,tv_efficientnet_b0:3,hf_bert:2.5,tv_vit_b_16:2.5,tv_convnext_tiny:2.5,tv_resnet50:2.5,kernels:2,hf_llama:2,tv_resnet18:1.5,tv_mobilenet_v2:1.5,tv_mobilenet_v3_large:1.5}
FIRST=0
if [ "${SUITE:-0}" = 1 ] && [ "$NG" -gt 1 ]; then FIRST=1; fi
# longest-first onto the least-loaded bench GPU
ASSIGN=$(python3 - "$MODELS" "$FIRST" "$NG" <<'PY'
import sys
items = [(m, float(m.split(":")[1]) if ":" in m else 2.0) for m in sys.argv[1].split(",") if m]
first, ng = int(sys.argv[2]), int(sys.argv[3])
load = {g: 0.0 for g in range(first, ng)}
out = {g: [] for g in load}
for name, w in sorted(items, key=lambda x: -x[1]):
    g = min(load, key=load.get); load[g] += w; out[g].append(name)
print(" ".join(f"{g}={'+'.join(v)}" for g, v in out.items() if v))  # specs hold no spaces
PY
)
echo "assignment: $ASSIGN"
bench_model() {  # GPU name:weight:batches:precisions:noind
    local g=$1 spec=$2 left=$(( LIMIT - ($(date +%s) - T0) ))
    local m b p ni
    IFS=: read -r m _ b p ni <<< "$spec"
    b=${b:-${BATCHES:-32,8}}; p=${p:-${PRECISIONS:-fp16,fp32}}
    [ "$left" -le 30 ] && { echo "no time left for $m" >&2; return; }
    local args=(--models "$m")
    [ "$m" = kernels ] && args=(--models "" --kernels gemm,conv)
    [ "$ni" = noind ] && args+=(--skip-inductor)
    CUDA_VISIBLE_DEVICES=$g TORCHTRT_C_DEVICE=gpu timeout --signal=INT --kill-after=5 "$left" \
        python3 bench/run.py "${args[@]}" --batches "${b//\//,}" --order batch \
        --precisions "${p//\//,}" --warm-batches "${WARM:-32}" --budget "${BUDGET:-0.3}" \
        --min-runs 5 --max-runs 100 --row-budget 60 --deadline $(( left - 45 )) \
        --tag "gpu zoo par" --out "$O/$m.json" > "$O/$m.log" 2>&1
    echo "$m ($b $p $ni) on GPU $g rc=$? at $(( $(date +%s) - T0 )) s"
}
for pair in $ASSIGN; do
    g=${pair%%=*}; ms=${pair#*=}
    ( for m in ${ms//+/ }; do bench_model "$g" "$m"; done ) &
done
if [ "$FIRST" = 1 ]; then
    ( CUDA_VISIBLE_DEVICES=0 TORCHTRT_C_DEVICE=gpu timeout $(( LIMIT - 60 )) python3 -m pytest tests -m "not slow" \
        -q -n "${N:-16}" -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1
      echo "suite rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^(FAILED|ERROR)|passed|failed" "$O/pytest.log" | tail -30 ) &
fi
wait
python3 bench/report.py "$O"/*.json --md "$O/zoo.md" > /dev/null 2> "$O/report.log" || tail -3 "$O/report.log"
(cd "$O" && tar czf zoo-results.tgz --exclude='*.tgz' -- *) 2>/dev/null
grep -E "^\| (hf_|tv_)" "$O/zoo.md" | cut -c1-400 | head -60
echo "done in $(( $(date +%s) - T0 )) s"
