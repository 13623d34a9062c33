"""Local randomizers: each a frozen dataclass with ``randomize``, ``estimate`` and ``privacy``."""

from frameldp.core.mechanisms._spec import Mechanism, mechanism_from_spec
from frameldp.core.mechanisms.balcer_cheu import BalcerCheu
from frameldp.core.mechanisms.bloom_rappor import BloomRappor
from frameldp.core.mechanisms.randomized_response import RandomizedResponse
from frameldp.core.mechanisms.rappor import Rappor

__all__ = [
    "BalcerCheu",
    "BloomRappor",
    "Mechanism",
    "RandomizedResponse",
    "Rappor",
    "mechanism_from_spec",
]
