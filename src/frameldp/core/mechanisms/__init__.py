"""Local randomizers, one module each, all behind one protocol (:mod:`.protocol`)."""

from frameldp.core.mechanisms._spec import (
    is_mechanism,
    mechanism_class,
    mechanism_from_spec,
    mechanism_names,
)
from frameldp.core.mechanisms.balcer_cheu import BalcerCheu
from frameldp.core.mechanisms.bloom_rappor import BloomRappor
from frameldp.core.mechanisms.hadamard_response import HadamardResponse
from frameldp.core.mechanisms.local_hashing import LocalHashing
from frameldp.core.mechanisms.optimized_unary_encoding import OptimizedUnaryEncoding
from frameldp.core.mechanisms.protocol import (
    Capability,
    Decoder,
    FrequencyOracle,
    Mechanism,
    Memoizing,
    Statistic,
)
from frameldp.core.mechanisms.randomized_response import RandomizedResponse
from frameldp.core.mechanisms.rappor import Rappor
from frameldp.core.mechanisms.subset_selection import SubsetSelection

__all__ = [
    "BalcerCheu",
    "BloomRappor",
    "Capability",
    "Decoder",
    "FrequencyOracle",
    "HadamardResponse",
    "LocalHashing",
    "Mechanism",
    "Memoizing",
    "OptimizedUnaryEncoding",
    "RandomizedResponse",
    "Rappor",
    "Statistic",
    "SubsetSelection",
    "is_mechanism",
    "mechanism_class",
    "mechanism_from_spec",
    "mechanism_names",
]
