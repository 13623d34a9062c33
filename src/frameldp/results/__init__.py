"""Results: debiased tables and their comparisons, built in pandas or polars.

A result holds its estimate, its mechanism and its privacy guarantee; it imports nothing from
the engines that computed it (:mod:`frameldp.frames`), which import it.
"""

from frameldp.results.comparison import Comparison
from frameldp.results.table import FrequencyTable, TableGroup

__all__ = ["Comparison", "FrequencyTable", "TableGroup"]
