"""Frequent strings without candidates: prefix extending against Bloom RAPPOR (issue 18).

Population: 10,000 word-like strings (3 to 12 letters, one in ten with an accented letter, one
in twenty in Japanese kana: multibyte UTF-8), Zipf(s = 1.1) frequencies, ``n`` reports.

At each epsilon (one report per person, its whole loss):

``prefix extending``
    ``PrefixExtending(epsilon, max_length=10)``, discovered with ``top = k`` and no candidate
    list.
``Bloom RAPPOR``
    ``BloomRappor(epsilon, epsilon_infinity=epsilon)`` (128 bits, 2 hashes, 64 cohorts: one
    report, no instantaneous response), decoded against **all 10,000 true strings** as
    candidates (an advantage prefix extending does not have), the ``k`` largest detections kept.

For ``k`` in {10, 50}: **recall**, the share of the true top ``k`` reported; **precision**, the
share of reported strings that someone holds; **in top k**, the share of reported strings in the
true top ``k``. Prefix extending reports a string longer than ``max_length`` bytes cut (and
flagged): it is matched by its cut form. Times are wall-clock
(``time.perf_counter``) of randomizing and of discovering / decoding.

Usage::

    python benchmarks/bench_discovery.py            # n = 10^6, epsilon 1, 2, 4 (a few minutes)
    python benchmarks/bench_discovery.py --quick    # n = 5 x 10^4, epsilon 4 (smoke run)
    python benchmarks/bench_discovery.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import frameldp
from frameldp.core.columns import bits_array
from frameldp.core.randomness import RandomSource

MAX_LENGTH = 10
KANA = "あいうえおかきくけこさしすせそたちつてとなにぬねの"


def population(size: int = 10_000, seed: int = 0) -> list[str]:
    """Distinct word-like strings (test data, not noise)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: dict[str, None] = {}
    while len(words) < size:
        length = int(rng.integers(3, 13))
        if rng.random() < 0.05:
            word = "".join(rng.choice(list(KANA), max(2, length // 3)))
        else:
            word = "".join(rng.choice(letters, length))
            if rng.random() < 0.1:
                word = word[:-1] + "é"
        words[word] = None
    return list(words)


def _draw(strings: list[str], n: int, seed: int) -> np.ndarray[Any, Any]:
    ranks = np.arange(1, len(strings) + 1, dtype=np.float64)
    shares = ranks**-1.1 / np.sum(ranks**-1.1)
    return np.random.default_rng(seed + 1).choice(len(strings), size=n, p=shares)


def _discoverable(string: str) -> str:
    """What prefix extending can report for ``string``: itself, or its cut at MAX_LENGTH bytes
    (whole characters only)."""
    data = string.encode("utf-8")
    if len(data) <= MAX_LENGTH:
        return string
    return data[:MAX_LENGTH].decode("utf-8", errors="ignore")


def _scores(
    reported: list[str], truth: np.ndarray[Any, Any], strings: list[str], k: int, *, cut: bool
) -> dict[str, float]:
    """Recall, precision and the share in the true top k; with ``cut``, a string is matched by
    its cut form (prefix extending reports strings longer than MAX_LENGTH bytes cut)."""
    shown = [_discoverable(s) if cut else s for s in strings]
    order = np.argsort(-truth, kind="stable")
    top = {shown[i] for i in order[:k]}
    held = {shown[i] for i in np.flatnonzero(truth)}
    hits = len(set(reported) & top)
    held_hits = sum(1 for s in reported if s in held)
    return {
        "recall": hits / len(top),
        "precision": held_hits / max(len(reported), 1),
        "in_top_k": hits / max(len(reported), 1),
    }


def run_epsilon(epsilon: float, n: int, ks: tuple[int, ...]) -> list[dict[str, Any]]:
    strings = population()
    codes = _draw(strings, n, int(epsilon * 10))
    truth = np.bincount(codes, minlength=len(strings))
    source = RandomSource.from_seed(int(epsilon * 100))
    rows = []

    pem = frameldp.PrefixExtending(epsilon, max_length=MAX_LENGTH)
    start = time.perf_counter()
    reports = bits_array(pem.randomize(strings, codes, source=source, label="word"))
    randomize = time.perf_counter() - start
    for k in ks:
        start = time.perf_counter()
        found = pem.discover(lambda reduce: reduce({"word": reports}), column="word", top=k)
        seconds = time.perf_counter() - start
        rows.append(
            {
                "epsilon": epsilon,
                "n": n,
                "k": k,
                "method": "prefix extending",
                "reported": len(found.labels),
                **_scores(list(found.labels), truth, strings, k, cut=True),
                "randomize_s": randomize,
                "estimate_s": seconds,
            }
        )

    bloom = frameldp.BloomRappor(epsilon, epsilon_infinity=epsilon)
    start = time.perf_counter()
    bits, cohorts = bloom.randomize(codes, strings, source=source, label="word")
    randomize = time.perf_counter() - start
    start = time.perf_counter()
    counts, sizes = bloom.bit_counts(bits, cohorts)
    decoded = bloom.decode(counts, sizes, strings)
    seconds = time.perf_counter() - start
    for k in ks:
        reported = [str(label) for label in decoded.labels[:k]]
        rows.append(
            {
                "epsilon": epsilon,
                "n": n,
                "k": k,
                "method": "Bloom RAPPOR (all true strings as candidates)",
                "reported": len(reported),
                **_scores(reported, truth, strings, k, cut=False),
                "randomize_s": randomize,
                "estimate_s": seconds,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 5 x 10^4, epsilon 4 only")
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = parser.parse_args()
    n = 50_000 if args.quick else 1_000_000
    epsilons = (4.0,) if args.quick else (1.0, 2.0, 4.0)
    rows = [row for epsilon in epsilons for row in run_epsilon(epsilon, n, (10, 50))]
    print(f"Frequent strings, Zipf(1.1) over 10,000 strings, n = {n:,}, max_length {MAX_LENGTH}")
    print(
        f"{'eps':>4} {'k':>3}  {'method':<46} {'reported':>8} {'recall':>6} {'precision':>9} "
        f"{'in top k':>8} {'randomize s':>11} {'estimate s':>10}"
    )
    for r in rows:
        print(
            f"{r['epsilon']:>4g} {r['k']:>3}  {r['method']:<46} {r['reported']:>8} "
            f"{r['recall']:>6.2f} {r['precision']:>9.2f} {r['in_top_k']:>8.2f} "
            f"{r['randomize_s']:>11.2f} {r['estimate_s']:>10.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
