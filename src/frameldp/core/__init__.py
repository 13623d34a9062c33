"""The mathematics of frameldp: numpy in, numpy out; no dataframe library is imported here."""

from frameldp.core.encoding import OTHER, BloomEncoder, Domain
from frameldp.core.estimation import BloomDecoding, FrequencyEstimate
from frameldp.core.mechanisms import (
    BalcerCheu,
    BloomRappor,
    HadamardResponse,
    LocalHashing,
    Mechanism,
    OptimizedUnaryEncoding,
    PrefixExtending,
    RandomizedResponse,
    Rappor,
    SubsetSelection,
    mechanism_from_spec,
)
from frameldp.core.mechanisms.choice import (
    MechanismComparison,
    choose_mechanism,
    compare_mechanisms,
)
from frameldp.core.randomness import RandomSource

__all__ = [
    "OTHER",
    "BalcerCheu",
    "BloomDecoding",
    "BloomEncoder",
    "BloomRappor",
    "Domain",
    "FrequencyEstimate",
    "HadamardResponse",
    "LocalHashing",
    "Mechanism",
    "MechanismComparison",
    "OptimizedUnaryEncoding",
    "PrefixExtending",
    "RandomSource",
    "RandomizedResponse",
    "Rappor",
    "SubsetSelection",
    "choose_mechanism",
    "compare_mechanisms",
    "mechanism_from_spec",
]
