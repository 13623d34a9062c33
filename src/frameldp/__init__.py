"""frameldp: local differential privacy for dataframe columns.

Importing frameldp registers the ``.ldp`` accessor on pandas DataFrame and Series and, when
polars is installed, on polars DataFrame, LazyFrame and Expr.

>>> import pandas as pd, frameldp
>>> df = pd.DataFrame({"carrier": ["AA", "DL", "UA", "DL"] * 250})
>>> reports = df.ldp.krr("carrier", epsilon=2.0, domain=["AA", "DL", "UA"], seed=1)
>>> table = reports.ldp.debias("carrier")
>>> list(table.frame.columns)
['category', 'count', 'frequency', 'std_error', 'ci_low', 'ci_high']
"""

import importlib
from types import ModuleType

from frameldp import errors
from frameldp.accounting import (
    Accountant,
    BinomialCountsEvent,
    BloomRapporEvent,
    GaussianEvent,
    LaplaceEvent,
    Ledger,
    PrivacyGuarantee,
    PureDP,
    RandomizedResponseEvent,
    RapporEvent,
    ShuffleEvent,
    amplify_by_shuffling,
    compose,
)
from frameldp.core import (
    OTHER,
    BalcerCheu,
    BloomDecoding,
    BloomEncoder,
    BloomRappor,
    Domain,
    FrequencyEstimate,
    RandomizedResponse,
    RandomSource,
    Rappor,
)
from frameldp.core.mechanisms import mechanism_from_spec
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
    ValidationError,
)
from frameldp.frames import FrequencyTable, register_accessors

__version__ = "0.1.0"

__all__ = [
    "OTHER",
    "Accountant",
    "BalcerCheu",
    "BinomialCountsEvent",
    "BloomDecoding",
    "BloomEncoder",
    "BloomRappor",
    "BloomRapporEvent",
    "BudgetExceededError",
    "Domain",
    "DomainError",
    "DomainInferenceWarning",
    "FrameLDPError",
    "FrameLDPWarning",
    "FrequencyEstimate",
    "FrequencyTable",
    "GaussianEvent",
    "InsecureSeedWarning",
    "LaplaceEvent",
    "Ledger",
    "LedgerError",
    "MechanismNotFoundError",
    "NoiseReuseError",
    "ParameterError",
    "PrivacyGuarantee",
    "PureDP",
    "RandomSource",
    "RandomizedResponse",
    "RandomizedResponseEvent",
    "Rappor",
    "RapporEvent",
    "ShuffleEvent",
    "UnknownBudgetError",
    "ValidationError",
    "__version__",
    "amplify_by_shuffling",
    "compose",
    "errors",
    "io",
    "mechanism_from_spec",
]

register_accessors()


def __getattr__(name: str) -> ModuleType:
    # frameldp.io reads and writes pandas frames: imported on first use, so that the core stays
    # importable without any dataframe library.
    if name == "io":
        return importlib.import_module("frameldp.io")
    raise AttributeError(f"module 'frameldp' has no attribute {name!r}")
