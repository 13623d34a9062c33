"""Privacy accounting: guarantees, events, composition, conversions and the budget ledger.

numpy / scipy / the standard library only (no dataframe import).
"""

from frameldp.accounting.accountant import Accountant, Conversion, DeltaExplanation, Explanation
from frameldp.accounting.events import (
    BinomialCountsEvent,
    BlockHadamardResponseEvent,
    BloomRapporEvent,
    GaussianEvent,
    HadamardResponseEvent,
    LaplaceEvent,
    LocalHashingEvent,
    MemoizedEvent,
    OptimizedUnaryEncodingEvent,
    PiecewiseDensityEvent,
    PrivacyEvent,
    ProjectiveGeometryEvent,
    PureDP,
    RandomizedResponseEvent,
    RapporEvent,
    SampledEvent,
    ShuffleEvent,
    SubsetSelectionEvent,
    event_from_dict,
)
from frameldp.accounting.guarantee import PrivacyGuarantee, compose, per_person
from frameldp.accounting.ledger import BudgetStatus, Ledger, Spend
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.accounting.shuffling import amplify_by_shuffling

__all__ = [
    "Accountant",
    "BinomialCountsEvent",
    "BlockHadamardResponseEvent",
    "BloomRapporEvent",
    "BudgetStatus",
    "Conversion",
    "DeltaExplanation",
    "Explanation",
    "GaussianEvent",
    "HadamardResponseEvent",
    "LaplaceEvent",
    "Ledger",
    "LocalHashingEvent",
    "MemoizedEvent",
    "OptimizedUnaryEncodingEvent",
    "PiecewiseDensityEvent",
    "PrivacyEvent",
    "PrivacyGuarantee",
    "PrivacyLossDistribution",
    "ProjectiveGeometryEvent",
    "PureDP",
    "RandomizedResponseEvent",
    "RapporEvent",
    "SampledEvent",
    "ShuffleEvent",
    "Spend",
    "SubsetSelectionEvent",
    "amplify_by_shuffling",
    "compose",
    "event_from_dict",
    "per_person",
]
