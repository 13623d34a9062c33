"""The mathematics of frameldp: numpy in, numpy out; no dataframe library is imported here."""

from frameldp.core.encoding import OTHER, BloomEncoder, Domain
from frameldp.core.estimation import BloomDecoding, FrequencyEstimate
from frameldp.core.mechanisms import (
    BalcerCheu,
    BloomRappor,
    Mechanism,
    RandomizedResponse,
    Rappor,
    mechanism_from_spec,
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
    "Mechanism",
    "RandomSource",
    "RandomizedResponse",
    "Rappor",
    "mechanism_from_spec",
]
