#!/usr/bin/env bash
# Issue 15 on the GPU: cold compile (fresh program/tuning/engine caches, NVIDIA's ComputeCache
# emptied too) of the real-model zoo beside Inductor's default compile (fresh Inductor/Triton
# caches), one process per model per compiler (bench/cold_compile.py), --warm for the second
# compile in the same process.
#   MODELS="tv_resnet50 hf_bert" BATCH=32 PREC=fp16 bash bench/probe/compile_zoo_gpu.sh
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
mkdir -p /etc/OpenCL/vendors; echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
T0=$(date +%s)
LIMIT=${LIMIT:-560}
python3 setup.py -q build_ext --inplace -j 16 > "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
export PYTHONPATH=$PWD TORCHTRT_C_DEVICE=gpu
[ -n "${PRE:-}" ] && { eval "$PRE"; echo "pre rc=$? at $(( $(date +%s) - T0 )) s"; }
for m in ${MODELS:-tv_resnet18 tv_resnet50 tv_mobilenet_v2 tv_mobilenet_v3_large tv_efficientnet_b0 tv_convnext_tiny tv_vit_b_16 hf_bert hf_gpt2 hf_llama}; do
    l=$(( LIMIT - ($(date +%s) - T0) ))
    [ "$l" -le 30 ] && { echo "no time left for $m"; continue; }
    timeout "$l" python3 bench/cold_compile.py --models "$m" --batch "${BATCH:-32}" --precision "${PREC:-fp16}" \
        --cold-driver --warm --out "$O/cold_$m.json" > "$O/cold_$m.txt" 2>&1
    echo "$m rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\| $m " "$O/cold_$m.txt" | head -2
done
echo "done in $(( $(date +%s) - T0 )) s"
