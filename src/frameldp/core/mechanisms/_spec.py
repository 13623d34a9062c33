"""Mechanism specs: every mechanism serializes to a JSON object and back.

Specs are what a stored report file carries (Parquet key-value metadata, frame attrs), so that
reports are self-describing: the spec alone determines the estimator and the guarantee. A
spec's canonical JSON names it (:func:`fingerprint`), which separates the noise streams of
different mechanisms.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "fingerprint"]


def canonical_json(spec: dict[str, Any]) -> str:
    """The spec as compact, key-sorted JSON (stable across runs)."""
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(spec: dict[str, Any]) -> str:
    """SHA-256 of the canonical spec: separates the noise streams of different mechanisms."""
    return hashlib.sha256(canonical_json(spec).encode("utf-8")).hexdigest()
