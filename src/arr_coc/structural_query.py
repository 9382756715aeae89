"""Moved to ``arr_coc.reading.structural_query`` (the text path lives in one package); this name stays an alias of that module."""

import sys

from .reading import structural_query as _moved

sys.modules[__name__] = _moved
