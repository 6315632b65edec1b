#!/usr/bin/env bash
# torchtrt_c set-up and entry points. Safe to run again.
#   ./run.sh quickstart   install everything, build, compile + run a model on the default device
#   ./run.sh test         install everything, build, run the C tests and the unit + device + model
#                         test tiers without the slow sweeps (-m "not slow", 2 pytest workers that
#                         keep each xdist_group together, e.g. the Ray tests on one Ray instance;
#                         TTC_TEST_JOBS=N for N, extra arguments go to pytest)
#   ./run.sh bench ARGS   install everything, build, run bench/run.py ARGS
# "Everything" includes the model tier's optional libraries (transformers; torchvision matching
# torch and timm, in .deps/vision where torchvision is not importable as installed) and Ray Serve
# (torchtrt_c.serve); where one cannot be installed its tests skip.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}

need_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_system() {
    # PoCL (OpenCL on the CPU), the OpenCL ICD loader and headers, a compiler.
    if ! { [ -e /usr/include/CL/cl.h ] && ldconfig -p | grep -q libOpenCL.so.1 \
           && ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1 && command -v cc >/dev/null && command -v make >/dev/null; }; then
        if command -v apt-get >/dev/null; then
            need_root apt-get update -qq
            need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo build-essential >/dev/null
        else
            echo "run.sh: please install an OpenCL ICD (e.g. PoCL), the OpenCL loader/headers and a C compiler" >&2
            exit 1
        fi
    fi
    # OpenBLAS: CPU engines run float32 GEMM/convolution through it as native OpenCL kernels
    # (loaded with dlopen: without it they use the OpenCL kernels; see docs/cpu.md).
    if ! ldconfig -p | grep -q libopenblas.so.0 && command -v apt-get >/dev/null; then
        need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas0 >/dev/null \
            || { need_root apt-get update -qq && need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas0 >/dev/null; } \
            || echo "run.sh: could not install OpenBLAS (libopenblas0); CPU engines will use the OpenCL kernels" >&2
    fi
    # oneDNN: CPU engines run float32 convolutions and constant-weight GEMMs through it (dlopen'ed,
    # built against its header: without the library, im2col + OpenBLAS / OpenBLAS; see docs/cpu.md).
    if ! { ldconfig -p | grep -q libdnnl.so.2 && [ -e /usr/include/oneapi/dnnl/dnnl.h ]; } && command -v apt-get >/dev/null; then
        need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libdnnl-dev >/dev/null \
            || { need_root apt-get update -qq && need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libdnnl-dev >/dev/null; } \
            || echo "run.sh: could not install oneDNN (libdnnl-dev); CPU convolutions will use im2col + OpenBLAS" >&2
    fi
}

install_python() {
    # torch 2.13.0 CPU build (a plain 'pip install torch' would pull GBs of CUDA packages).
    if ! "$PY" -c "import torch" 2>/dev/null; then
        "$PY" -m pip install -q torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu 2>/dev/null \
            || "$PY" -m pip install -q torch==2.13.0
    fi
    "$PY" -c "import numpy, pytest, xdist, setuptools, wheel" 2>/dev/null \
        || "$PY" -m pip install -q numpy pytest pytest-xdist setuptools wheel
    install_model_libs
}

have_module() { "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)" 2>/dev/null; }

install_model_libs() {
    # The model tier's optional libraries: a failed install only skips those tests.
    have_module transformers || "$PY" -m pip install -q transformers \
        || echo "run.sh: note: could not install transformers; the HF model tests will skip" >&2
    install_vision_libs || echo "run.sh: note: could not install torchvision/timm; the vision model tests will skip" >&2
    # nbclient + ipykernel run the example notebook in a real Jupyter kernel
    { have_module nbclient && have_module ipykernel; } || "$PY" -m pip install -q nbclient ipykernel \
        || echo "run.sh: note: could not install nbclient/ipykernel; the notebook tests will skip" >&2
    # torchtrt_c.serve's optional dependency (pyproject: torchtrt_c[serve]); its tests run a
    # local Ray instance
    have_module ray.serve || "$PY" -m pip install -q "ray[serve]>=2.60" \
        || echo "run.sh: note: could not install ray[serve]; the serving tests will skip" >&2
    # quantized models (issue 35): torchao (its PT2E flow and quantize_ configs) and
    # scikit-learn (the bundled load_digits images the int8 accuracy test trains on)
    have_module torchao || "$PY" -m pip install -q torchao \
        || echo "run.sh: note: could not install torchao; the quantized model tests will skip" >&2
    have_module sklearn || "$PY" -m pip install -q scikit-learn \
        || echo "run.sh: note: could not install scikit-learn; the int8 accuracy test will skip" >&2
    return 0
}

VISION_DIR=.deps/vision
install_vision_libs() {
    # torchvision (the release matching torch) and timm. Where torchvision imports already (the
    # GPU machine) it is used as installed. Elsewhere they go to $VISION_DIR, NOT site-packages:
    # PyPI's torchvision wheel carries a C extension linked against CUDA torch that does not load
    # beside a CPU torch, and an installed torchvision that fails to import breaks
    # `import transformers` (it imports torchvision when it finds it). tests/thirdparty.py puts
    # $VISION_DIR on sys.path only in a process that asks for torchvision/timm, and imports
    # torchvision without its C ops (the models we test and time do not use them).
    local tv
    tv=$("$PY" -c "import torch; v = torch.__version__.split('+')[0].split('.'); print(f'0.{int(v[1]) + 15}')")
    # timm's own dependencies are pure Python (transformers needs most of them too)
    "$PY" -c "import yaml, huggingface_hub, safetensors" 2>/dev/null \
        || "$PY" -m pip install -q pyyaml huggingface_hub safetensors || return 1
    # torchvision's own dependencies besides torch and numpy (installed with --no-deps below):
    # without Pillow it does not import and every vision test skips
    "$PY" -c "import PIL" 2>/dev/null || "$PY" -m pip install -q pillow || return 1
    if "$PY" -c "import torchvision" 2>/dev/null; then
        have_module timm || "$PY" -m pip install -q --no-deps timm || return 1
        return 0
    fi
    if ! ls -d "$VISION_DIR/torchvision-$tv".*.dist-info >/dev/null 2>&1; then
        rm -rf "$VISION_DIR"   # none yet, or one for another torch
        "$PY" -m pip install -q --no-deps --target "$VISION_DIR" "torchvision==$tv.*" || return 1
    fi
    if ! ls -d "$VISION_DIR"/timm-*.dist-info >/dev/null 2>&1; then
        "$PY" -m pip install -q --no-deps --target "$VISION_DIR" timm || return 1
    fi
}

build() {
    "$PY" -m pip install -q --no-build-isolation -e . 
}

setup_all() { install_system; install_python; build; }

case "${1:-}" in
    quickstart) setup_all; exec "$PY" examples/quickstart.py ;;
    test)
        setup_all
        make -s ctest
        set +e
        "$PY" -m pytest tests -q -m "not slow" -n "${TTC_TEST_JOBS:-2}" --dist loadgroup "${@:2}"
        rc=$?
        set -e
        # pytest exits 5 when it collects no tests: that is a failure of the suite, not a pass.
        if [ $rc -eq 5 ]; then echo "run.sh: pytest collected no tests" >&2; exit 1; fi
        exit $rc ;;
    bench) setup_all; shift; exec "$PY" bench/run.py "$@" ;;
    *) echo "usage: $0 quickstart | test [pytest args] | bench [args]" >&2; exit 2 ;;
esac
