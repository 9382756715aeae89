"""Moved: the document generator ships inside the package, as :mod:`arr_coc.evaluation.docgen`, because
``arr-coc eval --task docgen`` draws its documents with it in an installed wheel too.

This name stays so that ``from benchmarks import docgen`` (the benchmarks, the tests, ``examples/make_examples.py``)
keeps working: it IS that module (the same object, private helpers and all), not a copy.
"""

import sys

from arr_coc.evaluation import docgen as _docgen

sys.modules[__name__] = _docgen
