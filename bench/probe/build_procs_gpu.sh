#!/usr/bin/env bash
# One GPU call for issue 15's build workers: build, the worker tests natively, then cold compiles
# with the workers off (TORCHTRT_C_BUILD_PROCS=1) and on (default), driver caches emptied too.
#   MODELS=tv_resnet50 BATCH=32 bash bench/probe/build_procs_gpu.sh
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
mkdir -p /etc/OpenCL/vendors; echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
T0=$(date +%s)
python3 setup.py -q build_ext --inplace -j 16 > "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"; nvidia-smi -L
export PYTHONPATH=$PWD TORCHTRT_C_DEVICE=gpu
timeout 120 python3 -m pytest tests/device/test_build_procs.py -q -p no:cacheprovider -rfE > "$O/pytest.log" 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -5 "$O/pytest.log"
for m in ${MODELS:-tv_resnet50}; do
  for p in 1 default; do
    if [ $p = 1 ]; then export TORCHTRT_C_BUILD_PROCS=1; else unset TORCHTRT_C_BUILD_PROCS; fi
    timeout 150 python3 bench/cold_compile.py --models $m --batch ${BATCH:-32} --precision fp16 --no-inductor \
       --cold-driver --out "$O/cold_${m}_$p.json" > "$O/cold_${m}_$p.txt" 2>&1
    echo "$m procs=$p rc=$? at $(( $(date +%s) - T0 )) s"; grep -iE "total|program|tune|prebuil|compiled" "$O/cold_${m}_$p.txt" | head -12
  done
done
