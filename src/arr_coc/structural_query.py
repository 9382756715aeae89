"""Moved to ``arr_coc.reading.structural_query`` (the text path lives in one package).

This name stays an alias of that module for code that imports it from here.
"""

import sys

from .reading import structural_query as _moved

sys.modules[__name__] = _moved
