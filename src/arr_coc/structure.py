"""Moved to ``arr_coc.reading.structure`` (the text path lives in one package); this name stays an alias of that module."""

import sys

from .reading import structure as _moved

sys.modules[__name__] = _moved
