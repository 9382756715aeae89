"""OCR networks on the model's device: rapidocr with its PP-OCR ONNX graphs run by torch instead of onnxruntime.

rapidocr's ``TextDetector`` / ``TextClassifier`` / ``TextRecognizer`` each call ``self.session(batch)`` with a numpy
batch and post-process the numpy result. ``TorchOcrSession`` has that call interface (and ``have_key`` /
``get_character_list``, which read the recogniser's alphabet from the model metadata) and runs the same ``.onnx``
file with ``arr_coc.reading.ocr.onnx_torch.OnnxModule`` on any torch device and dtype. ``TorchRapidOCR`` is a
``RapidOCR`` subclass whose stage objects get a ``TorchOcrSession`` when they are first loaded, so rapidocr's own pre-
and post-processing (resizing, DB box extraction, CTC decoding, word boxes) is reused unchanged, except one step: the
detector's normalisation runs on the device (``DeviceDetPreProcess`` / ``TorchDetSession``: the resized uint8 page is
uploaded and normalised there with rapidocr's own arithmetic, bit for bit, instead of a float32 page built by NumPy on
the host and copied). No rapidocr class is modified: onnxruntime engines in the same process keep working.

Importing this module imports rapidocr (``pip install -e '.[ocr]' in the arr-coc-vis clone``);
``TextReader(backend="torch")`` does so only when its engine is first built.

Example:
    >>> engine = TorchRapidOCR(device="cuda", dtype=torch.bfloat16)       # doctest: +SKIP
    >>> engine("examples/invoice.jpg").txts[:2]                            # doctest: +SKIP
    ('Meridian Works', 'INVOICE')
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rapidocr import RapidOCR
from rapidocr.ch_ppocr_det.utils import DetPreProcess
from rapidocr.inference_engine.base import FileInfo, InferSession

from .onnx_torch import OnnxModule


class TorchOcrSession:
    """Drop-in for rapidocr's ``OrtInferSession``: the same ONNX file, run by ``OnnxModule`` on ``device``/``dtype``.

    Args:
        onnx_path: The ``.onnx`` model file (e.g. rapidocr's ``models/PP-OCRv6_det_small.onnx``).
        device: Where to run (``"cpu"``, ``"cuda"``, ...).
        dtype: Compute dtype (float32, bfloat16, float16); outputs come back as float32 numpy arrays.

    Raises:
        ValueError: ``dtype`` is not a floating-point dtype.
    """

    def __init__(
        self, onnx_path: str | Path, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32
    ) -> None:
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating-point torch dtype (float32, bfloat16, float16), got {dtype}")
        self.onnx_path = Path(onnx_path)
        self.device = torch.device(device)
        self.dtype = dtype
        self.net = OnnxModule(self.onnx_path).to(self.device, self.dtype).eval()

    def run_tensor(self, x: torch.Tensor) -> torch.Tensor:
        """Run on a tensor.

        Args:
            x: The network input, e.g. ``(N, 3, H, W)`` normalised images; moved to the session's device and dtype.

        Returns:
            The network output on the session's device, in its dtype.
        """
        with torch.inference_mode():
            return self.net(x.to(self.device, self.dtype))

    def __call__(self, input_content: np.ndarray) -> np.ndarray:
        """rapidocr's call: ``(N, 3, H, W)`` float32 numpy in, the graph's first output as float32 numpy out."""
        return self.run_tensor(torch.from_numpy(np.ascontiguousarray(input_content))).float().cpu().numpy()

    def get_input_names(self) -> list[str]:
        return [self.net.input_name]

    def get_output_names(self) -> list[str]:
        return list(self.net.output_names)

    def have_key(self, key: str = "character") -> bool:
        return key in self.net.metadata

    def get_character_list(self, key: str = "character") -> list[str]:
        return self.net.metadata[key].splitlines()


class DeviceDetPreProcess(DetPreProcess):
    """rapidocr's detector preprocessing with the normalisation left to the device.

    ``DetPreProcess`` resizes the page (cv2, to multiples of 32), then normalises it in NumPy on the host
    (``(x.astype(float32) * (1 / 255) - mean) / std``, float64 after the mean) and makes a float32 (1, 3, H, W)
    copy: about 10 ms a page, and 4x the uint8 bytes to upload. This one only resizes, by rapidocr's own rule, and
    returns the (H, W, 3) uint8 result; :class:`TorchDetSession` normalises it on its device with the same arithmetic.
    """

    def __call__(self, img: np.ndarray) -> np.ndarray | None:
        return self.resize(img)


class _DevicePreprocessOf:
    """A detector stage's ``get_preprocess`` for :class:`DeviceDetPreProcess`: rapidocr builds a new ``DetPreProcess``
    for every page (about 1 ms of omegaconf look-ups for its mean and std); this one is built once and again only when
    the stage's resize limits change."""

    def __init__(self, stage: Any) -> None:
        self.stage = stage
        self._made: tuple[Any, DeviceDetPreProcess] | None = None

    def __call__(self) -> DeviceDetPreProcess:
        st = self.stage
        key = (st.limit_side_len, st.limit_type)
        if self._made is None or self._made[0] != key:
            self._made = (key, DeviceDetPreProcess(st.limit_side_len, st.limit_type, st.mean, st.std))
        return self._made[1]


class TorchDetSession(TorchOcrSession):
    """The detector's session: takes the resized (H, W, 3) uint8 page (``DeviceDetPreProcess``) and normalises it on
    the device exactly as rapidocr's ``DetPreProcess`` does on the host; a float (N, 3, H, W) input (what rapidocr's
    own preprocessing makes) runs as in :class:`TorchOcrSession`.

    On CUDA the normalisation and the network of a page size run as a CUDA graph (``arr_coc.graphs.ShapeGraphs``:
    captured on the second page of a size, replayed from then on, at most ``graphs`` sizes held, least recently used
    out): the detector is ~200 kernels whose launches cost more host time than their GPU work, and pages of one format
    share a size (the detector sees the page resized to multiples of 32: realdocs-dev's 274 pages make 15 sizes). A
    replay computes what the eager call computes (the same kernels on a copy of the input).

    Args:
        onnx_path, device, dtype: as for :class:`TorchOcrSession`.
        pre: the stage's ``DetPreProcess`` (its ``scale``, ``mean`` and ``std`` are used).
        graphs: page sizes to hold CUDA graphs for (0: none; CPU pages never use them).
    """

    def __init__(
        self,
        onnx_path: str | Path,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        pre: DetPreProcess | None = None,
        graphs: int = 0,
    ) -> None:
        from ...graphs import ShapeGraphs

        super().__init__(onnx_path, device, dtype)
        self._constants(pre if pre is not None else DetPreProcess())
        self.graphs = ShapeGraphs(self._detect, int(graphs))

    def _constants(self, pre: DetPreProcess) -> None:
        # NumPy's arithmetic: a float32 page times the scale as float32, then float64 from the mean on (the mean and
        # std are float64 arrays), cast to float32 at the end
        self._scale = torch.tensor(np.float32(pre.scale), device=self.device)  # () float32
        self._mean = torch.from_numpy(np.asarray(pre.mean, dtype=np.float64)).to(self.device).view(3, 1, 1)
        self._std = torch.from_numpy(np.asarray(pre.std, dtype=np.float64)).to(self.device).view(3, 1, 1)

    def normalise(self, resized: np.ndarray | torch.Tensor) -> torch.Tensor:
        """(H, W, 3) uint8 (on the host, or already on the device) -> (1, 3, H, W) float32 on the device, equal to
        ``DetPreProcess``'s output."""
        x = torch.as_tensor(np.ascontiguousarray(resized) if isinstance(resized, np.ndarray) else resized)
        x = x.to(self.device)  # one upload of the uint8 bytes
        x = (x.float() * self._scale).permute(2, 0, 1)  # (3, H, W) float32
        return ((x.double() - self._mean) / self._std).float().unsqueeze(0)

    def _detect(self, page: torch.Tensor) -> torch.Tensor:
        """The text probability map (1, 1, H, W) of a resized (H, W, 3) uint8 page on the device (what a graph
        records)."""
        return self.run_tensor(self.normalise(page))

    def __call__(self, input_content: np.ndarray) -> np.ndarray:
        if input_content.dtype == np.uint8 and input_content.ndim == 3:  # DeviceDetPreProcess's resized page
            page = torch.from_numpy(np.ascontiguousarray(input_content)).to(self.device)
            with torch.inference_mode():
                return self.graphs(page).float().cpu().numpy()  # eager unless a CUDA graph is on and usable
        return super().__call__(input_content)


def rapidocr_model_path(section: Any) -> Path:
    """The ``.onnx`` file rapidocr loads for one config section (``cfg.Det`` / ``cfg.Cls`` / ``cfg.Rec``), resolved
    as rapidocr's ``OrtInferSession`` does: ``model_path`` if set, else the default model in ``model_root_dir``."""
    if section.get("model_path"):
        return Path(section.model_path)
    info = InferSession.get_model_url(
        FileInfo(
            engine_type=section.engine_type,
            ocr_version=section.ocr_version,
            task_type=section.task_type,
            lang_type=section.lang_type,
            model_type=section.model_type,
        )
    )
    return Path(section.model_root_dir) / Path(info["model_dir"]).name


class TorchRapidOCR(RapidOCR):
    """``rapidocr.RapidOCR`` whose det/cls/rec networks run with torch on ``device`` in ``dtype``.

    Each stage is built by rapidocr as usual (with an onnxruntime session, once, which also resolves and checks the
    model file); its ``session`` is then replaced by a ``TorchOcrSession`` for the same ``.onnx`` file.

    Args:
        config_path: As for ``RapidOCR``.
        params: As for ``RapidOCR`` (dotted keys). The engine type must stay ``onnxruntime`` (the default): the
            ``.onnx`` files are what torch runs.
        device: Torch device for the networks.
        dtype: Torch compute dtype for the networks.
        det_graphs: page sizes the detector holds CUDA graphs for (:class:`TorchDetSession`; 0: none).
    """

    def __init__(
        self,
        config_path: str | None = None,
        params: dict[str, Any] | None = None,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        det_graphs: int = 0,
    ) -> None:
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating-point torch dtype (float32, bfloat16, float16), got {dtype}")
        if det_graphs < 0:
            raise ValueError(f"det_graphs must be >= 0, got {det_graphs}")
        self.torch_device = torch.device(device)
        self.torch_dtype = dtype
        self.det_graphs = int(det_graphs)
        self._torch_lock = threading.Lock()
        super().__init__(config_path=config_path, params=params)
        stages = (self.cfg.Det, self.cfg.Cls, self.cfg.Rec)
        engines = {str(getattr(s.engine_type, "value", s.engine_type)) for s in stages}
        if engines != {"onnxruntime"}:
            raise ValueError(f"TorchRapidOCR runs the ONNX models: engine_type must be onnxruntime, not {engines}")

    def _torchify(self, stage: Any, section: Any, detector: bool = False) -> Any:
        if not isinstance(stage.session, TorchOcrSession):
            with self._torch_lock:
                if not isinstance(stage.session, TorchOcrSession):
                    path = rapidocr_model_path(section)
                    if detector:  # normalised on the device: the stage's preprocessing only resizes
                        pre = stage.get_preprocess()
                        stage.session = TorchDetSession(path, self.torch_device, self.torch_dtype, pre, self.det_graphs)
                        stage.get_preprocess = _DevicePreprocessOf(stage)  # this engine's own stage object
                    else:
                        stage.session = TorchOcrSession(path, self.torch_device, self.torch_dtype)
        return stage

    def _load_det_model(self) -> Any:
        return self._torchify(super()._load_det_model(), self.cfg.Det, detector=True)

    def _load_cls_model(self) -> Any:
        return self._torchify(super()._load_cls_model(), self.cfg.Cls)

    def _load_rec_model(self) -> Any:
        return self._torchify(super()._load_rec_model(), self.cfg.Rec)
