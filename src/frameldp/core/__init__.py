"""The mathematics of frameldp: numpy in, numpy out; no dataframe library is imported here."""

from frameldp.core.distribution import Distribution
from frameldp.core.encoding import OTHER, BloomEncoder, Domain
from frameldp.core.estimation import BloomDecoding, FrequencyEstimate
from frameldp.core.mechanisms import (
    BalcerCheu,
    BlockHadamardResponse,
    BloomRappor,
    DuchiMechanism,
    HadamardResponse,
    HybridMechanism,
    LocalHashing,
    Mechanism,
    OptimizedUnaryEncoding,
    PiecewiseMechanism,
    PrefixExtending,
    ProjectiveGeometryResponse,
    RandomizedResponse,
    Rappor,
    SquareWave,
    StochasticRounding,
    SubsetSelection,
    mechanism_from_spec,
)
from frameldp.core.mechanisms.choice import (
    MechanismComparison,
    choose_mechanism,
    compare_mechanisms,
)
from frameldp.core.numeric import Bounds
from frameldp.core.numeric_estimates import Mean
from frameldp.core.randomness import RandomSource, new_memo_key

__all__ = [
    "OTHER",
    "BalcerCheu",
    "BlockHadamardResponse",
    "BloomDecoding",
    "BloomEncoder",
    "BloomRappor",
    "Bounds",
    "Distribution",
    "Domain",
    "DuchiMechanism",
    "FrequencyEstimate",
    "HadamardResponse",
    "HybridMechanism",
    "LocalHashing",
    "Mean",
    "Mechanism",
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
]
