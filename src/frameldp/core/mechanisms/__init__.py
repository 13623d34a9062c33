"""Local randomizers, one module each, all behind one protocol (:mod:`.protocol`)."""

from frameldp.core.mechanisms._memo import UserDigests, shared_user_digests
from frameldp.core.mechanisms._numeric import MeanMechanism, NumericMechanism
from frameldp.core.mechanisms.balcer_cheu import BalcerCheu
from frameldp.core.mechanisms.block_hadamard_response import BlockHadamardResponse
from frameldp.core.mechanisms.bloom_rappor import BloomRappor
from frameldp.core.mechanisms.duchi import DuchiMechanism
from frameldp.core.mechanisms.hadamard_response import HadamardResponse
from frameldp.core.mechanisms.hybrid import HybridMechanism
from frameldp.core.mechanisms.local_hashing import LocalHashing
from frameldp.core.mechanisms.optimized_unary_encoding import OptimizedUnaryEncoding
from frameldp.core.mechanisms.piecewise import PiecewiseMechanism
from frameldp.core.mechanisms.prefix_extending import PrefixExtending
from frameldp.core.mechanisms.projective_geometry import ProjectiveGeometryResponse
from frameldp.core.mechanisms.protocol import (
    OPEN_DOMAIN,
    Capability,
    Decoder,
    Discoverer,
    Estimate,
    Estimator,
    FrequencyEstimation,
    FrequencyEstimator,
    FrequencyOracle,
    GroupEstimator,
    GroupStatistics,
    Mechanism,
    Memoizing,
    OracleCosts,
    Randomizer,
    Statistic,
    memoizes,
)
from frameldp.core.mechanisms.randomized_response import RandomizedResponse
from frameldp.core.mechanisms.rappor import Rappor
from frameldp.core.mechanisms.registry import (
    is_mechanism,
    mechanism_class,
    mechanism_from_spec,
    mechanism_names,
)
from frameldp.core.mechanisms.square_wave import SquareWave
from frameldp.core.mechanisms.stochastic_rounding import StochasticRounding
from frameldp.core.mechanisms.subset_selection import SubsetSelection

__all__ = [
    "OPEN_DOMAIN",
    "BalcerCheu",
    "BlockHadamardResponse",
    "BloomRappor",
    "Capability",
    "Decoder",
    "Discoverer",
    "DuchiMechanism",
    "Estimate",
    "Estimator",
    "FrequencyEstimation",
    "FrequencyEstimator",
    "FrequencyOracle",
    "GroupEstimator",
    "GroupStatistics",
    "HadamardResponse",
    "HybridMechanism",
    "LocalHashing",
    "MeanMechanism",
    "Mechanism",
    "Memoizing",
    "NumericMechanism",
    "OptimizedUnaryEncoding",
    "OracleCosts",
    "PiecewiseMechanism",
    "PrefixExtending",
    "ProjectiveGeometryResponse",
    "RandomizedResponse",
    "Randomizer",
    "Rappor",
    "SquareWave",
    "Statistic",
    "StochasticRounding",
    "SubsetSelection",
    "UserDigests",
    "is_mechanism",
    "mechanism_class",
    "mechanism_from_spec",
    "mechanism_names",
    "memoizes",
    "shared_user_digests",
]
