"""Results: debiased tables and their comparisons, built in pandas or polars.

A result holds its estimate, its mechanism and its privacy guarantee; it imports nothing from
the engines that computed it (:mod:`frameldp.frames`), which import it. The estimate's type
picks the result type (:func:`result_of`; a new estimate type registers its own with
:func:`register_result`).
"""

from frameldp.results.build import ResultContext, register_result, result_of, unregister_result
from frameldp.results.comparison import Comparison
from frameldp.results.table import FrequencyTable, TableGroup

__all__ = [
    "Comparison",
    "FrequencyTable",
    "ResultContext",
    "TableGroup",
    "register_result",
    "result_of",
    "unregister_result",
]
