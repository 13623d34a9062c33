r"""Open-domain heavy hitters: the prefix encoding of strings and the server's level-by-level
search (the prefix extending method of Wang, Li and Jha [1]_).

The prefix encoding
-------------------
A string ``s`` becomes ``M = max_length + 1`` bytes: its UTF-8 bytes, then ``0xFF`` up to
``M``. A string longer than ``max_length`` bytes is cut at the last character boundary that
fits, padded with ``0xFF``, and its last byte is ``0xFE`` instead: the *cut* marker. Neither
``0xFF`` nor ``0xFE`` occurs in UTF-8, so the encoding is injective on strings of at most
``max_length`` bytes, says where a string ends, and says whether it was cut (a string of exactly
``max_length`` bytes and a longer one cut there differ in their last byte).

The server's search
-------------------
Users at level ``l`` report the first ``l + 1`` bytes of their encoding (a local-hashing
report, :class:`~frameldp.core.mechanisms.PrefixExtending`). The server starts from the empty
prefix; at level ``l`` it extends every prefix it kept by every byte that keeps it a prefix of
some encoding (valid UTF-8 so far, characters that fit ``max_length``, padding only after the
end), estimates each extension's count from level ``l``'s users alone, and keeps the ``width``
largest positive ones. The last byte (``0xFF`` or the cut marker) is not selected: every kept
prefix is completed both ways, and the counts of these final candidates are estimated from the
users of the last level, which took no part in choosing them, so they are unbiased given the
candidates. Scaled by ``n / n_last`` (the last level is a uniformly random subset of the
reports), they estimate counts in the whole population.

Counting extensions
-------------------
The local-hashing family (module docstring of
:mod:`~frameldp.core.mechanisms.prefix_extending`) is linear: a prefix's hash is a sum over its
positions of ``E[a_t, x_t]``, a table of ``G = g^d`` coefficient values by 256 bytes. A report
``(a, y)`` supports the extension ``p || b`` exactly when ``E[a_l, b] = y - h_a(p) (mod g)``.
The server groups the reports by ``(p, a_l, y - h_a(p))``: by counting keys when the reports
outnumber them (``O(T g^d (g + 256))`` a block), else by sorting, where each group's matching
bytes are a contiguous run of a table sorted once per ``g``. Either way a level costs
``O(n_l T l)`` plus that, not ``O(n_l T 256)``.

References
----------
.. [1] T. Wang, N. Li, S. Jha, "Locally Differentially Private Heavy Hitter Identification",
   IEEE Transactions on Dependable and Secure Computing 18(2), 2021 (arXiv:1708.06674),
   Sec. 5 (the prefix extending method, PEM).
.. [2] R. Bassily, K. Nissim, U. Stemmer, A. Thakurta, "Practical Locally Private Heavy
   Hitters", NeurIPS 2017 (TreeHist).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

import numpy as np
from numpy.typing import NDArray

from frameldp._scipy import special
from frameldp.core.estimation import FloatArray, FrequencyEstimate, direct_variance
from frameldp.errors import ParameterError

__all__ = [
    "CUT",
    "END",
    "Discovery",
    "allowed_extensions",
    "coefficient_digits",
    "encode_prefixes",
    "extension_table",
    "search",
]

END: Final = 0xFF
"""Padding after a string's last byte (never in UTF-8)."""
CUT: Final = 0xFE
"""The last byte of a string cut at ``max_length`` (never in UTF-8)."""
_BLOCK_ENTRIES: Final = 1 << 22  # (report, prefix) pairs handled at once
_DENSE_KEYS: Final = 1 << 21  # (coefficient, residue) keys counted in an array per prefix


def encode_prefixes(values: Sequence[str], max_length: int) -> NDArray[np.uint8]:
    """``(len(values), max_length + 1)``: the prefix encoding of each string (module
    docstring)."""
    width = max_length + 1
    out = np.full((len(values), width), END, dtype=np.uint8)
    for row, value in enumerate(values):
        data = value.encode("utf-8")
        if len(data) > max_length:
            cut = max_length
            while cut > 0 and data[cut] & 0xC0 == 0x80:  # a continuation byte: move back
                cut -= 1
            data = data[:cut]
            out[row, max_length] = CUT
        out[row, : len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


def _continuations(lead: int) -> tuple[int, int, int]:
    """Continuation bytes a lead byte needs, and the range ``[low, high]`` of the first one
    (RFC 3629, Sec. 4: no overlong forms, no surrogates, nothing above U+10FFFF)."""
    if lead < 0xE0:
        return 1, 0x80, 0xBF
    if lead < 0xF0:
        return 2, 0xA0 if lead == 0xE0 else 0x80, 0x9F if lead == 0xED else 0xBF
    return 3, 0x90 if lead == 0xF0 else 0x80, 0x8F if lead == 0xF4 else 0xBF


def allowed_extensions(prefixes: NDArray[np.uint8], max_length: int) -> NDArray[np.bool_]:
    """``(T, 256)``: which bytes extend each prefix (all of one length) to a prefix of some
    encoding (module docstring)."""
    count, position = prefixes.shape
    allowed = np.zeros((count, 256), dtype=bool)
    if position == max_length:  # the last byte: complete, or cut when a character did not fit
        allowed[:, END] = True
        for row in range(count):
            prefix = prefixes[row].tobytes()
            written = prefix.index(END) if END in prefix else max_length
            allowed[row, CUT] = max_length - written < 4  # no character takes more than 4
        return allowed
    room = max_length - position  # bytes a character starting here may take
    for row in range(count):
        prefix = prefixes[row].tobytes()
        if END in prefix:
            allowed[row, END] = True
            continue
        # Walk back to the last lead byte to see whether a character is open.
        start = len(prefix)
        while start > 0 and prefix[start - 1] & 0xC0 == 0x80:
            start -= 1
        lead = prefix[start - 1] if start > 0 else None
        if lead is not None and lead >= 0xC2:
            needed, low, high = _continuations(lead)
            written = len(prefix) - start
            if written < needed:
                if written > 0:
                    low, high = 0x80, 0xBF
                allowed[row, low : high + 1] = True
                continue
        allowed[row, END] = True
        allowed[row, 0x00:0x80] = True
        for first, last, size in ((0xC2, 0xDF, 2), (0xE0, 0xEF, 3), (0xF0, 0xF4, 4)):
            if size <= room:
                allowed[row, first : last + 1] = True
    return allowed


def coefficient_digits(num_buckets: int) -> int:
    """``d``: the fewest base-``g`` digits that write every byte."""
    digits = 1
    while num_buckets**digits < 256:
        digits += 1
    return digits


@lru_cache(maxsize=8)
def extension_table(num_buckets: int) -> NDArray[np.uint8]:
    """``E[a, b] = sum_i a_i b_i (mod g)`` for every coefficient ``a`` in ``[0, g^d)`` and byte
    ``b``, both written in base ``g`` (``d`` digits, least significant first)."""
    g = num_buckets
    digits = coefficient_digits(g)
    powers = g ** np.arange(digits, dtype=np.int64)
    coefficients = (np.arange(g**digits, dtype=np.int64)[:, None] // powers) % g
    byte_digits = (np.arange(256, dtype=np.int64)[:, None] // powers) % g
    table = ((coefficients @ byte_digits.T) % g).astype(np.uint8)
    table.setflags(write=False)
    return table


@lru_cache(maxsize=2)
def _inverse_table(num_buckets: int) -> tuple[NDArray[np.uint16], NDArray[np.uint8]]:
    """For every coefficient ``a`` and answer ``u``, the bytes ``b`` with ``E[a, b] = u``: they
    are ``sorted_bytes[a, starts[a, u] : starts[a, u + 1]]`` (each row of ``E`` sorted by
    value; 16-bit offsets: about 48 MB at ``g = 251``)."""
    g = num_buckets
    table = extension_table(g)
    sorted_bytes = np.empty(table.shape, dtype=np.uint8)
    starts = np.zeros((table.shape[0], g + 1), dtype=np.uint16)
    block = max(1, (1 << 20) // g)
    for first in range(0, table.shape[0], block):
        order = np.argsort(table[first : first + block], axis=1, kind="stable")
        sorted_bytes[first : first + block] = order
        rows = table[first : first + block].astype(np.int64)
        keys = np.arange(rows.shape[0], dtype=np.int64)[:, None] * g + rows
        counts = np.bincount(keys.ravel(), minlength=rows.shape[0] * g).reshape(-1, g)
        np.cumsum(counts, axis=1, out=starts[first : first + block, 1:], dtype=np.uint16)
    starts.setflags(write=False)
    sorted_bytes.setflags(write=False)
    return starts, sorted_bytes


def prefix_hashes(
    coefficients: NDArray[np.int64], prefixes: NDArray[np.uint8], num_buckets: int
) -> NDArray[np.int64]:
    """``(n, T)``: ``h_a(p) = sum_t E[a_t, p_t] (mod g)`` of every report's coefficients (one
    row of ``(n, >= L)``) for every prefix of length ``L`` (one row of ``(T, L)``)."""
    table = extension_table(num_buckets)
    n, (count, length) = coefficients.shape[0], prefixes.shape
    total = np.zeros((n, count), dtype=np.int64)
    for t in range(length):
        total += table[coefficients[:, t][:, None], prefixes[None, :, t]]
    return total % num_buckets


def extension_counts(
    coefficients: NDArray[np.int64],
    answers: NDArray[np.int64],
    prefixes: NDArray[np.uint8],
    num_buckets: int,
) -> NDArray[np.int64]:
    """``(T, 256)``: how many reports support each extension ``p || b`` of each prefix ``p``
    (``T`` prefixes of length ``L``; reports of prefixes of length ``L + 1``, with coefficients
    ``(n, >= L + 1)`` and answers ``y``). See the module docstring."""
    g = num_buckets
    count, length = prefixes.shape
    size = extension_table(g).shape[0] * g
    totals = np.zeros((count, 256), dtype=np.int64)
    step = max(1, _BLOCK_ENTRIES // max(count, 1))
    for first in range(0, coefficients.shape[0], step):
        block = coefficients[first : first + step]
        residues = (answers[first : first + step, None] - prefix_hashes(block, prefixes, g)) % g
        groups = block[:, length][:, None] * g + residues  # (reports, T): keys a_l g + u
        # Dense counting costs O(g^d (g + 256)) per prefix whatever the block's size: worth it
        # when the block has more reports than keys.
        if size <= _DENSE_KEYS and block.shape[0] >= size // 4:
            # Count the keys of each prefix, then read each byte's matching key per a_l.
            matching = _matching_keys(g)
            for prefix in range(count):
                histogram = np.bincount(groups[:, prefix], minlength=size)
                totals[prefix] += histogram[matching].sum(axis=0)
        else:
            totals += _sparse_counts(groups, g, size)
    return totals


@lru_cache(maxsize=8)
def _matching_keys(num_buckets: int) -> NDArray[np.int64]:
    """``(G, 256)``: the key ``a g + E[a, b]`` that a report with coefficient ``a`` must have
    to support byte ``b``."""
    table = extension_table(num_buckets).astype(np.int64)
    keys = np.arange(table.shape[0], dtype=np.int64)[:, None] * num_buckets + table
    keys.setflags(write=False)
    return keys


def _sparse_counts(groups: NDArray[np.int64], num_buckets: int, size: int) -> NDArray[np.int64]:
    """:func:`extension_counts` of one block for a large ``g^(d+1)``: the distinct (prefix,
    key) pairs, and each one's matching bytes as a run of a sorted table."""
    count = groups.shape[1]
    starts, sorted_bytes = _inverse_table(num_buckets)
    keys = np.arange(count, dtype=np.int64)[None, :] * size + groups
    unique, weights = np.unique(keys.ravel(), return_counts=True)
    which, key = np.divmod(unique, size)
    coefficient, answer = np.divmod(key, num_buckets)
    begin = starts[coefficient, answer].astype(np.int64)
    lengths = starts[coefficient, answer + 1].astype(np.int64) - begin
    low = coefficient * 256 + begin  # in sorted_bytes read row by row
    # Each pair's matching bytes: its run of sorted_bytes, laid end to end.
    offsets = np.repeat(low - np.cumsum(lengths) + lengths, lengths)
    positions = offsets + np.arange(int(lengths.sum()), dtype=np.int64)
    cells = np.repeat(which * 256, lengths) + sorted_bytes.ravel()[positions]
    totals = np.bincount(cells, weights=np.repeat(weights, lengths), minlength=count * 256)
    return totals.astype(np.int64).reshape(count, 256)


def support_counts(
    coefficients: NDArray[np.int64],
    answers: NDArray[np.int64],
    strings: NDArray[np.uint8],
    num_buckets: int,
) -> NDArray[np.int64]:
    """``(C,)``: how many reports (of prefixes as long as ``strings``) support each string."""
    totals = np.zeros(strings.shape[0], dtype=np.int64)
    step = max(1, _BLOCK_ENTRIES // max(strings.shape[0], 1))
    for first in range(0, coefficients.shape[0], step):
        hashes = prefix_hashes(coefficients[first : first + step], strings, num_buckets)
        totals += np.sum(hashes == answers[first : first + step, None], axis=0)
    return totals


@dataclass(frozen=True)
class Discovery:
    """Strings found in prefix-extending reports, by decreasing count.

    Attributes
    ----------
    labels
        The discovered strings (a cut string is its first ``max_length`` bytes, whole
        characters only).
    truncated
        Whether each string was cut at ``max_length`` (longer strings share its prefix).
    counts, std_errors, p_values
        The estimated count of each string in the whole population (from the last level's
        reports, scaled by ``n / n_last``), its standard error (local-hashing noise and the
        sampling of the last level), and the one-sided p-value of "count = 0".
    n
        Number of reports; ``level_sizes`` of them at each level.
    candidates
        How many final candidates were tested (discovery needs
        ``p < significance / candidates``).
    significance
        Family-wise probability of reporting at least one candidate that nobody holds.
    """

    labels: tuple[str, ...]
    truncated: NDArray[np.bool_]
    counts: FloatArray
    std_errors: FloatArray
    p_values: FloatArray
    n: int
    level_sizes: NDArray[np.int64]
    candidates: int
    significance: float

    @property
    def estimate(self) -> FrequencyEstimate:
        """The discovered strings' counts as a :class:`FrequencyEstimate`."""
        return FrequencyEstimate(self.counts, self.std_errors**2, self.n)

    def table_columns(self) -> dict[str, NDArray[np.generic]]:
        """Columns a frequency table adds after its estimates."""
        return {"truncated": self.truncated, "p_value": self.p_values}


def _decoded(string: NDArray[np.uint8]) -> tuple[str, bool]:
    data = string.tobytes()
    end = min((i for i, byte in enumerate(data) if byte in (END, CUT)), default=len(data))
    return data[:end].decode("utf-8"), bool(data[-1] == CUT)


def search(
    extensions: Callable[[int, NDArray[np.uint8]], tuple[NDArray[np.int64], NDArray[np.int64]]],
    finals: Callable[[NDArray[np.uint8]], tuple[NDArray[np.int64], NDArray[np.int64]]],
    *,
    max_length: int,
    support: tuple[float, float],
    top: int,
    width: int,
    significance: float,
) -> Discovery:
    """The prefix extending search (module docstring).

    ``extensions(level, prefixes)`` returns ``(counts, level_sizes)``: the extension counts
    (:func:`extension_counts`) of ``prefixes`` among all reports of ``level`` and the number of
    reports at each level; ``finals(strings)`` the support counts of complete encodings among
    the reports of the last level, and the level sizes. ``support`` is local hashing's
    ``(p, 1/g)``.
    """
    if (
        isinstance(significance, bool)
        or not isinstance(significance, int | float | np.floating)
        or not 0.0 < significance < 1.0
    ):
        raise ParameterError(f"significance must be a number in (0, 1), got {significance!r}")
    keep, other = support
    kept = np.zeros((1, 0), dtype=np.uint8)
    for level in range(max_length):
        extended, sizes = extensions(level, kept)
        estimates = (extended - sizes[level] * other) / (keep - other)
        estimates[~allowed_extensions(kept, max_length)] = -np.inf
        flat = estimates.ravel()
        chosen = np.argsort(-flat, kind="stable")[:width]
        chosen = chosen[flat[chosen] > 0]
        prefix, byte = np.divmod(chosen, 256)
        kept = np.concatenate([kept[prefix], byte.astype(np.uint8)[:, None]], axis=1)
        if not kept.shape[0]:
            break
    if kept.shape[1] == max_length:
        # Every kept prefix, completed by each last byte it allows (END; CUT where a character
        # could have been cut).
        which, ends = np.nonzero(allowed_extensions(kept, max_length))
        strings = np.concatenate([kept[which], ends.astype(np.uint8)[:, None]], axis=1)
    else:
        strings = np.zeros((0, max_length + 1), dtype=np.uint8)
    supports, sizes = finals(strings)
    n, last = int(sizes.sum()), int(sizes[max_length])
    if last == 0 or not strings.shape[0]:
        empty = np.zeros(0)
        return Discovery(
            (), np.zeros(0, dtype=bool), empty, empty, empty, n, sizes, 0, significance
        )
    in_last = np.asarray((supports - last * other) / (keep - other), dtype=np.float64)
    plug_in = np.clip(in_last, 0.0, float(last))
    noise = direct_variance(plug_in, last, keep, other)
    share = plug_in / last
    # The last level is a uniformly random subset of the n reports: a hypergeometric draw.
    sampling = last * share * (1 - share) * (n - last) / max(n - 1, 1)
    scale = n / last
    counts = scale * in_last
    std_errors = scale * np.sqrt(noise + sampling)
    p_values = special.ndtr(-counts / std_errors)  # the noise term keeps std_errors > 0
    found = np.flatnonzero(p_values < significance / strings.shape[0])
    found = found[np.argsort(-counts[found], kind="stable")][:top]
    decoded = [_decoded(strings[i]) for i in found.tolist()]
    return Discovery(
        tuple(label for label, _ in decoded),
        np.array([cut for _, cut in decoded], dtype=bool),
        counts[found],
        std_errors[found],
        np.asarray(p_values[found], dtype=np.float64),
        n,
        sizes,
        int(strings.shape[0]),
        significance,
    )
