"""Moved to ``arr_coc.reading.onnx_torch`` (the text path lives in one package).

This name stays an alias of that module for code that imports it from here.
"""

import sys

from .reading import onnx_torch as _moved

sys.modules[__name__] = _moved
