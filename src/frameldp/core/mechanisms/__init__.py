"""Local randomizers, one module each, all behind one protocol (:mod:`.protocol`)."""

from frameldp.core.mechanisms._spec import (
    is_mechanism,
    mechanism_class,
    mechanism_from_spec,
    mechanism_names,
)
from frameldp.core.mechanisms.balcer_cheu import BalcerCheu
from frameldp.core.mechanisms.bloom_rappor import BloomRappor
from frameldp.core.mechanisms.protocol import (
    Capability,
    Decoder,
    Mechanism,
    Memoizing,
    Statistic,
)
from frameldp.core.mechanisms.randomized_response import RandomizedResponse
from frameldp.core.mechanisms.rappor import Rappor

__all__ = [
    "BalcerCheu",
    "BloomRappor",
    "Capability",
    "Decoder",
    "Mechanism",
    "Memoizing",
    "RandomizedResponse",
    "Rappor",
    "Statistic",
    "is_mechanism",
    "mechanism_class",
    "mechanism_from_spec",
    "mechanism_names",
]
