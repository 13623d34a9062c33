"""The mathematics of frameldp: numpy in, numpy out; no dataframe library is imported here."""

from frameldp.core.encoding import OTHER, Domain
from frameldp.core.estimation import FrequencyEstimate
from frameldp.core.mechanisms import Mechanism, RandomizedResponse, Rappor, mechanism_from_spec
from frameldp.core.randomness import RandomSource

__all__ = [
    "OTHER",
    "Domain",
    "FrequencyEstimate",
    "Mechanism",
    "RandomSource",
    "RandomizedResponse",
    "Rappor",
    "mechanism_from_spec",
]
