# Sourced by GPU probe scripts after `cd` to the repository root, first thing in a device command:
# $O (OUT, else /tmp/out) and T0 set, NVIDIA's OpenCL ICD registered (in ICD_DIR, default
# /etc/OpenCL/vendors), the extension built (log in $O/build.log; exits on failure), PYTHONPATH
# and TORCHTRT_C_DEVICE=gpu exported, the build time and the GPU printed.
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s)
ICD_DIR=${ICD_DIR:-/etc/OpenCL/vendors}
mkdir -p "$ICD_DIR"; echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > "$ICD_DIR/nvidia.icd"
python3 setup.py -q build_ext --inplace -j "$(nproc)" > "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
export PYTHONPATH=$PWD TORCHTRT_C_DEVICE=gpu
echo "build $(( $(date +%s) - T0 )) s"; nvidia-smi -L
