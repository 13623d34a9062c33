"""Files of the reference RAPPOR client (google/rappor): ``frameldp.io``.

The reference client is emulated here in pure Python, from ``client/python/rappor.py``
(``get_bloom_bits``, ``Encoder._internal_encode`` and ``SimpleRandom``): its reports must decode
with frameldp. frameldp's own reports survive a write / read round trip bit for bit, the bit order
of the report strings is checked by hand, and malformed files raise frameldp errors naming the
file and the row; writes are atomic.
"""

from __future__ import annotations

import csv
import hashlib
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from scipy.stats import norm

import frameldp
from _stats import P_FAIL  # the one false-failure probability of the suite
from frameldp.io import (
    read_rappor_params,
    read_rappor_reports,
    write_rappor_params,
    write_rappor_reports,
)

# ---------------------------------------------------------------------------- reference client


@dataclass(frozen=True)
class Params:
    """The reference ``Params``: k, h, m and the probabilities p, q, f."""

    num_bits: int
    num_hashes: int
    num_cohorts: int
    p: float
    q: float
    f: float

    def write(self, path: Path) -> Path:
        """The reference ``params.csv`` (``rappor_sim.print_params``): header and one row."""
        path.write_text(
            "k,h,m,p,q,f\n"
            f"{self.num_bits},{self.num_hashes},{self.num_cohorts},{self.p},{self.q},{self.f}\n"
        )
        return path


def bloom_bits(word: str, cohort: int, num_hashes: int, num_bits: int) -> list[int]:
    """``get_bloom_bits``: byte ``i`` of MD5(cohort as 4 bytes big-endian + word), mod k."""
    digest = hashlib.md5(cohort.to_bytes(4, "big") + word.encode("utf-8")).digest()
    return [digest[i] % num_bits for i in range(num_hashes)]


class SimpleRandom:
    """The reference ``SimpleRandom``: a k-bit word whose bit ``i`` is ``random() < prob``."""

    def __init__(self, prob_one: float, num_bits: int, rand: random.Random) -> None:
        self.prob_one, self.num_bits, self.rand = prob_one, num_bits, rand

    def __call__(self) -> int:
        rand_fn, p = self.rand.random, self.prob_one
        r = 0
        for i in range(self.num_bits):
            r |= (rand_fn() < p) << i
        return r


def bit_string(word: int, num_bits: int) -> str:
    """The reference ``bit_string``: bit ``k - 1`` first, bit 0 last."""
    return "".join("1" if word >> j & 1 else "0" for j in reversed(range(num_bits)))


@dataclass(frozen=True)
class ClientReport:
    client: int
    cohort: int
    bloom: int
    prr: int
    irr: int


def reference_client(words: list[str], params: Params, seed: int) -> Iterator[ClientReport]:
    """One report per word from the reference encoder (one client per word, cohort uniform).

    Permanent response (``_internal_encode_bits``): ``prr = (uniform & f_mask) | (bloom &
    ~f_mask)``, each bit 1 w.p. f/2, 0 w.p. f/2, else the Bloom bit; instantaneous: ``irr =
    (p_bits & ~prr) | (q_bits & prr)``.
    """
    rand = random.Random(seed)
    k = params.num_bits
    uniform_gen = SimpleRandom(0.5, k, rand)
    f_gen = SimpleRandom(params.f, k, rand)
    p_gen = SimpleRandom(params.p, k, rand)
    q_gen = SimpleRandom(params.q, k, rand)
    for client, word in enumerate(words):
        cohort = rand.randint(0, params.num_cohorts - 1)
        bloom = 0
        for bit in bloom_bits(word, cohort, params.num_hashes, k):
            bloom |= 1 << bit
        uniform, f_mask = uniform_gen(), f_gen()
        prr = (uniform & f_mask) | (bloom & ~f_mask)
        irr = (p_gen() & ~prr) | (q_gen() & prr)
        yield ClientReport(client, cohort, bloom, prr, irr)


def write_client_reports(
    reports: list[ClientReport], path: Path, k: int, *, simulator: bool = False
) -> Path:
    """``client,cohort,bloom`` (the client's report) or the simulator's five columns."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        if simulator:
            writer.writerow(["client", "cohort", "bloom", "prr", "irr"])
            writer.writerows(
                (r.client, r.cohort, bit_string(r.bloom, k), bit_string(r.prr, k),
                 bit_string(r.irr, k))
                for r in reports
            )  # fmt: skip
        else:
            writer.writerow(["client", "cohort", "bloom"])
            writer.writerows((r.client, r.cohort, bit_string(r.irr, k)) for r in reports)
    return path


def paper_epsilon_1(params: Params) -> mpmath.mpf:
    """``h ln(q*(1 - p*) / (p*(1 - q*)))`` (Erlingsson et al. 2014, Thm. 2), 50 digits."""
    with mpmath.workdps(50):
        f, p, q = mpmath.mpf(params.f), mpmath.mpf(params.p), mpmath.mpf(params.q)
        q_star = (1 - f / 2) * q + f / 2 * p
        p_star = f / 2 * q + (1 - f / 2) * p
        return params.num_hashes * mpmath.log(q_star * (1 - p_star) / (p_star * (1 - q_star)))


def packed(frame: pd.DataFrame, column: str) -> list[bytes]:
    return list(frame[column].tolist())


def files_in(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


# ---------------------------------------------------------------------------- decoding

SIM = Params(num_bits=32, num_hashes=2, num_cohorts=16, p=0.25, q=0.75, f=0.5)
CANDIDATES = [f"https://site{j:02d}.example/" for j in range(20)]
PLANTED = {CANDIDATES[j]: share for j, share in enumerate((0.4, 0.25, 0.15, 0.1, 0.1))}
SIM_CLIENTS = 60_000


@dataclass(frozen=True)
class Simulation:
    params_path: Path
    reports_path: Path
    simulator_path: Path
    reports: list[ClientReport]


@pytest.fixture(scope="module")
def simulation(tmp_path_factory: pytest.TempPathFactory) -> Simulation:
    """60,000 reference-client reports of the planted URLs (fixed seed), written once."""
    directory = tmp_path_factory.mktemp("reference")
    words = [url for url, share in PLANTED.items() for _ in range(round(share * SIM_CLIENTS))]
    reports = list(reference_client(words, SIM, seed=20140707))
    k = SIM.num_bits
    return Simulation(
        SIM.write(directory / "params.csv"),
        write_client_reports(reports, directory / "reports.csv", k),
        write_client_reports(reports, directory / "sim.csv", k, simulator=True),
        reports,
    )


def test_the_md5_hash_matches_the_reference_client() -> None:
    """``hash_scheme="rappor"`` sets exactly the reference client's Bloom bits in every cohort."""
    encoder = frameldp.BloomEncoder(32, num_hashes=4, num_cohorts=16, hash_scheme="rappor")
    words = [*CANDIDATES[:5], "", "é", "日本語"]
    cohorts = np.arange(len(words)) % 16

    positions = encoder.positions(words, cohorts)

    for word, cohort, found in zip(words, cohorts.tolist(), positions.tolist(), strict=True):
        assert found == bloom_bits(word, cohort, 4, 32)


def test_reference_client_reports_decode_to_the_planted_frequencies(
    simulation: Simulation,
) -> None:
    """Five URLs planted at 40/25/15/10/10% of 60,000 reference-client reports, decoded against
    20 candidates at ``significance=P_FAIL``: exactly the five are detected, each within
    ``norm.isf(P_FAIL / 10)`` (5.3) standard errors of the truth.

    Standard errors are about 360 reports: a bias of ~1,900 reports (3% of n) is detected (a bit
    order or hash mismatch would decode nothing at all). The smallest planted count is ~16 SE,
    far above the 5.3 SE detection threshold.
    """
    reports = read_rappor_reports(simulation.reports_path, params=simulation.params_path)
    table = reports.ldp.decode(candidates=CANDIDATES, significance=P_FAIL)

    assert list(reports.columns) == ["client", "cohort", "bloom"]
    assert len(reports) == len(simulation.reports)
    assert reports["cohort"].tolist() == [r.cohort for r in simulation.reports]
    frame = table.frame.set_index("category")
    assert sorted(frame.index) == sorted(PLANTED)
    truth = np.array([PLANTED[c] * SIM_CLIENTS for c in frame.index])
    z = np.abs(frame["count"].to_numpy() - truth) / frame["std_error"].to_numpy()
    assert (z < norm.isf(P_FAIL / (2 * len(PLANTED)))).all(), dict(zip(frame.index, z, strict=True))
    # The guarantee is the params' epsilon_1, rounded up, with no memo (imported reports).
    params = read_rappor_params(simulation.params_path)
    epsilon_1 = paper_epsilon_1(SIM)
    assert table.privacy.epsilon == params.privacy.epsilon
    assert epsilon_1 <= table.privacy.epsilon <= epsilon_1 * (1 + 1e-12)
    assert "memo" not in table.privacy.parameters
    assert reports.ldp.privacy == params.privacy


def test_params_may_be_given_as_a_mechanism(simulation: Simulation) -> None:
    """``params=BloomRappor(..., hash_scheme="rappor")`` reads the same frame as the params file."""
    mechanism = frameldp.BloomRappor(
        f=SIM.f, p=SIM.p, q=SIM.q, num_bits=32, num_hashes=2, num_cohorts=16, hash_scheme="rappor"
    )

    by_path = read_rappor_reports(simulation.reports_path, params=simulation.params_path)
    by_object = read_rappor_reports(simulation.reports_path, params=mechanism)

    pd.testing.assert_frame_equal(by_object, by_path, check_exact=True)
    assert by_object.attrs == by_path.attrs
    assert read_rappor_params(simulation.params_path) == mechanism


def test_simulator_files_are_read_from_irr_and_drop_unprivatized_columns(
    simulation: Simulation,
) -> None:
    """``client,cohort,bloom,prr,irr``: the reports are ``irr``; ``bloom`` and ``prr`` (the raw
    Bloom filter and the permanent response) are dropped with a FrameLDPWarning."""
    with pytest.warns(frameldp.FrameLDPWarning, match="irr"):
        reports = read_rappor_reports(simulation.simulator_path, params=simulation.params_path)
    plain = read_rappor_reports(simulation.reports_path, params=simulation.params_path)

    assert list(reports.columns) == ["client", "cohort", "irr"]
    assert packed(reports, "irr") == packed(plain, "bloom")
    assert reports["cohort"].tolist() == plain["cohort"].tolist()
    decoded = reports.ldp.decode(candidates=CANDIDATES, significance=P_FAIL)
    expected = plain.ldp.decode(candidates=CANDIDATES, significance=P_FAIL)
    pd.testing.assert_frame_equal(decoded.frame, expected.frame, check_exact=True)


# ---------------------------------------------------------------------------- round trips

ROUND = {"num_bits": 12, "num_hashes": 2, "num_cohorts": 8, "f": 0.5, "p": 0.5, "q": 0.75}
URLS = ("https://a.example/", "https://b.example/?q=1,2", 'say "hi"', "é", "")


def _frameldp_reports(n: int = 400) -> pd.DataFrame:
    users = pd.Series([f'user {i % 150}, "x"' for i in range(n)], dtype=object)
    urls = pd.Series([URLS[(3 * i) % len(URLS)] for i in range(n)], dtype=object)
    frame = pd.DataFrame({"user_id": users, "url": urls})
    return frame.ldp.rappor(
        "url", encoding="bloom", hash_scheme="rappor", user="user_id", memo_key=bytes(32), seed=8,
        **ROUND,
    )  # fmt: skip


def test_frameldp_reports_round_trip_through_reference_files(tmp_path: Path) -> None:
    """Reports written with ``write_rappor_reports`` (client ids with commas and quotes) and the
    mechanism's params read back as identical packed reports, cohorts and clients, and decode to
    the identical table with the same one-report epsilon."""
    reports = _frameldp_reports()
    before = reports.copy(deep=True)
    mechanism = reports.ldp.mechanisms["url"]
    assert isinstance(mechanism, frameldp.BloomRappor)

    write_rappor_reports(reports, tmp_path / "reports.csv", client="user_id")
    write_rappor_params(mechanism, tmp_path / "params.csv")
    back = read_rappor_reports(tmp_path / "reports.csv", params=tmp_path / "params.csv")

    assert files_in(tmp_path) == ["params.csv", "reports.csv"]
    assert back["client"].tolist() == reports["user_id"].tolist()
    assert back["cohort"].tolist() == reports["url_cohort"].tolist()
    assert packed(back, "bloom") == packed(reports, "url")
    assert back.dtypes["bloom"].pyarrow_dtype.storage_type == pa.large_binary()
    assert back.ldp.mechanisms["bloom"] == mechanism
    original = reports.ldp.decode(candidates=list(URLS))
    again = back.ldp.decode(candidates=list(URLS))
    pd.testing.assert_frame_equal(again.frame, original.frame, check_exact=True)
    assert again.privacy.epsilon == original.privacy.epsilon
    pd.testing.assert_frame_equal(reports, before, check_exact=True)


def test_clients_default_to_row_positions(tmp_path: Path) -> None:
    """Without ``client=``, the client column is the row position."""
    reports = _frameldp_reports(10)

    write_rappor_reports(reports, tmp_path / "reports.csv")

    lines = (tmp_path / "reports.csv").read_text().splitlines()
    assert lines[0] == "client,cohort,bloom"
    assert [line.split(",")[0] for line in lines[1:]] == [str(i) for i in range(10)]
    assert all(len(line.split(",")[2]) == ROUND["num_bits"] for line in lines[1:])


@pytest.mark.parametrize(
    "mechanism",
    [
        frameldp.BloomRappor(
            f=0.5, p=0.5, q=0.75, num_bits=16, num_cohorts=64, hash_scheme="rappor"
        ),
        frameldp.BloomRappor(
            f=0.3, p=0.1, q=0.9, num_bits=256, num_hashes=16, hash_scheme="rappor"
        ),
        frameldp.BloomRappor(
            1.0, epsilon_infinity=3.0, num_bits=32, num_cohorts=4, hash_scheme="rappor"
        ),
    ],
    ids=["paper", "widest", "by-epsilon"],
)
def test_params_round_trip(tmp_path: Path, mechanism: frameldp.BloomRappor) -> None:
    """``read_rappor_params(write_rappor_params(m))`` realizes m's probabilities exactly and has
    m's guarantee; the file is the reference header and one row."""
    path = tmp_path / "params.csv"

    write_rappor_params(mechanism, path)
    back = read_rappor_params(path)

    lines = path.read_text().splitlines()
    assert lines[0] == "k,h,m,p,q,f"
    assert len(lines) == 2
    assert back.hash_scheme == "rappor"
    assert (back.num_bits, back.num_hashes, back.num_cohorts) == (
        mechanism.num_bits,
        mechanism.num_hashes,
        mechanism.num_cohorts,
    )
    assert back.flip_probability == mechanism.flip_probability
    assert back.zero_probability == mechanism.zero_probability
    assert back.one_probability == mechanism.one_probability
    assert back.privacy == mechanism.privacy
    assert files_in(tmp_path) == ["params.csv"]


def test_reference_params_file_reads_as_the_paper_mechanism(tmp_path: Path) -> None:
    """The reference client's default params (k=16, h=2, m=64, p=.5, q=.75, f=.5)."""
    path = Params(16, 2, 64, 0.5, 0.75, 0.5).write(tmp_path / "params.csv")

    mechanism = read_rappor_params(path)

    assert mechanism == frameldp.BloomRappor(
        f=0.5, p=0.5, q=0.75, num_bits=16, num_hashes=2, num_cohorts=64, hash_scheme="rappor"
    )


def test_params_of_a_fast_hash_mechanism_are_refused(tmp_path: Path) -> None:
    """The params format has no hash field and means MD5 (``hash_scheme="rappor"``): writing
    a ``hash_scheme="fast"`` mechanism would give a file whose reports decode against the wrong
    hashes, so it is refused (ParameterError naming ``hash_scheme``) and nothing is written."""
    mechanism = frameldp.BloomRappor(f=0.5, p=0.5, q=0.75, num_bits=16, hash_scheme="fast")

    with pytest.raises(frameldp.ParameterError, match="hash_scheme"):
        write_rappor_params(mechanism, tmp_path / "params.csv")

    assert files_in(tmp_path) == []


# ---------------------------------------------------------------------------- bit order

ORDER_BITS = 16


def _word_at_bit(bit: int) -> str:
    """A word whose one MD5 hash (cohort 0) sets bit ``bit`` of a 16-bit filter."""
    return next(
        word
        for word in (f"w{i}" for i in range(10_000))
        if bloom_bits(word, 0, 1, ORDER_BITS) == [bit]
    )


def test_the_last_character_of_a_report_string_is_bit_0(tmp_path: Path) -> None:
    """ "0...01" is bit 0 (weight 2**0) and "10...0" bit k - 1: read by hand, they equal
    frameldp's encoding (near-identity noise: flip probability 2**-52 per bit, p = 0, q = 1) of
    words whose MD5 byte mod k is 0 and k - 1, and frameldp writes those reports back as the same
    strings."""
    params = Params(ORDER_BITS, 1, 1, 0.0, 1.0, 2.0**-51).write(tmp_path / "params.csv")
    words = [_word_at_bit(0), _word_at_bit(ORDER_BITS - 1), _word_at_bit(3)]
    strings = ["0" * 15 + "1", "1" + "0" * 15, "0" * 12 + "1000"]
    (tmp_path / "hand.csv").write_text(
        "client,cohort,bloom\n" + "".join(f"{i},0,{s}\n" for i, s in enumerate(strings))
    )
    mechanism = read_rappor_params(params)

    by_hand = read_rappor_reports(tmp_path / "hand.csv", params=params)
    encoded = pd.DataFrame({"url": pd.Series(words, dtype=object)}).ldp.privatize(
        {"url": mechanism}, seed=1
    )
    write_rappor_reports(encoded, tmp_path / "encoded.csv")

    assert packed(by_hand, "bloom") == [b"\x80\x00", b"\x00\x01", b"\x10\x00"]
    assert packed(encoded, "url") == packed(by_hand, "bloom")
    lines = (tmp_path / "encoded.csv").read_text().splitlines()[1:]
    assert [line.split(",")[2] for line in lines] == strings


# ---------------------------------------------------------------------------- malformed files

GOOD_PARAMS = "k,h,m,p,q,f\n8,2,4,0.5,0.75,0.5\n"

# name -> (params file content, substrings of the ParameterError message besides the path)
BAD_PARAMS: dict[str, tuple[str, list[str]]] = {
    "empty": ("", ["header must be k,h,m,p,q,f"]),
    "wrong-header": ("k,h,m,p,q,g\n8,2,4,0.5,0.75,0.5\n", ["header must be k,h,m,p,q,f", "g"]),
    "header-order": ("h,k,m,p,q,f\n8,2,4,0.5,0.75,0.5\n", ["header must be k,h,m,p,q,f"]),
    "header-only": ("k,h,m,p,q,f\n", ["expected one row of 6 values"]),
    "extra-row": (GOOD_PARAMS + "8,2,4,0.5,0.75,0.5\n", ["expected one row of 6 values"]),
    "short-row": ("k,h,m,p,q,f\n8,2,4,0.5,0.75\n", ["expected one row of 6 values"]),
    "non-numeric-k": ("k,h,m,p,q,f\neight,2,4,0.5,0.75,0.5\n", ["eight"]),
    "fractional-m": ("k,h,m,p,q,f\n8,2,4.5,0.5,0.75,0.5\n", ["4.5"]),
    "non-numeric-q": ("k,h,m,p,q,f\n8,2,4,0.5,high,0.5\n", ["high"]),
    "p-above-one": ("k,h,m,p,q,f\n8,2,4,1.5,0.75,0.5\n", ["p must be in [0, 1]", "1.5"]),
    "q-negative": ("k,h,m,p,q,f\n8,2,4,0.5,-0.1,0.5\n", ["q must be in [0, 1]", "-0.1"]),
    "f-zero": ("k,h,m,p,q,f\n8,2,4,0.5,0.75,0\n", ["f must be in (0, 1]", "0.0"]),
    "f-nan": ("k,h,m,p,q,f\n8,2,4,0.5,0.75,nan\n", ["f must be a number", "nan"]),
    "p-equals-q": ("k,h,m,p,q,f\n8,2,4,0.5,0.5,0.5\n", ["p and q must differ"]),
    "k-too-wide-for-md5": ("k,h,m,p,q,f\n512,2,4,0.5,0.75,0.5\n", ["num_bits", "512"]),
    "too-many-hashes": ("k,h,m,p,q,f\n64,17,4,0.5,0.75,0.5\n", ["num_hashes", "17"]),
    "no-cohorts": ("k,h,m,p,q,f\n8,2,0,0.5,0.75,0.5\n", ["num_cohorts", "0"]),
}


@pytest.mark.parametrize(("content", "fragments"), list(BAD_PARAMS.values()), ids=BAD_PARAMS)
def test_malformed_params_raise_naming_the_file(
    tmp_path: Path, content: str, fragments: list[str]
) -> None:
    path = tmp_path / "params.csv"
    path.write_text(content)

    with pytest.raises(frameldp.ParameterError) as raised:
        read_rappor_params(path)

    message = str(raised.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message
    # The same file given to read_rappor_reports raises the same error.
    (tmp_path / "reports.csv").write_text("client,cohort,bloom\n0,0,00000000\n")
    with pytest.raises(frameldp.ParameterError, match="params file"):
        read_rappor_reports(tmp_path / "reports.csv", params=path)


# name -> (report file content, error class, substrings of the message besides the path)
BAD_REPORTS: dict[str, tuple[str, type[frameldp.FrameLDPError], list[str]]] = {
    "short-report": (
        "client,cohort,bloom\n0,0,01010101\n1,1,0101\n",
        frameldp.DomainError,
        ["row 1", "4 bits", "expected 8"],
    ),
    "long-report": (
        "client,cohort,bloom\n0,0,01010101\n1,1,01010101\n2,3,010101011\n",
        frameldp.DomainError,
        ["row 2", "9 bits", "expected 8"],
    ),
    "letter": (
        "client,cohort,bloom\n0,0,01010101\n1,1,0101010a\n",
        frameldp.DomainError,
        ["row 1", "other than 0 and 1"],
    ),
    "digit-two": (
        "client,cohort,bloom\n0,0,21010101\n",
        frameldp.DomainError,
        ["row 0", "other than 0 and 1"],
    ),
    "space": (
        "client,cohort,bloom\n0,0,01010101\n1,2,01010101\n2,2,0101 101\n",
        frameldp.DomainError,
        ["row 2", "other than 0 and 1"],
    ),
    "empty-report": (
        "client,cohort,bloom\n0,0,\n",
        frameldp.DomainError,
        ["row 0", "0 bits", "expected 8"],
    ),
    "cohort-too-large": (
        "client,cohort,bloom\n0,0,01010101\n1,4,01010101\n",
        frameldp.DomainError,
        ["cohort 4", "row 1", "[0, 4)"],
    ),
    "cohort-negative": (
        "client,cohort,bloom\n0,-1,01010101\n",
        frameldp.DomainError,
        ["cohort -1", "row 0", "[0, 4)"],
    ),
    "cohort-missing": (
        "client,cohort,bloom\n0,,01010101\n",
        frameldp.DomainError,
        ["no cohort"],
    ),
    "cohort-not-integer": (
        "client,cohort,bloom\n0,one,01010101\n",
        frameldp.ParameterError,
        ["one"],
    ),
    "no-cohort-column": (
        "client,bloom\n0,01010101\n",
        frameldp.ParameterError,
        ["missing ['cohort']"],
    ),
    "no-bloom-column": (
        "client,cohort,irr\n0,0,01010101\n",
        frameldp.ParameterError,
        ["missing ['bloom']"],
    ),
    "empty-file": ("", frameldp.ParameterError, []),
}


@pytest.mark.parametrize(
    ("content", "error", "fragments"), list(BAD_REPORTS.values()), ids=BAD_REPORTS
)
def test_malformed_reports_raise_naming_the_file_and_row(
    tmp_path: Path, content: str, error: type[frameldp.FrameLDPError], fragments: list[str]
) -> None:
    path = tmp_path / "reports.csv"
    path.write_text(content)

    with pytest.raises(error) as raised:
        read_rappor_reports(path, params=GOOD_PARAMS_MECHANISM)

    message = str(raised.value)
    assert f"report file {path}" in message
    for fragment in fragments:
        assert fragment in message


GOOD_PARAMS_MECHANISM = frameldp.BloomRappor(
    f=0.5, p=0.5, q=0.75, num_bits=8, num_hashes=2, num_cohorts=4, hash_scheme="rappor"
)


def test_a_header_only_report_file_is_an_empty_frame(tmp_path: Path) -> None:
    """No reports is not an error when reading (decoding zero reports is)."""
    path = tmp_path / "reports.csv"
    path.write_text("client,cohort,bloom\n")

    reports = read_rappor_reports(path, params=GOOD_PARAMS_MECHANISM)

    assert list(reports.columns) == ["client", "cohort", "bloom"]
    assert len(reports) == 0
    with pytest.raises(frameldp.ParameterError, match="n=0"):
        reports.ldp.decode(candidates=["a"])


@pytest.mark.parametrize("which", ["params", "reports"])
@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_paths_raise_naming_the_path(tmp_path: Path, which: str, kind: str) -> None:
    bad = tmp_path / "nothing-here.csv"
    if kind == "directory":
        bad.mkdir()
    params = tmp_path / "params.csv"
    params.write_text(GOOD_PARAMS)

    read = read_rappor_params if which == "params" else partial(read_rappor_reports, params=params)

    with pytest.raises(frameldp.ParameterError) as raised:
        read(bad)

    assert str(bad) in str(raised.value)


def test_a_params_file_that_is_not_text_raises(tmp_path: Path) -> None:
    path = tmp_path / "params.csv"
    path.write_bytes(b"\xff\xfe\x00k,h")

    with pytest.raises(frameldp.ParameterError, match=r"params\.csv"):
        read_rappor_params(path)


@pytest.mark.parametrize(
    "key", [bytes(range(200, 232)), b"correct horse battery staple 123"], ids=["binary", "text"]
)
def test_a_key_file_given_as_params_file_is_not_echoed(tmp_path: Path, key: bytes) -> None:
    path = tmp_path / "secret.key"
    path.write_bytes(key)

    with pytest.raises(frameldp.ParameterError, match=r"params file|cannot read") as raised:
        read_rappor_params(path)

    message = str(raised.value).replace(str(path), "")
    assert key[:8].decode("latin-1") not in message
    assert "0x" not in message
    assert "position" not in message


def test_a_directory_in_the_way_of_a_write_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "reports.csv").mkdir()

    with pytest.raises(frameldp.ParameterError, match="is a directory") as raised:
        write_rappor_reports(_frameldp_reports(10), tmp_path / "reports.csv")

    assert ".tmp" not in str(raised.value)
    assert files_in(tmp_path) == ["reports.csv"]


# ---------------------------------------------------------------------------- atomic writes


def test_a_write_refused_before_writing_leaves_no_file(tmp_path: Path) -> None:
    """No recorded Bloom mechanism, a missing client column, a polars frame, a non-Bloom
    mechanism: each raises a frameldp error and leaves the directory empty."""
    plain = pd.DataFrame({"url": ["a"], "url_cohort": [0]})
    onehot = pd.DataFrame({"c": ["a", "b"]}).ldp.rappor("c", epsilon=1.0, domain=["a", "b"])
    reports = _frameldp_reports(10)
    target = tmp_path / "reports.csv"

    with pytest.raises(frameldp.MechanismNotFoundError, match="Bloom"):
        write_rappor_reports(plain, target)
    with pytest.raises(frameldp.MechanismNotFoundError, match="Bloom"):
        write_rappor_reports(onehot, target)
    with pytest.raises(frameldp.ParameterError, match="column 'uid' not found"):
        write_rappor_reports(reports, target, client="uid")
    with pytest.raises(frameldp.ParameterError, match="pandas DataFrame"):
        write_rappor_reports(pl.DataFrame({"url": [b"\x00\x00"]}), target)
    with pytest.raises(frameldp.ParameterError, match="BloomRappor"):
        write_rappor_params(frameldp.Rappor(epsilon=1.0, domain=["a", "b"]), tmp_path / "p.csv")

    assert files_in(tmp_path) == []


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    """A refused write over an existing file leaves it intact; a successful one replaces it."""
    target = tmp_path / "reports.csv"
    target.write_text("old contents\n")
    reports = _frameldp_reports(10)

    with pytest.raises(frameldp.ParameterError):
        write_rappor_reports(reports, target, client="uid")
    assert target.read_text() == "old contents\n"
    assert files_in(tmp_path) == ["reports.csv"]

    write_rappor_reports(reports, target)
    assert target.read_text().startswith("client,cohort,bloom\n")
    assert files_in(tmp_path) == ["reports.csv"]


class _WriteInterruptedError(Exception):
    """Raised by a CSV writer that fails halfway through."""


def _failing_writer(*args: Any, **kwargs: Any) -> Any:
    real = _REAL_WRITER(*args, **kwargs)

    class Writer:
        def writerow(self, row: Any) -> Any:
            return real.writerow(row)

        def writerows(self, rows: Any) -> Any:
            for count, row in enumerate(rows):
                if count == 3:
                    raise _WriteInterruptedError
                real.writerow(row)

    return Writer()


_REAL_WRITER = csv.writer


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_a_write_interrupted_midway_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    """A failure while the rows are written (after the temporary file exists) removes the
    temporary file and leaves the target as it was: absent, or with its old contents."""
    target = tmp_path / "reports.csv"
    if existing:
        target.write_text("old contents\n")
    reports = _frameldp_reports(10)
    monkeypatch.setattr(csv, "writer", _failing_writer)

    with pytest.raises(_WriteInterruptedError):
        write_rappor_reports(reports, target)

    if existing:
        assert target.read_text() == "old contents\n"
        assert files_in(tmp_path) == ["reports.csv"]
    else:
        assert files_in(tmp_path) == []
