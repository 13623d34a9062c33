"""frameldp: local differential privacy for dataframe columns.

Importing frameldp registers the ``.ldp`` accessor on pandas DataFrame and Series and on polars
DataFrame, LazyFrame and Expr and Dask DataFrame: at once for a library already imported, else
when the program imports it (:mod:`frameldp.frames`). The names below are imported on first use,
so ``import frameldp`` (and ``frameldp --help``) stays light.

>>> import pandas as pd, frameldp
>>> df = pd.DataFrame({"carrier": ["AA", "DL", "UA", "DL"] * 250})
>>> reports = df.ldp.krr("carrier", epsilon=2.0, domain=["AA", "DL", "UA"], seed=1)
>>> table = reports.ldp.debias("carrier")
>>> list(table.frame.columns)
['category', 'count', 'frequency', 'std_error', 'ci_low', 'ci_high']
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from frameldp import errors
from frameldp.errors import (
    BudgetExceededError,
    DomainError,
    DomainInferenceWarning,
    FrameLDPError,
    FrameLDPWarning,
    InsecureSeedWarning,
    LedgerError,
    MechanismNotFoundError,
    NoiseReuseError,
    ParameterError,
    UnknownBudgetError,
    UnknownValuesWarning,
    ValidationError,
)
from frameldp.frames import register_accessors

if TYPE_CHECKING:
    from frameldp import io, plot
    from frameldp.accounting import (
        Accountant,
        BinomialCountsEvent,
        BlockHadamardResponseEvent,
        BloomRapporEvent,
        GaussianEvent,
        HadamardResponseEvent,
        LaplaceEvent,
        Ledger,
        LocalHashingEvent,
        MemoizedEvent,
        OptimizedUnaryEncodingEvent,
        PiecewiseDensityEvent,
        PrivacyGuarantee,
        ProjectiveGeometryEvent,
        PureDP,
        RandomizedResponseEvent,
        RapporEvent,
        SampledEvent,
        ShuffleEvent,
        SubsetSelectionEvent,
        amplify_by_shuffling,
        compose,
    )
    from frameldp.core import (
        OTHER,
        BalcerCheu,
        BlockHadamardResponse,
        BloomDecoding,
        BloomEncoder,
        BloomRappor,
        Domain,
        DuchiMechanism,
        FrequencyEstimate,
        HadamardResponse,
        HybridMechanism,
        LocalHashing,
        MechanismComparison,
        OptimizedUnaryEncoding,
        PiecewiseMechanism,
        PrefixExtending,
        ProjectiveGeometryResponse,
        RandomizedResponse,
        RandomSource,
        Rappor,
        SquareWave,
        StochasticRounding,
        SubsetSelection,
        choose_mechanism,
        compare_mechanisms,
        mechanism_from_spec,
        new_memo_key,
    )
    from frameldp.core.joint import product_domain
    from frameldp.core.parallel import set_threads, threads
    from frameldp.frames.methods import ldp
    from frameldp.frames.planner import Plan, plan
    from frameldp.frames.releases import concat_releases
    from frameldp.results.comparison import Comparison
    from frameldp.results.distribution import DistributionTable
    from frameldp.results.mean import MeanEstimate
    from frameldp.results.table import FrequencyTable

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    **dict.fromkeys(
        [
            "Accountant",
            "BinomialCountsEvent",
            "BlockHadamardResponseEvent",
            "BloomRapporEvent",
            "GaussianEvent",
            "HadamardResponseEvent",
            "LaplaceEvent",
            "Ledger",
            "LocalHashingEvent",
            "MemoizedEvent",
            "OptimizedUnaryEncodingEvent",
            "PiecewiseDensityEvent",
            "PrivacyGuarantee",
            "ProjectiveGeometryEvent",
            "PureDP",
            "RandomizedResponseEvent",
            "RapporEvent",
            "SampledEvent",
            "ShuffleEvent",
            "SubsetSelectionEvent",
            "amplify_by_shuffling",
            "compose",
        ],
        "frameldp.accounting",
    ),
    **dict.fromkeys(
        [
            "OTHER",
            "BalcerCheu",
            "BlockHadamardResponse",
            "BloomDecoding",
            "BloomEncoder",
            "BloomRappor",
            "Domain",
            "DuchiMechanism",
            "FrequencyEstimate",
            "HadamardResponse",
            "HybridMechanism",
            "LocalHashing",
            "MechanismComparison",
            "OptimizedUnaryEncoding",
            "PiecewiseMechanism",
            "PrefixExtending",
            "ProjectiveGeometryResponse",
            "RandomSource",
            "RandomizedResponse",
            "Rappor",
            "SquareWave",
            "StochasticRounding",
            "SubsetSelection",
            "choose_mechanism",
            "compare_mechanisms",
            "mechanism_from_spec",
            "new_memo_key",
        ],
        "frameldp.core",
    ),
    "FrequencyTable": "frameldp.results.table",
    "MeanEstimate": "frameldp.results.mean",
    "DistributionTable": "frameldp.results.distribution",
    "concat_releases": "frameldp.frames.releases",
    "Comparison": "frameldp.results.comparison",
    "ldp": "frameldp.frames.methods",
    "Plan": "frameldp.frames.planner",
    "plan": "frameldp.frames.planner",
    "product_domain": "frameldp.core.joint",
    "set_threads": "frameldp.core.parallel",
    "threads": "frameldp.core.parallel",
}
"""Public name -> the module that defines it (imported when the name is first read)."""

__all__ = [
    "OTHER",
    "Accountant",
    "BalcerCheu",
    "BinomialCountsEvent",
    "BlockHadamardResponse",
    "BlockHadamardResponseEvent",
    "BloomDecoding",
    "BloomEncoder",
    "BloomRappor",
    "BloomRapporEvent",
    "BudgetExceededError",
    "Comparison",
    "DistributionTable",
    "Domain",
    "DomainError",
    "DomainInferenceWarning",
    "DuchiMechanism",
    "FrameLDPError",
    "FrameLDPWarning",
    "FrequencyEstimate",
    "FrequencyTable",
    "GaussianEvent",
    "HadamardResponse",
    "HadamardResponseEvent",
    "HybridMechanism",
    "InsecureSeedWarning",
    "LaplaceEvent",
    "Ledger",
    "LedgerError",
    "LocalHashing",
    "LocalHashingEvent",
    "MeanEstimate",
    "MechanismComparison",
    "MechanismNotFoundError",
    "MemoizedEvent",
    "NoiseReuseError",
    "OptimizedUnaryEncoding",
    "OptimizedUnaryEncodingEvent",
    "ParameterError",
    "PiecewiseDensityEvent",
    "PiecewiseMechanism",
    "Plan",
    "PrefixExtending",
    "PrivacyGuarantee",
    "ProjectiveGeometryEvent",
    "ProjectiveGeometryResponse",
    "PureDP",
    "RandomSource",
    "RandomizedResponse",
    "RandomizedResponseEvent",
    "Rappor",
    "RapporEvent",
    "SampledEvent",
    "ShuffleEvent",
    "SquareWave",
    "StochasticRounding",
    "SubsetSelection",
    "SubsetSelectionEvent",
    "UnknownBudgetError",
    "UnknownValuesWarning",
    "ValidationError",
    "__version__",
    "amplify_by_shuffling",
    "choose_mechanism",
    "compare_mechanisms",
    "compose",
    "concat_releases",
    "errors",
    "io",
    "ldp",
    "mechanism_from_spec",
    "new_memo_key",
    "plan",
    "plot",
    "product_domain",
    "set_threads",
    "threads",
]

register_accessors()


def __getattr__(name: str) -> Any:
    # frameldp.io (pandas) and frameldp.plot (matplotlib): imported on first use, as every name.
    if name in ("io", "plot"):  # modules: frameldp.plot.plot_frequencies(...) works directly
        return importlib.import_module(f"frameldp.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'frameldp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later reads find it directly
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
