"""``frameldp.plot.plot_privacy``: two panels, one line per conversion method, the reported
minimum equal to the accountant's own answer (matplotlib's Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

import frameldp
from frameldp.plot import plot_privacy

TITLES = ["ε(δ) by method", "Rényi DP curve"]
METHODS = ["basic", "pld", "rdp", "zcdp", "zcdp_bun_steinke"]
DELTAS = [1e-10, 1e-7, 1e-5, 1e-3]
ORDERS = [1.5, 2.0, 4.0, 16.0, 128.0]

KRR = frameldp.RandomizedResponse(1.0, domain=["a", "b", "c"]).privacy
RAPPOR = frameldp.Rappor(epsilon=2.0, domain=["x", "y", "z", "w"]).privacy
NIGHTLY = frameldp.Accountant().compose(frameldp.compose([KRR, RAPPOR]), count=30)

# What may be plotted, and the accountant that answers for it.
PRIVACY: dict[str, tuple[Any, frameldp.Accountant]] = {
    "guarantee": (KRR, frameldp.Accountant().compose(KRR)),
    "composed-guarantee": (
        frameldp.compose([KRR, RAPPOR]),
        frameldp.Accountant().compose(KRR).compose(RAPPOR),
    ),
    "accountant": (NIGHTLY, NIGHTLY),
}


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    plt.close("all")  # figures another module's test left open in this worker
    yield
    plt.close("all")


def _lines_by_label(axis: Any) -> dict[str, Any]:
    return {line.get_label(): line for line in axis.get_lines()}


@pytest.mark.parametrize("kind", list(PRIVACY))
def test_two_panels_with_a_line_per_method_and_the_reported_minimum(kind: str) -> None:
    privacy, accountant = PRIVACY[kind]

    figure = plot_privacy(privacy, deltas=DELTAS, orders=ORDERS)

    assert isinstance(figure, Figure)
    assert [axis.get_title() for axis in figure.axes] == TITLES
    left, right = figure.axes
    lines = _lines_by_label(left)
    assert len(left.get_lines()) == len(METHODS) + 1
    assert sorted(lines) == sorted([*METHODS, "reported (min)"])
    reported = lines["reported (min)"]
    assert list(reported.get_xdata()) == DELTAS
    assert list(reported.get_ydata()) == [accountant.epsilon(delta) for delta in DELTAS]
    for method in METHODS:
        expected = [
            next(c.epsilon for c in accountant.explain(d).conversions if c.method == method)
            for d in DELTAS
        ]
        assert list(lines[method].get_ydata()) == expected
        assert all(
            best <= value
            for best, value in zip(reported.get_ydata(), lines[method].get_ydata(), strict=True)
        )
    assert left.get_xscale() == "log"
    curves = _lines_by_label(right)
    assert list(curves["RDP(α)"].get_ydata()) == [accountant.rdp(a) for a in ORDERS]
    np.testing.assert_array_equal(
        curves["ρα (zCDP)"].get_ydata(), np.array(ORDERS) * accountant.rho
    )
    assert list(curves["pure ε"].get_ydata()) == [accountant.pure_epsilon] * 2


def test_default_grids() -> None:
    """30 deltas from 1e-12 to 1e-2 and 60 orders from 1.01 to 1000, as documented."""
    figure = plot_privacy(KRR)

    left, right = figure.axes
    reported = _lines_by_label(left)["reported (min)"]
    np.testing.assert_array_equal(reported.get_xdata(), np.logspace(-12, -2, 30))
    rdp = _lines_by_label(right)["RDP(α)"]
    np.testing.assert_array_equal(rdp.get_xdata(), np.geomspace(1.01, 1000.0, 60))


def test_a_gaussian_accountant_has_no_pure_epsilon_line() -> None:
    """Without a pure epsilon (Gaussian noise) the right panel has no ``pure ε`` line."""
    accountant = frameldp.Accountant().compose(frameldp.GaussianEvent(2.0, 1.0), count=4)

    figure = plot_privacy(accountant, deltas=DELTAS, orders=ORDERS)

    left, right = figure.axes
    assert "pure ε" not in _lines_by_label(right)
    reported = _lines_by_label(left)["reported (min)"]
    assert list(reported.get_ydata()) == [accountant.epsilon(delta) for delta in DELTAS]


def test_the_figure_saves_as_png(tmp_path: Path) -> None:
    figure = plot_privacy(NIGHTLY, deltas=DELTAS, figsize=(6.0, 3.0))
    path = tmp_path / "privacy.png"

    figure.savefig(path)

    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 1000
    assert tuple(figure.get_size_inches()) == (6.0, 3.0)


@pytest.mark.parametrize(
    "privacy",
    [1.0, None, "rappor", frameldp.RandomizedResponseEvent(1.0), [KRR]],
    ids=["float", "none", "str", "event", "list"],
)
def test_anything_else_is_refused(privacy: Any) -> None:
    with pytest.raises(frameldp.ParameterError, match=r"PrivacyGuarantee or an Accountant, got"):
        plot_privacy(privacy)
    assert plt.get_fignums() == []
