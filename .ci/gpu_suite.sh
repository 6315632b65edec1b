#!/usr/bin/env bash
# The test suite on a GPU machine (CI has no GPU; run this by hand on one):
#   .ci/gpu_suite.sh [pytest args]     e.g. .ci/gpu_suite.sh tests/device -x
# Registers NVIDIA's OpenCL ICD when the driver library is there, builds the extension in
# place, then runs the suite with TORCHTRT_C_DEVICE=gpu (every tier, slow tests excluded
# unless you pass -m), N workers (default 12). Logs and a JUnit file go to $OUT (else
# build/gpu-suite).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUTDIR=${OUT:-build/gpu-suite}
mkdir -p "$OUTDIR"
icd=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
if [ -e "$icd" ]; then
    mkdir -p /etc/OpenCL/vendors
    [ -e /etc/OpenCL/vendors/nvidia.icd ] || echo "$icd" > /etc/OpenCL/vendors/nvidia.icd
fi
"$PY" setup.py -q build_ext --inplace -j "$(nproc)" >"$OUTDIR/build.log" 2>&1 \
    || { tail -30 "$OUTDIR/build.log"; exit 1; }
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TORCHTRT_C_DEVICE=${TORCHTRT_C_DEVICE:-gpu}
"$PY" -c "import torchtrt_c; print(torchtrt_c.devices())"
args=("$@"); [ ${#args[@]} -eq 0 ] && args=(tests -m "not slow")
"$PY" -m pytest "${args[@]}" -q -n "${N:-12}" -p no:cacheprovider -rfE \
    --junitxml="$OUTDIR/junit.xml" 2>&1 | tee "$OUTDIR/pytest.log" | tail -60
exit "${PIPESTATUS[0]}"
