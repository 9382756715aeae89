"""Moved to ``arr_coc.reading.structure`` (the text path lives in one package).

This name stays an alias of that module for code that imports it from here.
"""

import sys

from .reading import structure as _moved

sys.modules[__name__] = _moved
