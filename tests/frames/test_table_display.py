"""A FrequencyTable in a notebook: HTML sorted by count with the guarantee and n in the
caption, a readable repr, top(k), significant(level), and plot() with the truth marked."""

from __future__ import annotations

import html
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import polars as pl
import pytest

import frameldp
from frameldp.errors import FrameLDPError

matplotlib.use("Agg")

DOMAIN = ["AA", "DL", "UA", "WN"]
TRUTH = {"AA": 500, "DL": 300, "UA": 200, "WN": 0}


def _reports(library: str) -> Any:
    values = [label for label, count in TRUTH.items() for _ in range(count)]
    frame = pd.DataFrame({"carrier": values, "month": [i % 2 + 1 for i in range(len(values))]})
    native = frame if library == "pandas" else pl.from_pandas(frame)
    return native.ldp.krr("carrier", 4.0, domain=DOMAIN, seed=3)


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_html_and_repr_are_sorted_rounded_and_captioned(library: str) -> None:
    table = _reports(library).ldp.debias("carrier")
    page = table._repr_html_()
    assert page.startswith("<table><caption>")
    caption = html.unescape(page.split("<caption>")[1].split("</caption>")[0])
    assert "n = 1,000" in caption
    assert str(table.privacy) in caption
    assert "INSECURE" in caption  # a seeded run says so wherever it shows
    # What an attacker learns about one person: k-RR at 4 takes a belief of 1% to
    # 1 / (1 + 99 e^-4) = 35.546%, shown rounded up.
    assert 0.355 < 1.0 / (1.0 + 99.0 * np.exp(-table.privacy.epsilon)) < 0.356
    assert (
        "from these reports, an attacker who gave 1% to a person's value reaches at most 35.6%"
        in (caption)
    )
    cells = [html.unescape(c.split(">")[-1]) for c in page.split("</td>")[:-1]]
    labels = cells[0::6]
    assert labels == list(table.top(4)["category"])  # largest count first
    counts = [float(c.replace(",", "")) for c in cells[1::6]]
    assert counts == sorted(counts, reverse=True)
    # Two significant digits of the typical standard error: its decimals for every count.
    typical = float(np.median(table.estimate.std_errors))
    decimals = max(0, 1 - int(np.floor(np.log10(typical))))
    assert {len(c.partition(".")[2]) for c in cells[1::6]} == {decimals}
    lines = repr(table).splitlines()
    assert lines[0].startswith("FrequencyTable: carrier: n = 1,000 reports")
    header = next(i for i, line in enumerate(lines) if not line.startswith(("F", "  ")))
    assert (
        " ".join(lines[:header])
        .replace("   ", " ")
        .startswith(  # the wrapped caption
            f"FrequencyTable: {table._caption()}"[:60]
        )
    )
    assert lines[header].split() == [
        "category",
        "count",
        "frequency",
        "std_error",
        "ci_low",
        "ci_high",
    ]


def test_the_caption_shows_probabilities_to_three_significant_digits() -> None:
    """The caption's guarantee shows its realized probabilities to 3 significant digits (it
    printed 17 before: keep_probability=0.8700485065612896); the guarantee keeps them exact."""
    table = _reports("pandas").ldp.debias("carrier")
    kept = table.privacy.parameters["keep_probability"]
    assert f"keep_probability={kept:.3g})" in table._caption()
    assert repr(kept) not in table._caption()


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_top_and_significant(library: str) -> None:
    table = _reports(library).ldp.debias("carrier", by="month")
    top = table.top(2)
    assert isinstance(top, pd.DataFrame if library == "pandas" else pl.DataFrame)
    rows = top.to_dicts() if library == "polars" else top.to_dict("records")
    assert [(r["month"], r["category"]) for r in rows] == [
        (1, "AA"),
        (1, "DL"),
        (2, "AA"),
        (2, "DL"),
    ]
    significant = table.significant()
    frame = significant if library == "pandas" else significant.to_pandas()
    assert (frame["ci_low"] > 0).all()
    assert set(frame["category"]) == {"AA", "DL", "UA"}  # WN's interval holds 0 (P ~ 0.95)
    with pytest.raises(FrameLDPError, match="k must be"):
        table.top(0)
    with pytest.raises(FrameLDPError, match="unbiased"):
        table.consistent().significant()


def test_plot_marks_the_truth_and_draws_one_panel_per_group() -> None:
    table = _reports("pandas").ldp.debias("carrier")
    figure = table.plot(truth=TRUTH)
    (axis,) = figure.axes
    assert axis.get_legend() is not None  # the truth is marked
    (truth_line,) = [line for line in axis.get_lines() if line.get_label() == "truth"]
    np.testing.assert_array_equal(truth_line.get_xdata(), [0, 200, 300, 500])
    grouped = _reports("pandas").ldp.debias("carrier", by="month")
    titles = [a.get_title() for a in grouped.plot().axes]
    assert titles == [
        "carrier | month=1 (n = 500, 95% intervals)",
        "carrier | month=2 (n = 500, 95% intervals)",
    ]
    joint_frame = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["u", "v", "v", "u"] * 25})
    joint = joint_frame.ldp.privatize(
        {
            "a": frameldp.RandomizedResponse(3.0, domain=["x", "y"]),
            "b": frameldp.RandomizedResponse(3.0, domain=["u", "v"]),
        },
        seed=1,
    ).ldp.debias(["a", "b"])
    labels = [t.get_text() for t in joint.plot().axes[0].get_yticklabels()]
    assert set(labels) == {"x × u", "x × v", "y × u", "y × v"}
    with pytest.raises(FrameLDPError, match="buckets"):
        table.plot(truth=[1, 2])
    # A grouped table's truth maps group keys to counts; a flat {label: count} matched no group
    # and silently drew no truth (issue 37): now a frameldp error says what it takes.
    with pytest.raises(FrameLDPError, match=r"maps each group key \(here 1, \.\.\.\)"):
        grouped.plot(truth=TRUTH)
    marked = grouped.plot(truth={1: {"AA": 250}, 2: {"AA": 250}})
    assert all(axis.get_legend() is not None for axis in marked.axes)


def test_a_table_fits_an_80_column_terminal() -> None:
    """Issue 37: the caption wraps and long labels give way, so no number runs off the edge of
    an 80-column terminal; the numbers themselves are never cut."""
    long = "/a/very/long/url/path/that/goes/on/and/on/for/a/while/index.html"
    other = long.replace("index", "about")  # the same start: the cut keeps both ends
    frame = pd.DataFrame({"u": [long, other] * 500, "g": ["x"] * 600 + ["y"] * 400})
    reports = frame.ldp.krr("u", 40.0, domain=sorted({long, other}), seed=1)
    for table in (reports.ldp.debias("u"), reports.ldp.debias("u", by="g")):
        lines = repr(table).splitlines()
        assert max(map(len, lines)) <= 80, lines
        labels = {line.split()[-6] for line in lines if line.startswith(("/", "x", "y"))}
        assert len(labels) == 2, labels
        counts = table.to_pandas()["count"].round().astype(int)
        text = repr(table).replace(",", "")
        assert all(str(count) in text for count in counts)
