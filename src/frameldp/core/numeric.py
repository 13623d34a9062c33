"""Numbers on a public interval: their checks, and the exact sampler of the window mechanisms.

A numeric column is privatized on a public interval ``[lo, hi]`` (:class:`Bounds`): values are
checked against it (or clipped into it) and mapped to ``u = (x - lo) / (hi - lo)`` in ``[0, 1]``
(:func:`unit_values`).

The window kernel
-----------------
The Piecewise mechanism (Wang et al., ICDE 2019) and Square Wave (Li et al., SIGMOD 2020) draw an
output from a density with two levels: high on a window around the input, low elsewhere, the
ratio of the levels ``e^epsilon``. A float density cannot be sampled exactly (Mironov, CCS 2012:
the float rounding of a continuous sampler leaks the input), so frameldp samples the discrete law
it stands for (:class:`Window`): the output range is cut into ``M = 2**32`` cells, of which a run
of ``H`` consecutive cells (the window) starts at cell ``S``; a cell of the window is drawn with
probability ``A / T`` and every other cell with ``B / T``, where ``A / B <= e^epsilon`` are
integers and ``T = H A + (M - H) B <= 2**64``. One uniform 64-bit word ``U`` picks the cell by
inverse transform: ``U < H A`` gives cell ``S + U // A``; otherwise ``V = (U - H A) // B`` is the
``V``-th cell outside the window, and the ``2**64 - T`` words left over are rejected and drawn
again (probability below ``(H e^epsilon + M) / 2**64 + 2**-39``: under ``2**-28`` up to
epsilon 10). Every probability is exact, so the realized privacy loss of
any output is ``ln(A / B)`` at most, stated rounded up. The window starts at
``S = u (M - H)``, rounded to an integer at random (up with probability equal to the fraction,
compared with 53 bits of a second 64-bit word), so the window's mean position is exactly linear
in ``u``: the estimators built on it are unbiased (up to the float rounding of ``u``, and
``2**-53`` of a cell from the comparison). The report is the drawn cell's centre.

References
----------
.. [1] I. Mironov, "On Significance of the Least Significant Bits for Differential Privacy",
   CCS 2012.
.. [2] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin, G. Yu, "Collecting and
   Analyzing Multidimensional Data with Local Differential Privacy", ICDE 2019.
.. [3] Z. Li, T. Wang, M. Lopuhaä-Zwakenberg, N. Li, B. Škoric, "Estimating Numerical
   Distributions under Local Differential Privacy", SIGMOD 2020.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.accounting import PiecewiseDensityEvent
from frameldp.accounting.rounding import float_up, log_upper
from frameldp.arguments import check_number
from frameldp.core.randomness import Rows
from frameldp.errors import DomainError, ParameterError, shown

__all__ = ["CELLS", "Bounds", "Window", "round_at_random", "unit_values"]

CELL_BITS: Final = 32
CELLS: Final = 1 << CELL_BITS
"""Cells of a window mechanism's output range."""

_WORD: Final = 1 << 64
_MARGIN: Final = 2.0**-40  # relative margin of e^epsilon computed in floating point
GRID_TOLERANCE: Final = 0.01
"""How far (in cells) a report read back may lie from a cell centre: the float rounding of a
report written in the column's units is below ``2**-11`` of a cell within bounds no narrower
than ``2**-10`` of their magnitude (:meth:`Bounds.coerce`), and a value written into a report
column lands this close to a centre with probability ``2 GRID_TOLERANCE`` only."""
_NARROWEST: Final = 2.0**-10
_COIN_BITS: Final = 53
_COIN: Final = float(1 << _COIN_BITS)


@dataclass(frozen=True)
class Bounds:
    """The public interval ``[lo, hi]`` of a numeric column (finite, ``lo < hi``)."""

    lo: float
    hi: float

    @classmethod
    def coerce(cls, owner: str, value: object) -> Bounds:
        """``value`` (a pair ``(lo, hi)`` or a :class:`Bounds`) checked."""
        if isinstance(value, Bounds):
            return value
        if not isinstance(value, tuple | list) or len(value) != 2:
            raise ParameterError(
                f"{owner}: bounds must be a pair (lo, hi), got {shown(value)}", parameter="bounds"
            )
        lo, hi = (check_number(owner, "bounds", item) for item in value)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ParameterError(
                f"{owner}: bounds must be finite with lo < hi, got {shown(value)}",
                parameter="bounds",
            )
        if not math.isfinite(hi - lo):
            raise ParameterError(
                f"{owner}: bounds are too far apart for a float, got {shown(value)}",
                parameter="bounds",
            )
        if hi - lo < _NARROWEST * max(abs(lo), abs(hi)) or (hi - lo) / 2 < 2.0**-1000:
            raise ParameterError(
                f"{owner}: bounds {shown(value)} are too narrow for their magnitude: reports "
                "written as float64 would lose their precision; subtract a public offset from "
                f"the values first (bounds need hi - lo >= {_NARROWEST:g} max(|lo|, |hi|))",
                parameter="bounds",
            )
        return cls(lo, hi)

    @property
    def width(self) -> float:
        """``hi - lo``."""
        return self.hi - self.lo

    @property
    def half(self) -> float:
        """Half the width: a normalized value ``t`` in ``[-1, 1]`` is ``centre + half t``."""
        return self.width / 2

    @property
    def centre(self) -> float:
        """The interval's midpoint."""
        return (self.hi + self.lo) / 2

    def to_json(self) -> list[float]:
        """``[lo, hi]``."""
        return [self.lo, self.hi]


def unit_values(
    values: pa.Array | pa.ChunkedArray,
    bounds: Bounds,
    *,
    clip: bool,
    column: str,
    row_start: int,
    owner: str,
) -> NDArray[np.float64]:
    """The values of one batch of a numeric column mapped to ``[0, 1]`` by ``bounds``.

    Integer, float and decimal columns are read as floats. A null, a NaN or (without ``clip``)
    a value outside ``bounds`` raises a :class:`~frameldp.errors.DomainError` naming the
    column, the row (``row_start`` the first) and the value; ``clip`` moves values outside the
    bounds to the nearer bound (NaN is still refused).
    """
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    kind = array.type
    if pa.types.is_dictionary(kind):
        array = array.dictionary_decode()
        kind = array.type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)):
        raise DomainError(
            f"column {shown(column)}: {owner} takes numbers (integer, float or decimal), "
            f"got a column of type {shown(str(kind))}",
            column=column,
        )
    if array.null_count:
        first = int(np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False))[0])
        raise DomainError(
            f"column {shown(column)}: null at row {row_start + first} ({array.null_count} nulls "
            f"in the {len(array)} rows checked); {owner} has no null report: drop or impute "
            "nulls first",
            column=column,
        )
    # safe=False: integers beyond 2**53 are rounded to the nearest float (not refused by Arrow)
    numbers = np.asarray(
        pc.cast(array, pa.float64(), safe=False).to_numpy(zero_copy_only=False), float
    )
    bad = np.isnan(numbers)
    if not clip:
        bad |= (numbers < bounds.lo) | (numbers > bounds.hi)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        shown_value = array[first].as_py()
        what = "NaN" if math.isnan(numbers[first]) else f"outside bounds {bounds.to_json()}"
        hint = "" if math.isnan(numbers[first]) else "; pass clip=True to clip values into them"
        raise DomainError(
            f"column {shown(column)}: value {shown(shown_value)} at row {row_start + first} is "
            f"{what} ({int(bad.sum())} such values in the {numbers.size} rows checked){hint}",
            column=column,
        )
    unit = (numbers - bounds.lo) / bounds.width
    np.clip(unit, 0.0, 1.0, out=unit)
    return unit


def round_at_random(position: NDArray[np.float64], words: NDArray[np.uint64]) -> NDArray[np.int64]:
    """``floor(position)``, plus one with probability ``frac(position)``: an integer whose mean
    is ``position``. The coin compares the top 53 bits ``w`` of each word with
    ``frac * 2**53`` (``P[w < that] = frac`` to within ``2**-53``, below the float rounding
    of ``position`` itself).
    ``position`` must be ``>= 0`` and below ``2**53``."""
    low = np.floor(position)
    threshold = np.subtract(position, low)  # exact: both floats share position's exponent range
    threshold *= _COIN  # exact scaling
    coins = words >> np.uint64(64 - _COIN_BITS)
    # below 2**53, the integers compare exactly with the float thresholds
    up = coins.view(np.int64) < threshold
    result = low.astype(np.int64)
    result += up
    return result


@dataclass(frozen=True)
class Window:
    """The exact discrete law of a window mechanism (see the module docstring): ``cells`` (M)
    cells, a window of ``width`` (H) of them, drawn in proportions ``high`` (A) inside and
    ``low`` (B) outside."""

    cells: int
    width: int
    high: int
    low: int

    @classmethod
    def realize(cls, owner: str, epsilon: float, fraction: float) -> Window:
        """The window covering ``fraction`` of the range with ``A / B <= e^epsilon`` as large
        as the 64-bit grid allows (rounded toward more noise)."""
        cells = CELLS
        width = min(cells - 1, max(1, round(fraction * cells)))
        outside = cells - width
        ratio = math.exp(min(epsilon, 700.0))
        # B <= 2**64 / (H e^eps + M - H) and A <= B e^eps (each rounded down past the float
        # error), so T <= 2**64; A >= 2**32 here, so A / B is e^eps to within 2**-32.
        # (at least 1: past epsilon ~ 44, e^eps exceeds the 64-bit grid and A / B is realized
        # as large as it allows, below e^eps: more noise than asked, stated as realized)
        low = max(1, math.floor(_WORD / (width * ratio + outside) * (1 - _MARGIN)))
        high = min(
            int(Fraction(low) * Fraction(ratio * (1 - _MARGIN))),
            (_WORD - outside * low) // width,
        )
        if high <= low:
            raise ParameterError(
                f"{owner}: epsilon={epsilon!r} is too small to realize on {cells} cells; the "
                "reports would be uniform noise",
                parameter="epsilon",
            )
        return cls(cells, width, high, low)

    @property
    def total(self) -> int:
        """``T = H A + (M - H) B``: the words that are not rejected."""
        return self.width * self.high + (self.cells - self.width) * self.low

    @property
    def ratio(self) -> Fraction:
        """The realized ``A / B``: the largest ratio of two inputs' probabilities of a cell."""
        return Fraction(self.high, self.low)

    def event(self) -> PiecewiseDensityEvent:
        """The exact loss of the worst pair (the interval's two ends): ``ln(A / B)`` and the
        disjoint mass, each rounded up."""
        return PiecewiseDensityEvent(log_upper(self.ratio), float_up(self.disjoint_mass))

    @property
    def disjoint_mass(self) -> Fraction:
        """The mass, under the lowest input, of the cells where the loss against the highest
        input is not 0: its window cells outside theirs and theirs outside its own, ``D (A + B)
        / T`` for ``D = min(H, M - H)`` cells each."""
        disjoint = min(self.width, self.cells - self.width)
        return Fraction(disjoint * (self.high + self.low), self.total)

    def starts(self, unit: NDArray[np.float64], words: NDArray[np.uint64]) -> NDArray[np.int64]:
        """The window's first cell for inputs ``unit`` in ``[0, 1]``: ``u (M - H)`` rounded at
        random by ``words``."""
        return round_at_random(unit * float(self.cells - self.width), words)

    def draw(
        self,
        starts: NDArray[np.int64],
        rows: Rows,
        purpose: str,
        at: NDArray[np.int64] | None = None,
    ) -> NDArray[np.int64]:
        """One cell per row, for windows starting at ``starts``; the 64-bit words of round
        ``r`` come from purpose ``f"{purpose} {r}"`` of ``rows`` (round 0 for every row, later
        rounds for the rows whose word was rejected). ``at``: the positions in ``rows`` of the
        rows drawn (all of them by default)."""

        def words(round_: int) -> NDArray[np.uint64]:
            drawn = rows.words(f"{purpose} {round_}", 1)[:, 0]
            return drawn if at is None else drawn[at]

        cells, rejected = self._cells(words(0), starts)
        round_ = 1
        while rejected.size:
            words_ = words(round_)[rejected]
            found, again = self._cells(words_, starts[rejected])
            cells[rejected] = found
            rejected = rejected[again]
            round_ += 1
        return cells

    def _cells(
        self, words: NDArray[np.uint64], starts: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The cell each word picks (inverse transform), and the positions of the rejected
        words (beyond ``T``), whose cells are to be drawn again."""
        inside = np.uint64(self.width * self.high)
        hit = words < inside
        offset = (words // np.uint64(self.high)).astype(np.int64)
        np.add(offset, starts, out=offset)  # a cell of the window
        other = words - inside  # wraps for the window's words, whose result is not used
        np.floor_divide(other, np.uint64(self.low), out=other)
        rejected = np.flatnonzero(~hit & (other >= np.uint64(self.cells - self.width)))
        outer = other.astype(np.int64)
        outer += self.width * (outer >= starts)  # the cells after the window skip it
        return np.where(hit, offset, outer), rejected

    def on_grid(self, cells: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether each (fractional) cell index read back from a report is a cell centre, to
        within :data:`GRID_TOLERANCE`."""
        nearest = np.rint(cells)
        inside = (nearest >= 0) & (nearest < self.cells)
        return inside & (np.abs(cells - nearest) <= GRID_TOLERANCE)

    # ------------------------------------------------------------------ moments of the law

    def centre_moments(self, start: float) -> tuple[float, float]:
        """``E[c]`` and ``E[c^2]`` of the centred cell ``c = J + 1/2 - M/2`` for a window at
        integer ``start`` (exact sums, in floating point)."""
        m, h = self.cells, self.width
        a, b = self.high / self.total, self.low / self.total
        first = start + 0.5 - m / 2  # the window's first centred cell
        window_sum = h * first + h * (h - 1) / 2
        window_squares = h * first * first + first * h * (h - 1) + (h - 1) * h * (2 * h - 1) / 6
        all_squares = (m**3 - m) / 12
        mean = (a - b) * window_sum
        square = a * window_squares + b * (all_squares - window_squares)
        return mean, square

    def moments(self, unit: float) -> tuple[float, float]:
        """``E[c]`` and ``E[c^2]`` for the input ``unit`` (the window's start rounded at
        random between two cells)."""
        position = unit * (self.cells - self.width)
        low = math.floor(position)
        weight = position - low
        mean_low, square_low = self.centre_moments(low)
        if weight == 0.0:
            return mean_low, square_low
        mean_high, square_high = self.centre_moments(low + 1)
        return (
            (1 - weight) * mean_low + weight * mean_high,
            (1 - weight) * square_low + weight * square_high,
        )

    @property
    def slope(self) -> float:
        """``dE[c] / du``: ``(A - B) H (M - H) / T``."""
        return (self.high - self.low) * self.width * (self.cells - self.width) / self.total
