"""Draw docs/images/trade_off.png: what a test of one person's value can reach under a few
guarantees (frameldp.plot.plot_risk). Run: python scripts/make_risk_figure.py"""

from __future__ import annotations

from pathlib import Path

import matplotlib

import frameldp
from frameldp.plot import plot_risk

matplotlib.use("Agg")

TARGET = Path(__file__).resolve().parents[1] / "docs" / "images" / "trade_off.png"


def main() -> None:
    domain = list(range(12))
    local = frameldp.RandomizedResponse(1.0, domain=domain).privacy
    figure = plot_risk(
        {
            "one report, ε = 1": local,
            "one report, ε = 3": frameldp.RandomizedResponse(3.0, domain=domain).privacy,
            "10 reports, ε = 1 each": frameldp.compose([local] * 10),
            "ε0 = 4 shuffled among 10⁴": frameldp.amplify_by_shuffling(
                frameldp.RandomizedResponse(4.0, domain=domain).privacy, 10_000
            ),
        }
    )
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(TARGET, dpi=100)
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
