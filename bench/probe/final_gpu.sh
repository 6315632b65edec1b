#!/usr/bin/env bash
# The end-of-session GPU check on one GPU, in two device commands of < 10 minutes:
#   PART=1 bash bench/probe/final_gpu.sh   build, the GPU suite, overhead.py --cuda, batch 32 fp16
#                                          rows of the session-6 table (ViT, GPT-2, ConvNeXt,
#                                          ResNet-50, BERT)
#   PART=2 bash bench/probe/final_gpu.sh   build, batch 8 fp16 rows of the real-model zoo, ResNet-50
#                                          b32 fp32 (TF32), the zoo GPT-2 with its logits (b1/b32)
#   PART=3 bash bench/probe/final_gpu.sh   build, batch 32 fp32 rows (torch's TF32 defaults:
#                                          convolutions TF32, matmuls fp32) of the real-model zoo
#   PART=4 bash bench/probe/final_gpu.sh   build, batch 8 fp32 rows of the real-model zoo
#   PART=5 bash bench/probe/final_gpu.sh   build, the GPU suite, overhead.py --cuda, the bench zoo
#                                          at batch 1 fp32 + fp16 without Inductor (issue 13's
#                                          end-to-end / resident rows)
#   PART=6 bash bench/probe/final_gpu.sh   build, the bench zoo at batch 32 fp32 + fp16 without
#                                          Inductor
# Rows go to $OUT/*.json (bench/run.py), merged into $OUT/zoo.md; each run.py call gets a
# deadline from the time left of LIMIT (default 560 s).
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
LIMIT=${LIMIT:-560}
T0=$(date +%s)
mkdir -p /etc/OpenCL/vendors; echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
python3 setup.py -q build_ext --inplace -j "$(nproc)" > "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
export PYTHONPATH=$PWD TORCHTRT_C_DEVICE=gpu
echo "build $(( $(date +%s) - T0 )) s"; nvidia-smi -L
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
row() {  # name models batches precisions [extra run.py args]
    local name=$1 models=$2 b=$3 p=$4; shift 4
    local l; l=$(left)
    [ "$l" -le 40 ] && { echo "no time left for $name"; return; }
    timeout --signal=INT --kill-after=5 "$l" python3 bench/run.py --models "$models" --batches "$b" \
        --precisions "$p" --order model --warm-batches "$b" --budget 0.3 --min-runs 5 --max-runs 100 \
        --row-budget 60 --deadline $(( l - 40 )) --tag "final gpu $name" --out "$O/$name.json" "$@" > "$O/$name.log" 2>&1
    echo "$name rc=$? at $(( $(date +%s) - T0 )) s"
}
if [ "${PART:-1}" = 1 ]; then
    timeout ${SUITE_S:-300} python3 -m pytest tests -m "not slow" -q -n 14 -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1
    echo "suite rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^(FAILED|ERROR)|passed|failed" "$O/pytest.log" | tail -30
    timeout 40 python3 bench/overhead.py --cuda --runs 300 > "$O/overhead_cuda.txt" 2>&1
    echo "overhead rc=$?"; tail -25 "$O/overhead_cuda.txt"
    row b32fp16 tv_vit_b_16,hf_gpt2,tv_convnext_tiny,tv_resnet50,hf_bert 32 fp16
elif [ "${PART:-1}" = 5 ]; then
    timeout ${SUITE_S:-330} python3 -m pytest tests -m "not slow" -q -n 14 -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1
    echo "suite rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^(FAILED|ERROR)|passed|failed" "$O/pytest.log" | tail -30
    timeout 40 python3 bench/overhead.py --cuda --runs 300 > "$O/overhead_cuda.txt" 2>&1
    echo "overhead rc=$?"; tail -25 "$O/overhead_cuda.txt"
    row zoo_b1 ${MODELS:-resnet18,resnet50,mobilenet_v2,vit_b16,bert_base,gpt2} 1 fp32,fp16 --skip-inductor
elif [ "${PART:-1}" = 6 ]; then
    row zoo_b32 ${MODELS:-resnet18,resnet50,mobilenet_v2,vit_b16,bert_base,gpt2} 32 fp32,fp16 --skip-inductor
elif [ "${PART:-1}" = 3 ]; then
    row b32fp32 ${MODELS:-tv_resnet50,tv_convnext_tiny,tv_vit_b_16,hf_bert,hf_gpt2,hf_llama,tv_resnet18,tv_mobilenet_v2,tv_mobilenet_v3_large,tv_efficientnet_b0} 32 fp32
elif [ "${PART:-1}" = 4 ]; then
    row b8fp32 ${MODELS:-tv_resnet50,tv_convnext_tiny,tv_vit_b_16,hf_bert,hf_gpt2,hf_llama,tv_resnet18,tv_mobilenet_v2,tv_mobilenet_v3_large,tv_efficientnet_b0} 8 fp32
else
    row b8fp16 tv_vit_b_16,hf_gpt2,tv_convnext_tiny,tv_resnet50,hf_bert,hf_llama,tv_resnet18,tv_mobilenet_v2,tv_mobilenet_v3_large,tv_efficientnet_b0 8 fp16
    row b32fp32 tv_resnet50 32 fp32
    row zoo_gpt2 gpt2 1,32 fp32,fp16 --skip-inductor
fi
python3 bench/report.py "$O"/*.json --md "$O/zoo.md" > /dev/null 2> "$O/report.log" || tail -3 "$O/report.log"
grep -E "^\| (hf_|tv_|gpt2|resnet|mobilenet|vit|bert)" "$O/zoo.md" | cut -d'|' -f2-12,16-17 | head -40
echo "done in $(( $(date +%s) - T0 )) s"
