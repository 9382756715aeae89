"""The OCR engine: page image -> ``TextBox`` es (text + box in original pixels), each page read once.

    reader.py         ``TextReader`` (detection, line crops, recognition, colon splitting), ``TextBox``,
                      ``ReadResult``, ``OcrCache`` (pages keyed by a hash of their pixels), ``to_rgb_pil``
    recognition.py    ``LineRecognizer``: PP-OCR's CTC line recogniser (Latin head, width-sorted batches) on
                      onnxruntime or any callable runtime
    lines.py          ``PageRecognizer``: every line of a page cut with one ``grid_sample``, recognised in one call
                      per width group (at most two) and CTC-decoded with one copy back, on a torch device
                      (``backend="torch"``)
    detection.py      ``LeanDBPostProcess``: rapidocr's DB box extraction with plain Python numbers a box, the same
                      boxes (imports rapidocr; loaded when a detector is built)
    onnx_torch.py     ``OnnxModule``: an ONNX graph of the PP-OCR op set run by torch on any device and dtype
    onnx_ops.py       the ONNX ops of that set, one small torch function each (``OP_BUILDERS``)
    torch_backend.py  ``TorchOcrSession`` / ``TorchRapidOCR``: rapidocr with its networks run by ``OnnxModule``
                      (imports rapidocr and torch; loaded only by ``TextReader(backend="torch")``)

Depends on ``arr_coc.reading.config`` and ``arr_coc.reading.errors`` only; nothing here knows about queries.
"""

from .reader import OcrCache, ReadResult, TextBox, TextReader, split_after_colons, to_rgb_pil
from .recognition import LineRecognizer, LineText

__all__ = [
    "LineRecognizer",
    "LineText",
    "OcrCache",
    "ReadResult",
    "TextBox",
    "TextReader",
    "split_after_colons",
    "to_rgb_pil",
]
