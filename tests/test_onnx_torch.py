"""The torch translation of rapidocr's PP-OCR ONNX graphs equals onnxruntime (CPU float32), runs in bfloat16 and on a
fake CUDA device, and rejects ops it does not implement by name.

Tolerance (float32). Two float32 evaluations of the same graph differ only in rounding (summation order, fused
kernels). A reduction of length K (a convolution's C_in/group x kh x kw, a MatMul's inner dim) rounds with a relative
error of about sqrt(K) * u (u = 2**-24, random-rounding model; the worst case K * u is never approached), and the D
arithmetic nodes on the longest input->output path add such errors one after another. The bound used is therefore

    max|torch - ort| <= D * sqrt(K_max) * u * max|ort|     and     ||torch - ort||_2 <= D * sqrt(K_max) * u * ||ort||_2

with D and K_max counted from the graph itself (det: D = 245, K_max = 864 -> 4.3e-4; rec: D = 302 -> 5.3e-4; the
outputs are probabilities, so the scale is <= 1). ``test_tolerance_catches_wrong_same_padding`` shows the bound is
tight enough to fail on a one-pixel padding mistake.

Tolerance (bfloat16). bfloat16 has u = 2**-8, so the bound above is vacuous; the bfloat16 tests check what OCR
needs instead: the same strings on a clean rendering, and the detector's text mask (probability > rapidocr's 0.3
threshold) equal to the float32 one on all but 2% of pixels.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw, ImageFont

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
rapidocr = pytest.importorskip("rapidocr")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from arr_coc.reading import TextReader  # noqa: E402
from arr_coc.reading.ocr.onnx_torch import SUPPORTED_OPS, OnnxModule, UnsupportedOnnxOp  # noqa: E402
from arr_coc.reading.ocr.torch_backend import TorchOcrSession, TorchRapidOCR  # noqa: E402

MODELS = Path(rapidocr.__file__).parent / "models"
DET = MODELS / "PP-OCRv6_det_small.onnx"
REC = MODELS / "PP-OCRv6_rec_small.onnx"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
U32 = 2.0**-24  # float32 unit roundoff
NOT_ARITHMETIC = {
    "Identity",
    "Shape",
    "Slice",
    "Squeeze",
    "Unsqueeze",
    "Concat",
    "Reshape",
    "Transpose",
    "Cast",
    "Constant",
}
OCR_PARAMS = {
    "Global.log_level": "critical",
    "Global.use_cls": False,
    "Det.limit_type": "max",
    "Det.limit_side_len": 736,
}

pytestmark = pytest.mark.skipif(not (DET.exists() and REC.exists()), reason="rapidocr's PP-OCRv6 models not found")


def float32_tolerance(model: onnx.ModelProto) -> float:
    """D * sqrt(K_max) * u for ``model`` (see the module docstring)."""
    weights = {t.name: tuple(t.dims) for t in model.graph.initializer}
    depth: dict[str, int] = {}
    k_max = 1
    for n in model.graph.node:
        d = max([depth.get(i, 0) for i in n.input] + [0]) + (n.op_type not in NOT_ARITHMETIC)
        depth.update(dict.fromkeys(n.output, d))
        w = weights.get(n.input[1]) if len(n.input) > 1 else None
        if w is not None and n.op_type in ("Conv", "ConvTranspose"):
            k_max = max(k_max, (w[1] if n.op_type == "Conv" else w[0]) * math.prod(w[2:]))
        elif w is not None and n.op_type == "MatMul":
            k_max = max(k_max, w[0])
    return depth[model.graph.output[0].name] * math.sqrt(k_max) * U32


def assert_close(got: np.ndarray, ref: np.ndarray, rtol: float) -> None:
    """Max-abs and relative-L2 error of ``got`` against ``ref``, both relative to ``ref``'s scale."""
    assert got.shape == ref.shape
    max_abs = float(np.abs(got - ref).max())
    rel_l2 = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    assert max_abs <= rtol * float(np.abs(ref).max()), f"max|diff| {max_abs:.3g} > {rtol:.3g} * max|ref|"
    assert rel_l2 <= rtol, f"relative L2 error {rel_l2:.3g} > {rtol:.3g}"


def font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.truetype(FONT, size)
    except OSError:
        pytest.skip("DejaVu font not installed")


def render_page(width: int = 520, height: int = 300) -> Image.Image:
    """Dark text lines on white paper."""
    img = Image.new("RGB", (width, height), "white")
    d = ImageDraw.Draw(img)
    lines = ["Invoice No: 4711", "Date: 2024-03-01", "Amount due: $1,234.00", "Ship to: 52 Maple Street"]
    for i, text in enumerate(lines):
        d.text((24, 20 + 64 * i), text, fill="black", font=font(30 - 2 * i))
    return img


def det_input(img: Image.Image, h: int, w: int) -> np.ndarray:
    """(1, 3, h, w) float32 the way rapidocr's DetPreProcess normalises: (x / 255 - 0.5) / 0.5."""
    x = np.asarray(img.resize((w, h), Image.BILINEAR), dtype=np.float32) / 255.0
    return ((x - 0.5) / 0.5).transpose(2, 0, 1)[None].copy()


def rec_input(widths: tuple[int, ...], batch_width: int) -> np.ndarray:
    """(len(widths), 3, 48, batch_width) text-line crops padded with zeros on the right, as TextRecognizer does."""
    out = np.zeros((len(widths), 3, 48, batch_width), dtype=np.float32)
    words = ["Invoice", "4711", "Amount due: $1,234.00", "2024-03-01"]
    for i, w in enumerate(widths):
        line = Image.new("RGB", (max(w * 2, 8), 96), "white")
        ImageDraw.Draw(line).text((4, 20), words[i % len(words)], fill="black", font=font(48))
        x = np.asarray(line.resize((w, 48), Image.BILINEAR), dtype=np.float32) / 255.0
        out[i, :, :, :w] = ((x - 0.5) / 0.5).transpose(2, 0, 1)
    return out


@pytest.fixture(scope="module")
def det_proto() -> onnx.ModelProto:
    return onnx.load(str(DET))


@pytest.fixture(scope="module")
def rec_proto() -> onnx.ModelProto:
    return onnx.load(str(REC))


@pytest.fixture(scope="module")
def det_pair(det_proto: onnx.ModelProto) -> tuple[OnnxModule, ort.InferenceSession]:
    return OnnxModule(det_proto).eval(), ort.InferenceSession(str(DET), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def rec_pair(rec_proto: onnx.ModelProto) -> tuple[OnnxModule, ort.InferenceSession]:
    return OnnxModule(rec_proto).eval(), ort.InferenceSession(str(REC), providers=["CPUExecutionProvider"])


def run_both(pair: tuple[OnnxModule, ort.InferenceSession], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    net, sess = pair
    with torch.inference_mode():
        got = net(torch.from_numpy(x)).numpy()
    return got, sess.run(None, {sess.get_inputs()[0].name: x})[0]


# ---------------------------------------------------------------------------------------------------------------------
# the PP-OCR graphs against onnxruntime, float32


def test_tolerances_are_derived_from_the_graphs(det_proto: onnx.ModelProto, rec_proto: onnx.ModelProto) -> None:
    # the figures the module docstring states
    assert float32_tolerance(det_proto) == pytest.approx(245 * math.sqrt(864) * U32)
    assert float32_tolerance(rec_proto) == pytest.approx(302 * math.sqrt(864) * U32)


# H and W are multiples of 32 (the detector's stride); 96/32 = 3 and 160/32 = 5 make odd maps at every scale, so the
# SAME_UPPER convs/max-pool (odd total pad) and the nearest Resize of odd maps are exercised; batch 2 in the last case
@pytest.mark.parametrize(("h", "w", "n"), [(96, 160, 1), (224, 352, 1), (64, 608, 1), (160, 96, 2)])
def test_det_matches_onnxruntime(det_pair, det_proto, h: int, w: int, n: int) -> None:
    page = render_page()
    x = np.concatenate([det_input(page, h, w), det_input(page.rotate(180), h, w)][:n])
    got, ref = run_both(det_pair, x)
    assert got.shape == (n, 1, h, w)
    assert ref.max() > 0.5  # the page has text the detector sees, so the comparison is on a meaningful map
    assert_close(got, ref, float32_tolerance(det_proto))


# odd and even widths (the recogniser's width is dynamic; its neck pools and reshapes by it)
@pytest.mark.parametrize("widths", [(37,), (101, 64, 80), (320, 200), (563, 411)])
def test_rec_matches_onnxruntime(rec_pair, rec_proto, widths: tuple[int, ...]) -> None:
    x = rec_input(widths, max(widths))
    got, ref = run_both(rec_pair, x)
    assert got.shape == ref.shape and got.shape[-1] == 18710
    assert_close(got, ref, float32_tolerance(rec_proto))
    # where onnxruntime's best character wins by more than the tolerance, torch picks the same one
    top2 = np.sort(ref, axis=-1)[..., -2:]
    clear = (top2[..., 1] - top2[..., 0]) > 2 * float32_tolerance(rec_proto)
    assert clear.any()
    np.testing.assert_array_equal(got.argmax(-1)[clear], ref.argmax(-1)[clear])


def test_tolerance_catches_wrong_same_padding(det_proto: onnx.ModelProto) -> None:
    """SAME_LOWER puts the odd pixel of padding at the start instead of the end: one pixel of shift in 3 layers must
    break the float32 bound against onnxruntime's SAME_UPPER, while matching onnxruntime's own SAME_LOWER."""
    lower = onnx.ModelProto()
    lower.CopyFrom(det_proto)
    changed = 0
    for node in lower.graph.node:
        for a in node.attribute:
            if a.name == "auto_pad" and a.s == b"SAME_UPPER":
                a.s = b"SAME_LOWER"
                changed += 1
    assert changed == 3  # 2 Conv + 1 MaxPool in the stem
    x = det_input(render_page(), 96, 160)
    upper_ref = ort.InferenceSession(det_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    lower_ref = ort.InferenceSession(lower.SerializeToString(), providers=["CPUExecutionProvider"])
    got_lower, ref_lower = run_both((OnnxModule(lower).eval(), lower_ref), x)
    assert_close(got_lower, ref_lower, float32_tolerance(det_proto))
    ref_upper = upper_ref.run(None, {"x": x})[0]
    with pytest.raises(AssertionError):
        assert_close(got_lower, ref_upper, float32_tolerance(det_proto))


# ---------------------------------------------------------------------------------------------------------------------
# single-op graphs: the general cases of the ops whose semantics are easy to get wrong


def one_node_model(node: onnx.NodeProto, x_shape: tuple[int, ...], inits: list, opset: int = 11) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node],
        "t",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    # IR version 10: what the PP-OCR files use and what onnxruntime 1.17+ reads
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def ort_vs_torch(model: onnx.ModelProto, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return OnnxModule(model)(torch.from_numpy(x)).detach().numpy(), sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize(("kernel", "stride"), [(2, 1), (3, 2), (2, 2), (4, 3)])
@pytest.mark.parametrize("hw", [(5, 7), (6, 9)])
def test_conv_and_maxpool_auto_pad(auto_pad: str, kernel: int, stride: int, hw: tuple[int, int]) -> None:
    rng = np.random.default_rng(kernel * 10 + stride)
    x = rng.standard_normal((1, 3, *hw)).astype(np.float32)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, kernel, kernel)).astype(np.float32), "w")
    conv = helper.make_node(
        "Conv", ["x", "w"], ["y"], kernel_shape=[kernel, kernel], strides=[stride, stride], auto_pad=auto_pad
    )
    got, ref = ort_vs_torch(one_node_model(conv, x.shape, [w]), x)
    np.testing.assert_allclose(got, ref, rtol=0, atol=3 * 27 * U32 * np.abs(x).max() * 4)  # K = 27 terms of |w| < 4
    pool = helper.make_node(
        "MaxPool", ["x"], ["y"], kernel_shape=[kernel, kernel], strides=[stride, stride], auto_pad=auto_pad
    )
    got, ref = ort_vs_torch(one_node_model(pool, x.shape, []), x)
    np.testing.assert_array_equal(got, ref)  # a max is exact


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_axis_follows_the_opset(opset: int) -> None:
    """Before opset 13 Softmax(axis=1) normalises over all dims from 1 on (the input is coerced to 2-D)."""
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1)
    got, ref = ort_vs_torch(one_node_model(node, x.shape, [], opset), x)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)


def test_resize_nearest_of_odd_maps() -> None:
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 5)).astype(np.float32)
    inits = [
        numpy_helper.from_array(np.array([], np.float32), "roi"),
        numpy_helper.from_array(np.array([1, 1, 4, 2], np.float32), "scales"),
    ]
    node = helper.make_node(
        "Resize",
        ["x", "roi", "scales"],
        ["y"],
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )
    got, ref = ort_vs_torch(one_node_model(node, x.shape, inits), x)
    np.testing.assert_array_equal(got, ref)  # a copy is exact


def test_unknown_op_is_named_with_its_node() -> None:
    node = helper.make_node("LpNormalization", ["x"], ["y"], name="my_norm_7")
    model = one_node_model(node, (1, 3), [])
    with pytest.raises(UnsupportedOnnxOp, match=r"'LpNormalization'.*'my_norm_7'"):
        OnnxModule(model)
    assert "LpNormalization" not in SUPPORTED_OPS


# ---------------------------------------------------------------------------------------------------------------------
# device and dtype


@pytest.mark.parametrize(("path", "shape"), [(DET, (1, 3, 96, 160)), (REC, (2, 3, 48, 101))])
def test_runs_on_fake_cuda_in_bfloat16(path: Path, shape: tuple[int, ...]) -> None:
    """Under FakeTensorMode every buffer is a fake CUDA tensor: a CPU constant made in forward would mix devices."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    net = OnnxModule(path)
    with FakeTensorMode():
        # .to("cuda") needs a CUDA build even for fake tensors, so place the buffers the way .to would
        net._apply(lambda t: torch.empty(t.shape, dtype=torch.bfloat16, device="cuda"))
        y = net(torch.empty(shape, dtype=torch.bfloat16, device="cuda"))
        assert y.device.type == "cuda" and y.dtype == torch.bfloat16
        # negative control: a constant left on the CPU is caught (an Add's operand: torch's meta conv kernel does
        # not check devices, so a conv weight would not be)
        add = next(s for s in net._nodes if s.op == "Add" and s.inputs[1] in net._buffer_of)
        key = net._buffer_of[add.inputs[1]]
        net._buffers[key] = torch.empty(net._buffers[key].shape, dtype=torch.bfloat16)
        with pytest.raises(RuntimeError, match="device"):
            net(torch.empty(shape, dtype=torch.bfloat16, device="cuda"))


def test_session_interface_matches_rapidocr() -> None:
    from rapidocr.inference_engine.onnxruntime import OrtInferSession
    from rapidocr.main import RapidOCR

    ort_rec = RapidOCR(params=OCR_PARAMS)._load_rec_model().session
    assert isinstance(ort_rec, OrtInferSession)
    sess = TorchOcrSession(REC, "cpu", torch.bfloat16)
    assert sess.have_key() and sess.get_character_list() == ort_rec.get_character_list()
    assert sess.get_input_names() == ort_rec.get_input_names()
    out = sess(rec_input((60,), 60))
    assert out.dtype == np.float32 and out.shape[0] == 1
    with pytest.raises(ValueError, match="floating-point"):
        TorchOcrSession(REC, "cpu", torch.int64)


# ---------------------------------------------------------------------------------------------------------------------
# the whole OCR through rapidocr's own pre/post-processing


@pytest.fixture(scope="module")
def ort_result():
    from rapidocr import RapidOCR

    return RapidOCR(params=OCR_PARAMS)(np.asarray(render_page()), return_word_box=True)


def test_full_ocr_reads_the_same_as_onnxruntime(ort_result) -> None:
    engine = TorchRapidOCR(params=OCR_PARAMS)
    got = engine(np.asarray(render_page()), return_word_box=True)
    assert "Invoice No: 4711" in ort_result.txts
    assert list(got.txts) == list(ort_result.txts)
    np.testing.assert_allclose(np.asarray(got.boxes), np.asarray(ort_result.boxes), atol=1.0)  # pixels
    np.testing.assert_allclose(got.scores, ort_result.scores, atol=1e-3)
    assert isinstance(engine.text_det.session, TorchOcrSession) and isinstance(engine.text_rec.session, TorchOcrSession)


def test_bfloat16_reads_the_same_text(ort_result, det_pair) -> None:
    engine = TorchRapidOCR(params=OCR_PARAMS, dtype=torch.bfloat16)
    got = engine(np.asarray(render_page()), return_word_box=True)
    assert list(got.txts) == list(ort_result.txts)
    # the weaker bfloat16 tolerance: the detector's text mask agrees with float32 on >= 98% of pixels
    x = det_input(render_page(), 224, 352)
    f32, _ = run_both(det_pair, x)
    bf16 = engine.text_det.session(x)
    assert bf16.dtype == np.float32
    assert ((bf16 > 0.3) == (f32 > 0.3)).mean() >= 0.98


# ---------------------------------------------------------------------------------------------------------------------
# TextReader(backend="torch")


def test_text_reader_torch_backend_reads_the_same_boxes() -> None:
    page = render_page()
    ref = TextReader().read(page)
    reader = TextReader(backend="torch", device="cpu", dtype="float32")
    got = reader.read(page)
    assert isinstance(reader.engine()[0], TorchRapidOCR)  # the detector; lines: PageRecognizer (one call a page)
    assert any(b.text == "4711" for b in ref)  # the key/value split ran on both
    assert [b.text for b in got] == [b.text for b in ref]
    np.testing.assert_allclose([b.box for b in got], [b.box for b in ref], atol=1.0)  # pixels


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "tensorrt"}, "backend must be one of"),
        ({"backend": "torch", "dtype": torch.int64}, "floating-point"),
        ({"backend": "torch", "dtype": "float33"}, "floating-point"),
        ({"device": "cuda"}, "backend='torch' only"),
    ],
)
def test_text_reader_rejects_bad_backend_options(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TextReader(**kwargs)


def test_text_reader_warns_that_bfloat16_misreads() -> None:
    with pytest.warns(UserWarning, match="bfloat16' misreads"):
        TextReader(backend="torch", dtype="bfloat16")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TextReader(backend="torch", dtype="float16")  # float16 and float32 read as onnxruntime does: no warning


def test_chain_fusion_on_the_pp_ocr_graphs(det_proto: onnx.ModelProto, rec_proto: onnx.ModelProto) -> None:
    """The exporter's GELU (5 nodes) and LayerNorm (9 nodes) chains run as one node each, Identity nodes not at all
    (the GPU launches fewer kernels), and the networks' outputs stay within the float32 bound of the unfused ones."""
    for proto, gelus, norms, x in (
        (det_proto, 13, 0, torch.from_numpy(det_input(render_page(), 96, 160))),
        (rec_proto, 13, 5, torch.from_numpy(rec_input((101, 64, 80), 101))),
    ):
        fused, plain = OnnxModule(proto).eval(), OnnxModule(proto, fuse=False).eval()
        ops = [s.op for s in fused._nodes]
        assert (ops.count("Gelu"), ops.count("LayerNormalization"), ops.count("Identity"), ops.count("Erf")) == (
            gelus, norms, 0, 0,
        )  # fmt: skip
        assert len(plain._nodes) - len(fused._nodes) >= 4 * gelus + 8 * norms
        with torch.inference_mode():
            assert_close(fused(x).numpy(), plain(x).numpy(), float32_tolerance(proto))


def chain_model(share: bool) -> onnx.ModelProto:
    """x -> GELU chain -> LayerNorm chain over the last axis -> y (x: (2, 3, 8)); ``share``: the Erf's output is
    also added to y, so the GELU chain's intermediate feeds another node and must not be fused."""
    c = numpy_helper.from_array
    inits = [
        c(np.array(math.sqrt(2), np.float32), "sqrt2"), c(np.array(1.0, np.float32), "one"),
        c(np.array(0.5, np.float32), "half"), c(np.array(2.0, np.float32), "two"),
        c(np.array(1e-5, np.float32), "eps"), c(np.linspace(0.5, 1.5, 8).astype(np.float32), "gamma"),
        c(np.linspace(-0.2, 0.2, 8).astype(np.float32), "beta"),
    ]  # fmt: skip
    n = helper.make_node
    nodes = [
        n("Div", ["x", "sqrt2"], ["d"]), n("Erf", ["d"], ["e"]), n("Add", ["e", "one"], ["a"]),
        n("Mul", ["x", "a"], ["m"]), n("Mul", ["m", "half"], ["g"]),
        n("ReduceMean", ["g"], ["mu"], axes=[-1]), n("Sub", ["g", "mu"], ["s"]), n("Pow", ["s", "two"], ["p"]),
        n("ReduceMean", ["p"], ["var"], axes=[-1]), n("Add", ["var", "eps"], ["ve"]), n("Sqrt", ["ve"], ["sd"]),
        n("Div", ["s", "sd"], ["z"]), n("Mul", ["z", "gamma"], ["zg"]), n("Add", ["zg", "beta"], ["ln"]),
    ]  # fmt: skip
    nodes.append(n("Add", ["ln", "e"], ["y"]) if share else n("Identity", ["ln"], ["y"]))
    graph = helper.make_graph(
        nodes, "chains", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 3, 8))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=10)


@pytest.mark.parametrize("share", [False, True])
def test_fused_chains_equal_onnxruntime_and_shared_intermediates_stay(share: bool) -> None:
    x = np.random.default_rng(3).standard_normal((2, 3, 8)).astype(np.float32) * 3
    model = chain_model(share)
    got, ref = ort_vs_torch(model, x)
    np.testing.assert_allclose(got, ref, rtol=0, atol=64 * U32 * np.abs(ref).max())  # a few roundings of O(1) values
    ops = [s.op for s in OnnxModule(model)._nodes]
    # shared: the GELU chain stays five nodes (its Erf feeds y), the LayerNorm chain is still one node
    assert ops.count("Gelu") == (0 if share else 1) and ops.count("Erf") == (1 if share else 0)
    assert ops.count("LayerNormalization") == 1


# ---------------------------------------------------------------------------------------------------------------------
# the detector as a CUDA graph per page size


def small_page(h: int = 96, w: int = 160) -> np.ndarray:
    """The example invoice resized to (h, w): a real page (no font needed), as the detector's resize hands it over."""
    page = Image.open(Path(__file__).resolve().parents[1] / "src/arr_coc/examples/invoice.jpg").convert("RGB")
    return np.ascontiguousarray(np.asarray(page.resize((w, h)))[:, :, ::-1])  # BGR uint8, as rapidocr's pages


def test_detector_graph_path_equals_the_eager_detector() -> None:
    """The graph bookkeeping with the eager stand-in on the CPU: a page size seen twice is captured, then replayed;
    every map equal to the plain session's, bit for bit."""
    from arr_coc.graphs import ShapeGraphs, eager_capture
    from arr_coc.reading.ocr.torch_backend import TorchDetSession

    plain = TorchDetSession(DET)
    graphed = TorchDetSession(DET, graphs=2)
    assert graphed.graphs.max_graphs == 2 and plain.graphs.max_graphs == 0
    graphed.graphs = ShapeGraphs(graphed._detect, 2, capture=eager_capture, devices=("cpu",))
    pages = [small_page(), small_page(), small_page(64, 96), small_page()]
    for page in pages:
        np.testing.assert_array_equal(graphed(page), plain(page))
    assert graphed.graphs.captured == 1 and graphed.graphs.replays == 2  # the (96, 160) page: captured, replayed


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (a real graph capture)")
def test_cuda_graph_detector_equals_eager() -> None:
    from arr_coc.reading.ocr.torch_backend import TorchDetSession

    plain, graphed = TorchDetSession(DET, "cuda"), TorchDetSession(DET, "cuda", graphs=2)
    page = small_page(736, 544)
    ref = plain(page)
    outs = [graphed(page) for _ in range(3)]
    assert graphed.graphs.captured == 1 and graphed.graphs.replays == 2
    for out in outs:
        np.testing.assert_array_equal(out, ref)


def test_det_graphs_reach_the_detector_and_are_checked() -> None:
    from arr_coc.reading import OcrConfig

    with pytest.raises(ValueError, match="det_graphs"):
        OcrConfig(det_graphs=-1)
    with pytest.raises(ValueError, match="det_graphs"):
        TorchRapidOCR(det_graphs=-1)
    reader = TextReader(backend="torch", det_graphs=3)
    reader.warmup()  # rapidocr loads its detector stage on the first page
    assert reader.engine()[0].text_det.session.graphs.max_graphs == 3


def test_bias_folding_removes_the_adds_and_keeps_the_output(det_proto: onnx.ModelProto) -> None:
    folded, plain = OnnxModule(det_proto).eval(), OnnxModule(det_proto, fold_bias=False).eval()
    assert len(plain._nodes) - len(folded._nodes) == 75  # 75 of the 83 convs carry their bias in a separate Add
    x = torch.from_numpy(det_input(render_page(), 96, 160))
    with torch.inference_mode():
        assert_close(folded(x).numpy(), plain(x).numpy(), float32_tolerance(det_proto))
