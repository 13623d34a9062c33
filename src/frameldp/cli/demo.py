"""``frameldp demo``: privatize the embedded flights data and show estimates beside the truth.

Each person's destination is privatized with RAPPOR, their carrier with k-ary randomized
response, and their set of purchased services with k-RAPPOR (at most 3 items), at several
epsilons. Each estimated table is printed next to the true counts, with standard errors, 95%
intervals, the error in standard errors, and the privacy guarantee of the reports. Their fare (a
number on public bounds) is released twice more: by the mean mechanism of smallest worst-case
variance for its mean, and by Square Wave for its quartiles.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import frameldp
from frameldp.accounting.guarantee import INSECURE
from frameldp.core.encoding import Domain
from frameldp.core.mechanisms import Capability
from frameldp.core.numeric import Bounds
from frameldp.datasets import FARE_BOUNDS, FLIGHTS_DOMAINS, load_flights


@dataclass(frozen=True)
class DemoResult:
    """One privatized column at one epsilon, compared with the truth."""

    column: str
    mechanism: Any  # the demo's own RAPPOR and k-RR mechanisms
    table: frameldp.FrequencyTable
    truth: pd.Series
    seconds: float

    @property
    def z_scores(self) -> np.ndarray[Any, Any]:
        """(estimate - truth) / standard error, per bucket."""
        frame = self.table.frame
        scores: np.ndarray[Any, Any] = (frame["count"].to_numpy() - self.truth.to_numpy()) / frame[
            "std_error"
        ].to_numpy()
        return scores

    @property
    def max_error(self) -> float:
        """Largest |estimated - true| frequency over the buckets (share of all rows)."""
        estimated = self.table.frame["frequency"].to_numpy()
        return float(np.abs(estimated - self.truth.to_numpy() / self.table.n).max())

    @property
    def mechanism_name(self) -> str:
        """Short name of the mechanism for display."""
        mechanism = self.mechanism
        if Capability.SETS in mechanism.capabilities and mechanism.max_weight > 1:
            return f"k-RAPPOR (m={mechanism.max_weight})"
        if Capability.BIT_VECTORS in mechanism.capabilities:
            return str(mechanism.title)
        return f"{len(mechanism.categories)}-ary RR"


def true_counts(frame: pd.DataFrame, column: str) -> pd.Series:
    """Exact counts of every domain value (for set-valued cells, of every item)."""
    values = frame[column].explode() if column == "services" else frame[column]
    counts = values.astype(object).value_counts()
    return counts.reindex(list(FLIGHTS_DOMAINS[column]), fill_value=0)


def privatize_and_estimate(
    frame: pd.DataFrame,
    column: str,
    mechanism: Any,
    seed: int | None,
) -> DemoResult:
    """Privatize one column, debias it, and time both steps."""
    start = time.perf_counter()
    reports = frame.ldp.privatize({column: mechanism}, seed=seed)
    table = reports.ldp.debias(column)
    seconds = time.perf_counter() - start
    return DemoResult(column, mechanism, table, true_counts(frame, column), seconds)


def demo_mechanisms(epsilon: float) -> dict[str, Any]:
    """The mechanisms the demo runs at one epsilon."""
    return {
        "dest": frameldp.Rappor(epsilon=epsilon, domain=Domain.coerce(FLIGHTS_DOMAINS["dest"])),
        "carrier": frameldp.RandomizedResponse(
            epsilon, domain=Domain.coerce(FLIGHTS_DOMAINS["carrier"])
        ),
        "services": frameldp.Rappor(
            epsilon=epsilon, domain=Domain.coerce(FLIGHTS_DOMAINS["services"]), max_weight=3
        ),
    }


def run_demo(
    *, seed: int | None, epsilons: tuple[float, ...], top: int, console: Console | None = None
) -> list[DemoResult]:
    """Run the demo and print its tables; returns the results (used by the tests)."""
    console = console or Console()
    frame = load_flights()
    console.print(
        f"[bold]frameldp demo[/]: {len(frame):,} synthetic flights; noise from "
        + (
            f"a seed ([bold]{INSECURE}[/]; for a demo only)"
            if seed is not None
            else "a fresh secret key (AES-256-CTR)"
        )
    )
    results = []
    for epsilon in epsilons:
        for column, mechanism in demo_mechanisms(epsilon).items():
            result = privatize_and_estimate(frame, column, mechanism, seed)
            console.print(_render(result, top))
            results.append(result)
    console.print(_summary(results))
    console.print(_privacy(results, seeded=seed is not None))
    console.print(_fares(frame, epsilons, seed))
    return results


def _fares(frame: pd.DataFrame, epsilons: tuple[float, ...], seed: int | None) -> Table:
    """The fare's mean (the best mean mechanism) and quartiles (Square Wave) at each epsilon,
    beside the truth: two releases of their own per epsilon."""
    fares = frame[["fare"]]
    truth = fares["fare"]
    title = (
        f"fare (dollars, public bounds {FARE_BOUNDS[0]:g} to {FARE_BOUNDS[1]:g}): mean and "
        "quartiles, each a release of its own at ε"
    )
    table = Table(title=escape(title), title_justify="left")
    for header in ("ε", "statistic", "mechanism", "true", "estimate", "std err", "z"):
        table.add_column(
            header, justify="left" if header in ("statistic", "mechanism") else "right"
        )
    for epsilon in epsilons:
        chosen = frameldp.choose_mechanism(epsilon, bounds=FARE_BOUNDS)
        mean = fares.ldp.privatize({"fare": chosen}, seed=seed).ldp.mean("fare")
        rows = [("mean", chosen.title, float(truth.mean()), mean.mean, mean.std_error)]
        wave = frameldp.SquareWave(epsilon, bounds=Bounds(*FARE_BOUNDS))
        found = fares.ldp.privatize({"fare": wave}, seed=seed).ldp.distribution("fare")
        quartiles = found.quantiles([0.25, 0.5, 0.75])
        for q, value, error in zip(
            quartiles["q"], quartiles["value"], quartiles["std_error"], strict=True
        ):
            rows.append((f"quantile {q:g}", wave.title, float(truth.quantile(q)), value, error))
        for statistic, mechanism, true, estimate, error in rows:
            table.add_row(
                f"{epsilon:g}",
                statistic,
                mechanism,
                f"{true:,.1f}",
                f"{estimate:,.1f}",
                f"{error:,.1f}",
                f"{(estimate - true) / error:+.2f}",
            )
    return table


def _privacy(results: list[DemoResult], *, seeded: bool = False) -> Table:
    """Per person: the columns of one release composed, at delta = 1e-9, by every method."""
    delta = 1e-9
    mark = f" [{INSECURE}]" if seeded else ""
    table = Table(
        title=escape(
            f"Privacy per person: the three columns of one release, composed (δ = {delta:g})" + mark
        ),
        title_justify="left",
    )
    for header in ("ε per column", "pure ε (basic)", "ρ (zCDP)", "ε at δ", "method"):
        table.add_column(header, justify="left" if header == "method" else "right")
    by_epsilon: dict[float, list[DemoResult]] = {}
    for result in results:
        by_epsilon.setdefault(float(result.mechanism.epsilon or 0.0), []).append(result)
    for epsilon, group in by_epsilon.items():
        release = frameldp.compose(result.table.privacy for result in group)
        best = release.explain(delta).best
        table.add_row(
            f"{epsilon:g}",
            f"{release.epsilon:.4f}",
            f"{release.rho:.4f}",
            f"{best.epsilon:.4f}",
            best.method,
        )
    return table


def _summary(results: list[DemoResult]) -> Table:
    table = Table(title="Summary: accuracy at each epsilon", title_justify="left")
    for header in (
        "column",
        "mechanism",
        "ε (realized)",
        "std err (rows)",
        "max |error|",
        "max |z|",
        "time",
    ):
        table.add_column(header, justify="left" if header in ("column", "mechanism") else "right")
    for result in results:
        table.add_row(
            result.column,
            result.mechanism_name,
            f"{result.table.privacy.epsilon:.6f}",
            f"{result.table.frame['std_error'].median():,.0f}",
            f"{result.max_error:.2%}",
            f"{np.abs(result.z_scores).max():.2f}",
            f"{result.seconds * 1000:.0f} ms",
        )
    return table


def _render(result: DemoResult, top: int) -> Table:
    frame = result.table.frame
    z = result.z_scores
    title = (
        f"{result.column} · {result.mechanism_name} · ε = {result.table.privacy.epsilon:.4g} "
        f"pure LDP per report · n = {result.table.n:,}"
    )
    table = Table(title=title, title_justify="left")
    for header in ("category", "true", "estimate", "std err", "95% interval", "z"):
        table.add_column(header, justify="left" if header == "category" else "right")
    order = np.argsort(-result.truth.to_numpy(), kind="stable")[:top]
    for i in order:
        row = frame.iloc[int(i)]
        table.add_row(
            str(row["category"]),
            f"{int(result.truth.iloc[int(i)]):,}",
            f"{row['count']:,.0f}",
            f"{row['std_error']:,.0f}",
            f"[{row['ci_low']:,.0f}, {row['ci_high']:,.0f}]",
            f"{z[int(i)]:+.2f}",
        )
    return table
