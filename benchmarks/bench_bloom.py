"""Bloom-filter RAPPOR in the paper's setting: accuracy of decoding, and how long each step takes.

Population: 10,000 strings (URLs) with Zipf(s = 1.1) frequencies, ``n`` = 1,000,000 reports,
``num_bits`` = 128, ``num_hashes`` = 2, 64 cohorts, f = 0.5, p = 0.5, q = 0.75 (Erlingsson et al.
2014, Sec. 5), decoded against the 10,000 strings as candidates.

For each seed (a fresh population draw and fresh keyed noise):

``randomize``
    ``BloomRappor.randomize``: Bloom encoding, permanent and instantaneous responses, cohorts.
    Two variants: one report per anonymous client (cohorts and permanent responses drawn per
    report), and every report from a distinct user id with a memo key (keyed PRF of (user,
    value), as a longitudinal collection does).
``count``
    ``BloomRappor.bit_counts``: per-cohort bit sums.
``decode``
    ``BloomRappor.decode`` against the 10,000 candidates: debiasing, sparse design matrix,
    non-negative Lasso, least squares, Bonferroni at significance 0.05.
``accounting``
    ``Accountant.explain(1e-9)`` of one report per night for 30, 365 and 3650 nights, with
    memoized permanent responses (the events fold into one: at most epsilon_inf) and without
    (independent composition).
``pandas``
    The same through the accessor: ``df.ldp.rappor(..., encoding="bloom", user=...)`` then
    ``reports.ldp.decode(candidates=...)`` (first seed only).

Accuracy, against the true counts of the drawn population:

* **recall** and **precision** of the detected set among the strings whose true frequency is at
  least 0.5% (a detected string below 0.5% counts against precision), and **absent**: detected
  strings that no report holds (false detections);
* **TVD (detected)**: ``1/2 sum_{v detected} |f̂_v - f_v|``, the total variation distance between
  estimated and true frequencies over the detected strings;
* **TVD (all)**: the same over every string, undetected ones estimated as 0;
* **unexplained**: the decoded share of reports no detected string explains, beside the true
  share of the strings not detected.

Times are wall-clock (``time.perf_counter``), one run per seed; the table gives each seed and
the mean.

Usage::

    python benchmarks/bench_bloom.py               # full run (5 seeds, about a minute)
    python benchmarks/bench_bloom.py --quick       # n = 100,000, 2 seeds (smoke run)
    python benchmarks/bench_bloom.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import frameldp
from frameldp import BloomRappor, RandomSource

NUM_STRINGS = 10_000
ZIPF_S = 1.1
THRESHOLD = 0.005
PARAMS: dict[str, Any] = {
    "f": 0.5,
    "p": 0.5,
    "q": 0.75,
    "num_bits": 128,
    "num_hashes": 2,
    "num_cohorts": 64,
}


def _strings() -> list[str]:
    return [f"https://example.com/{i:05d}/index.html" for i in range(NUM_STRINGS)]


def _population(n: int, seed: int) -> np.ndarray[Any, Any]:
    weights = 1.0 / np.arange(1, NUM_STRINGS + 1) ** ZIPF_S
    rng = np.random.default_rng(seed)  # test data, not privacy noise
    return rng.choice(NUM_STRINGS, size=n, p=weights / weights.sum())


def _accuracy(
    decoding: frameldp.BloomDecoding, truth: np.ndarray[Any, Any], n: int
) -> dict[str, Any]:
    true_freq = truth / n
    frequent = set(np.flatnonzero(true_freq >= THRESHOLD).tolist())
    detected = decoding.detected.tolist()
    hits = len(frequent & set(detected))
    estimated = np.zeros(NUM_STRINGS)
    estimated[decoding.detected] = decoding.counts / n
    on_detected = np.abs(estimated[decoding.detected] - true_freq[decoding.detected]).sum()
    return {
        "frequent": len(frequent),
        "detected": len(detected),
        "recall": hits / len(frequent),
        "precision": hits / len(detected) if detected else float("nan"),
        "absent": int((truth[decoding.detected] == 0).sum()),
        "tvd_detected": 0.5 * float(on_detected),
        "tvd_all": 0.5 * float(np.abs(estimated - true_freq).sum()),
        "unexplained": decoding.unexplained,
        "unexplained_se": decoding.unexplained_std_error,
        "true_unexplained": float(1.0 - true_freq[decoding.detected].sum()),
    }


def _timed(run: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def run_seed(n: int, seed: int, with_pandas: bool) -> dict[str, Any]:
    """One population, randomized twice (anonymous / with users) and decoded."""
    mechanism = BloomRappor(**PARAMS)
    strings = _strings()
    codes = _population(n, seed)
    truth = np.bincount(codes, minlength=NUM_STRINGS)
    source = RandomSource.fresh()
    anonymous_s, (reports, cohorts) = _timed(
        lambda: mechanism.randomize(codes, strings, source=source, label="url")
    )
    users = np.arange(n, dtype=np.int64)
    memo = RandomSource.fresh()
    users_s, _ = _timed(
        lambda: mechanism.randomize(
            codes,
            strings,
            user_codes=users,
            user_ids=users.tolist(),
            source=RandomSource.fresh(),  # another release of the same rows: its own key
            memo=memo,
            label="url",
        )
    )
    count_s, (counts, sizes) = _timed(lambda: mechanism.bit_counts(reports, cohorts))
    decode_s, decoding = _timed(lambda: mechanism.decode(counts, sizes, strings))
    row: dict[str, Any] = {
        "seed": seed,
        "n": n,
        "randomize_s": anonymous_s,
        "randomize_users_s": users_s,
        "count_s": count_s,
        "decode_s": decode_s,
        "selected": decoding.selected,
        **_accuracy(decoding, truth, n),
    }
    if with_pandas:
        frame = pd.DataFrame({"user_id": users, "url": np.asarray(strings, dtype=object)[codes]})
        privatize_s, released = _timed(
            lambda: frame.ldp.rappor(
                "url", encoding="bloom", user="user_id", memo_key=bytes(32), **PARAMS
            )
        )
        decode_frame_s, _ = _timed(lambda: released.ldp.decode(candidates=strings))
        row["pandas_privatize_s"] = privatize_s
        row["pandas_decode_s"] = decode_frame_s
    return row


def accounting(nights: tuple[int, ...]) -> list[dict[str, Any]]:
    """A nightly collection of one report per user, with and without memoized responses."""
    mechanism = BloomRappor(**PARAMS)
    rows = []
    for memo in ("nightly", None):
        guarantee = mechanism.guarantee(memo)
        for count in nights:
            seconds, explanation = _timed(
                lambda g=guarantee, count=count: (
                    frameldp.Accountant().compose(g, count=count).explain(1e-9)
                )
            )
            rows.append(
                {
                    "memoized": memo is not None,
                    "nights": count,
                    "seconds": seconds,
                    "epsilon": explanation.best.epsilon,
                    "method": explanation.best.method,
                }
            )
    return rows


def run(quick: bool, seeds: int) -> list[dict[str, Any]]:
    """Every seed, as rows."""
    n = 100_000 if quick else 1_000_000
    return [run_seed(n, seed, with_pandas=seed == 0) for seed in range(seeds)]


_COLUMNS = [
    # (row key, title, width, decimals)
    ("randomize_s", "rand s", 7, 2),
    ("randomize_users_s", "rand+users s", 12, 2),
    ("count_s", "count s", 7, 2),
    ("decode_s", "decode s", 8, 2),
    ("selected", "lasso", 5, 0),
    ("detected", "found", 5, 0),
    ("frequent", ">=0.5%", 6, 0),
    ("recall", "recall", 6, 2),
    ("precision", "prec.", 5, 2),
    ("absent", "absent", 6, 0),
    ("tvd_detected", "TVD det", 7, 4),
    ("tvd_all", "TVD all", 7, 4),
    ("unexplained", "unexpl.", 7, 3),
    ("true_unexplained", "true", 5, 3),
]


def _print(rows: list[dict[str, Any]]) -> None:
    print(f"Bloom RAPPOR, n = {rows[0]['n']:,}, {NUM_STRINGS:,} Zipf({ZIPF_S}) strings, {PARAMS}")
    header = "seed " + " ".join(f"{title:>{width}}" for _, title, width, _ in _COLUMNS)
    print(header)
    print("-" * len(header))
    for label, values in [(f"{row['seed']:>4}", row) for row in rows] + [
        ("mean", {key: statistics.fmean(row[key] for row in rows) for key, *_ in _COLUMNS})
    ]:
        cells = " ".join(f"{values[key]:>{width}.{digits}f}" for key, _, width, digits in _COLUMNS)
        print(f"{label} {cells}")
    first = rows[0]
    if "pandas_privatize_s" in first:
        print(
            f"\npandas accessor (seed 0): privatize {first['pandas_privatize_s']:.2f} s "
            f"(with user ids), decode {first['pandas_decode_s']:.2f} s"
        )


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 100,000, 2 seeds")
    parser.add_argument("--seeds", type=int, default=5, help="population draws (default 5)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    arguments = parser.parse_args()
    rows = run(arguments.quick, 2 if arguments.quick else arguments.seeds)
    _print(rows)
    ledger_rows = accounting((30, 365) if arguments.quick else (30, 365, 3650))
    epsilon_1 = BloomRappor(**PARAMS).privacy
    print(
        f"\nPer-person epsilon at delta 1e-9 of one report per night (epsilon_1 = "
        f"{epsilon_1.epsilon:.4f}, epsilon_inf = {epsilon_1.epsilon_infinity:.4f}):"
    )
    for row in ledger_rows:
        kind = "memoized (same user, value)" if row["memoized"] else "fresh permanent response"
        print(
            f"  {kind:<28} x{row['nights']:<5} eps = {row['epsilon']:9.4f} "
            f"({row['method']}, {row['seconds']:.3f} s)"
        )
    if arguments.json:
        arguments.json.write_text(json.dumps({"rows": rows, "accounting": ledger_rows}, indent=2))


if __name__ == "__main__":
    main()
