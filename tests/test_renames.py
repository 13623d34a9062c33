"""Public names renamed by issue 14 (``num_buckets`` for ``k``, ``hash_scheme`` for ``hash``)
keep working under their earlier names with a ``DeprecationWarning`` at the caller's line, and
what earlier releases stored (ledgers, files, report types) reads back silently and unchanged.
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import pandas as pd
import pytest

import frameldp
from _releases import assert_frame_equal
from frameldp.accounting import PrivacyLossDistribution, event_from_dict
from frameldp.core.encoding import BloomEncoder

DOMAIN = ("AA", "DL", "UA", "WN")


def _renamed(old: str, new: str) -> pytest.WarningsChecker:
    return pytest.warns(DeprecationWarning, match=f"{old} is renamed {new}")


def test_randomized_response_event_takes_k_as_num_buckets() -> None:
    with _renamed("k", "num_buckets") as caught:
        event = frameldp.RandomizedResponseEvent(1.0, k=4)
    assert caught[0].filename == __file__  # the warning names the caller's line
    assert event == frameldp.RandomizedResponseEvent(1.0, num_buckets=4)
    assert event.parameters() == {"epsilon": 1.0, "num_buckets": 4}
    with _renamed("k", "num_buckets"):
        assert event.k == 4
    for explicit in (3, 2):  # 2 is the default, but given: a caller's own value is kept
        with (
            pytest.raises(frameldp.ParameterError, match="disagree") as refused,
            _renamed("k", "num_buckets"),
        ):
            frameldp.RandomizedResponseEvent(1.0, explicit, k=50)
        assert refused.value.parameter == "num_buckets"
    with pytest.raises(frameldp.ParameterError, match="disagree"), _renamed("k", "num_buckets"):
        PrivacyLossDistribution.randomized_response(1.0, 2, k=50)
    with pytest.raises(frameldp.ParameterError, match="num_buckets must be an integer >= 2"):
        PrivacyLossDistribution.randomized_response(1.0, True)


def test_stored_events_of_earlier_releases_read_back_silently() -> None:
    stored = {"kind": "randomized_response", "epsilon": 1.5, "k": 7}  # as a ledger holds it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        event = event_from_dict(stored)
        guarantee = frameldp.PrivacyGuarantee.from_json(
            json.dumps(
                {
                    "epsilon": 1.5,
                    "mechanism": "randomized_response",
                    "parameters": {"k": 7},
                    "events": [{"event": stored, "count": 2}],
                }
            )
        )
    assert event == frameldp.RandomizedResponseEvent(1.5, 7)
    assert guarantee.accountant.entries == ((event, 2),)
    # ... and are stored under the earlier name still: a ledger shared with a process of an
    # earlier release stays readable by it.
    assert event.to_dict() == stored
    with pytest.raises(frameldp.ParameterError, match="given twice"):
        event_from_dict({**stored, "num_buckets": 7})


def test_mechanisms_call_their_domain_size_num_buckets() -> None:
    krr = frameldp.RandomizedResponse(1.0, domain=DOMAIN)
    shuffler = frameldp.BalcerCheu(1.0, 1e-6, n=10_000, domain=DOMAIN)
    assert krr.num_buckets == shuffler.num_buckets == 4
    assert krr.privacy.parameters["num_buckets"] == 4
    for mechanism in (krr, shuffler):
        with _renamed("k", "num_buckets"):
            assert mechanism.k == 4
    with _renamed("k", "num_buckets"):
        old = PrivacyLossDistribution.randomized_response(1.0, k=4, count=3)
    assert old.delta(0.5) == PrivacyLossDistribution.randomized_response(1.0, 4, 3).delta(0.5)


def test_bloom_takes_hash_as_hash_scheme() -> None:
    with _renamed("hash", "hash_scheme"):
        old = frameldp.BloomRappor(f=0.5, p=0.5, q=0.75, num_bits=16, hash="rappor")
    new = frameldp.BloomRappor(f=0.5, p=0.5, q=0.75, num_bits=16, hash_scheme="rappor")
    assert old == new
    assert old.encoder == new.encoder
    with _renamed("hash", "hash_scheme"):
        assert new.hash == "rappor"
    with _renamed("hash", "hash_scheme"):
        assert BloomEncoder(16, hash="rappor") == BloomEncoder(16, hash_scheme="rappor")
    for explicit, other in (("rappor", "fast"), ("fast", "rappor")):  # "fast" is the default
        with (
            pytest.raises(frameldp.ParameterError, match="disagree"),
            _renamed("hash", "hash_scheme"),
        ):
            frameldp.BloomRappor(1.0, epsilon_infinity=2.0, hash_scheme=explicit, hash=other)


def test_bloom_mechanisms_are_replaced_field_by_field() -> None:
    fast = frameldp.BloomRappor(f=0.5, p=0.5, q=0.75, num_bits=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reference = dataclasses.replace(fast, hash_scheme="rappor")
        back = dataclasses.replace(reference, hash_scheme="fast")
        encoder = dataclasses.replace(BloomEncoder(16), hash_scheme="rappor")
    assert (reference.hash_scheme, reference.encoder.hash_scheme) == ("rappor", "rappor")
    assert back == fast
    assert encoder.hash_scheme == "rappor"
    assert type(fast.hash_scheme) is str  # the default marker never leaves the constructor


def test_the_spec_keeps_its_key_so_reports_for_a_key_do_not_change() -> None:
    """``"hash"`` is the spec's key in files and report types of earlier releases and is part
    of the stream fingerprint: renaming it would change every Bloom report drawn for a key."""
    mechanism = frameldp.BloomRappor(1.0, epsilon_infinity=2.0, hash_scheme="rappor")
    spec = mechanism.to_spec()
    assert spec["hash"] == "rappor"
    assert "hash_scheme" not in spec
    assert frameldp.mechanism_from_spec(spec) == mechanism
    renamed_key = {k: v for k, v in spec.items() if k != "hash"} | {"hash_scheme": "rappor"}
    assert frameldp.mechanism_from_spec(renamed_key) == mechanism  # the public name reads too
    with pytest.raises(frameldp.ParameterError, match="disagree"):
        frameldp.mechanism_from_spec({**spec, "hash_scheme": "fast"})


def test_the_rappor_shortcut_takes_hash_as_hash_scheme() -> None:
    frame = pd.DataFrame({"url": [f"u{i % 5}" for i in range(50)]})
    common = {"encoding": "bloom", "epsilon": 1.0, "epsilon_infinity": 2.0, "seed": 3}
    with _renamed("hash", "hash_scheme"):
        old = frame.ldp.rappor("url", hash="rappor", **common)
    new = frame.ldp.rappor("url", hash_scheme="rappor", **common)
    assert_frame_equal(old, new)
    assert new.ldp.mechanisms["url"].hash_scheme == "rappor"
    with (
        pytest.raises(frameldp.ParameterError, match=r"df\.ldp\.rappor: hash_scheme='fast' and"),
        _renamed("hash", "hash_scheme"),
    ):
        frame.ldp.rappor("url", hash_scheme="fast", hash="rappor", **common)
