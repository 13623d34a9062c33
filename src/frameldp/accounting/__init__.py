"""Privacy accounting: guarantees of mechanisms and their composition (numpy / scipy only)."""

from frameldp.accounting.guarantee import PrivacyGuarantee, compose

__all__ = ["PrivacyGuarantee", "compose"]
