#!/usr/bin/env bash
# The GPU tables in one run, each step under its own time limit so that one slow step leaves the others'
# tables (about 6 minutes on an H100 / H200):
#   1. benchmarks/stages.py: the text-aware decision stage by stage on the device (OCR on the torch backend), a first
#      and a second question on the example invoice: OCR ms per page, decision (texture + scorers + selection) ms;
#   2. benchmarks/throughput.py: TTFT and images/s on the Qwen2.5-VL-7B config at batch 1 and 8: unpruned, the page
#      downscaled to the kept token count, compress and foveate in texture and text mode (OCR on the device);
#   3. benchmarks/ocr_backends.py: the OCR backends on the device against onnxruntime on the host;
#   4. benchmarks/full_tower.py: the whole page's Qwen2.5-VL-7B tower, the model's own (one attention call per window)
#      against full_tower (each window length in one call, what compress runs): ms, calls, bit equality; the same
#      for Qwen3-VL-8B's tower (each image size in one call, one host read instead of one per block);
#   5. benchmarks/decision_time.py --graphs: Realizer.decide per call, eager and with the texture as CUDA graphs
#      (RelevanceConfig.texture_graphs), every graphed decision checked against the eager one;
#   6. benchmarks/text_host.py: the host work of a text-mode decision (OCR look-up, matching, word units, whole-word
#      selection) on this machine's host, MiniLM off: what text mode adds to the decision above.
#
#   bash benchmarks/gpu_tables.sh results/gpu                 # all of it
#   bash benchmarks/gpu_tables.sh results/gpu --no-semantic   # without MiniLM (its package not installed)
#
# Extra arguments go to the two text-path benchmarks (stages.py, throughput.py).
set -u
out=${1:-results/gpu}
shift || true
mkdir -p "$out"
python -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0), 'transformers', transformers.__version__)"
timeout "${STAGES_S:-120}" python benchmarks/stages.py --device cuda --dtype float32 --backend torch --invoice-only \
    --repeat 5 "$@" --out "$out/stages_cuda.md"
echo "stages: exit $?"
timeout "${THROUGHPUT_S:-300}" python benchmarks/throughput.py --device cuda --dtype bfloat16 --models qwen2.5-vl-7b \
    --batches 1 8 --repeat 3 --ocr-backend torch "$@" --out "$out/throughput.md"
echo "throughput: exit $?"
timeout "${OCR_S:-75}" python benchmarks/ocr_backends.py --device cuda --dtype float32 --threads "$(nproc)" --out "$out/ocr_backends.md"
echo "ocr_backends: exit $?"
timeout "${TOWER_S:-90}" python benchmarks/full_tower.py --device cuda --batches 1 8 --out "$out/full_tower.md"
echo "full_tower: exit $?"
timeout "${TOWER_S:-90}" python benchmarks/full_tower.py --device cuda --model qwen3-vl-8b --batches 1 8 \
    --out "$out/full_tower_qwen3.md"
echo "full_tower qwen3: exit $?"
timeout "${DECISION_S:-90}" python benchmarks/decision_time.py --device cuda --no-semantic --graphs > "$out/decision_time.md"
echo "decision_time: exit $?"
timeout "${HOST_S:-60}" python benchmarks/text_host.py --rounds 2 --repeat 20 --out "$out/text_host.md" > /dev/null
echo "text_host: exit $?"
