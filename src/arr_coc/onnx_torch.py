"""Moved to ``arr_coc.reading.onnx_torch`` (the text path lives in one package); this name stays an alias of that module."""

import sys

from .reading import onnx_torch as _moved

sys.modules[__name__] = _moved
