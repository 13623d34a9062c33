"""Generate the embedded ``flights`` demo dataset (``src/frameldp/datasets/flights.parquet``).

The data is entirely synthetic: 120,000 made-up US domestic flight bookings. No real passenger
or flight records were used. Airport and carrier codes are real IATA codes and the weights are
rough, hand-picked approximations of public traffic figures, chosen to give the data a realistic
shape for local-differential-privacy demos:

* ``origin`` -- one of 30 large US airports, weighted roughly by passenger traffic.
* ``dest`` -- one of 100 US airports with Zipf-like skew: a few hubs take most flights, a long
  tail has tiny counts and five small Alaskan airports of the public domain never occur.
  ``dest != origin`` always.
* ``carrier`` -- 12 US carriers with approximate domestic market shares, boosted at their hubs
  (so ``carrier`` depends on ``origin``).
* ``delay`` -- ordered buckets whose probabilities depend on the carrier (some carriers are
  markedly less punctual).
* ``services`` -- a set of 0 to 3 distinct purchased extras, with carrier-dependent skew
  (e.g. no lounge on low-cost carriers, free checked bags on WN).
* ``fare`` -- the ticket price in US dollars (float, 39 to 1,500: the public bounds of a numeric
  demo), log-normal with a carrier-dependent level (low-cost carriers cheaper, Hawaiian and
  transcontinental-heavy carriers dearer), rounded to whole dollars. Drawn from its own generator
  (``SEED + 1``), so the other columns are those of the dataset before it was added.
* ``passenger_id`` -- a unique identifier ``"P000001"``, ``"P000002"``, ...

The public domains of the categorical columns are taken from ``FLIGHTS_DOMAINS`` in
``src/frameldp/datasets/__init__.py``; this script checks its weight tables against them.
Generation uses ``numpy.random.default_rng(20261122)``, so rerunning the script reproduces the
file exactly (for a given numpy/pyarrow version). This is synthetic data generation, not
privacy noise, so the default PCG64 generator is fine.

Usage: ``python scripts/make_flights.py``
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SEED = 20261122
N_ROWS = 120_000
DATASETS_DIR = Path(__file__).resolve().parents[1] / "src" / "frameldp" / "datasets"
OUTPUT = DATASETS_DIR / "flights.parquet"

# Rough yearly enplanements in millions.
ORIGIN_WEIGHTS = {
    "ATL": 50.9, "DFW": 39.2, "DEN": 38.9, "ORD": 36.9, "LAX": 36.8, "JFK": 31.0, "LAS": 28.9,
    "MCO": 28.2, "MIA": 26.1, "CLT": 26.0, "SEA": 25.5, "PHX": 24.4, "EWR": 24.5, "SFO": 24.2,
    "IAH": 22.3, "BOS": 20.3, "FLL": 17.5, "MSP": 17.2, "LGA": 16.2, "DTW": 15.1, "PHL": 14.4,
    "SLC": 13.4, "BWI": 13.1, "DCA": 12.6, "SAN": 12.3, "IAD": 12.1, "TPA": 12.0, "BNA": 11.4,
    "AUS": 10.6, "HNL": 10.0,
}  # fmt: skip

# Destinations by popularity rank; weight of rank k is k**-1.1 * exp(-k / 22).
DEST_RANKING = """
    ATL DFW DEN ORD LAX JFK LAS MCO MIA CLT SEA PHX EWR SFO IAH BOS FLL MSP LGA DTW
    PHL SLC BWI DCA SAN IAD TPA BNA AUS HNL MDW DAL HOU PDX STL RDU SMF SJC MSY SAT
    OAK SNA MCI CLE IND PIT CVG CMH RSW OGG PBI JAX ONT BDL ABQ MKE BUR ANC OMA RNO
    BOI CHS RIC ELP TUS SDF OKC BUF ORF MEM GRR LGB KOA LIH SAV SRQ ALB PVD DSM TUL
    BHM LIT SYR ROC GSP PSP ICT PNS MYR HSV PWM XNA MSN FAT BZN
"""
DEST_BY_RANK = DEST_RANKING.split()
DEST_NEVER = ("ADK", "BRW", "OTZ", "SCC", "YAK")  # in the public domain, no flights sampled

# Approximate US domestic market share in percent.
CARRIER_SHARES = {
    "WN": 17.5, "AA": 17.6, "DL": 17.3, "UA": 15.6, "AS": 5.9, "B6": 5.2,
    "NK": 4.8, "F9": 3.4, "G4": 2.8, "SY": 1.3, "HA": 1.1, "MX": 0.5,
}  # fmt: skip
HUB_BOOST = 4.0
HUBS = {
    "DL": ("ATL", "MSP", "DTW", "SLC", "JFK", "LAX", "SEA", "BOS"),
    "AA": ("DFW", "CLT", "MIA", "PHL", "PHX", "ORD", "DCA", "LGA"),
    "UA": ("ORD", "DEN", "EWR", "IAH", "SFO", "IAD"),
    "WN": ("DEN", "LAS", "PHX", "BWI", "AUS", "BNA", "MCO"),
    "AS": ("SEA", "SFO", "LAX", "SAN"),
    "B6": ("JFK", "BOS", "FLL", "MCO"),
    "NK": ("FLL", "LAS", "MCO"),
    "F9": ("DEN", "MCO", "LAS"),
    "G4": ("LAS", "MCO", "TPA"),
    "SY": ("MSP",),
    "MX": ("TPA",),
}
# Alaska dominates Seattle and Hawaiian Honolulu (Hawaiian is rare elsewhere); the low-cost
# carriers do not serve Honolulu at all here.
SPECIAL_BOOST = {
    ("AS", "SEA"): 16.0,
    ("HA", "HNL"): 60.0,
    **{("HA", a): 0.3 for a in ORIGIN_WEIGHTS if a != "HNL"},
    **{(c, "HNL"): 0.0 for c in ("NK", "F9", "G4", "SY", "MX", "B6")},
}

# Unpunctuality factor b: late probabilities scale with b (60+ and cancelled with b**1.5),
# early with b**-0.5; on_time takes the remainder.
DELAY_BASE = {"early": 0.24, "late_15_60": 0.14, "late_60_plus": 0.05, "cancelled": 0.02}
UNPUNCTUALITY = {
    "DL": 0.65, "HA": 0.6, "AS": 0.8, "UA": 0.95, "WN": 1.0, "AA": 1.05,
    "SY": 1.1, "NK": 1.3, "G4": 1.35, "MX": 1.4, "B6": 1.45, "F9": 1.5,
}  # fmt: skip

# Number of services per booking (0..3) and relative item weights, per carrier.
N_SERVICES_P = {"full": (0.30, 0.38, 0.22, 0.10), "low_cost": (0.45, 0.35, 0.15, 0.05)}
LOW_COST = ("NK", "F9", "G4", "SY", "MX")
# Columns: wifi, meal, extra_legroom, checked_bag, priority_boarding, lounge.
SERVICE_WEIGHTS = {
    "AA": (6.0, 2.0, 3.0, 5.0, 2.5, 0.8),
    "DL": (6.0, 2.0, 3.0, 5.0, 2.5, 1.0),
    "UA": (6.0, 2.0, 3.0, 5.0, 2.5, 0.8),
    "AS": (6.0, 2.0, 2.5, 5.0, 2.0, 0.6),
    "WN": (5.0, 0.3, 0.0, 7.0, 3.0, 0.0),
    "B6": (8.0, 1.0, 3.0, 4.0, 2.0, 0.0),
    "HA": (1.0, 6.0, 3.0, 5.0, 1.5, 0.5),
    "NK": (1.5, 0.0, 3.0, 8.0, 2.0, 0.0),
    "F9": (1.0, 0.0, 2.5, 8.0, 2.5, 0.0),
    "G4": (0.0, 0.0, 2.0, 8.0, 3.0, 0.0),
    "SY": (2.0, 1.0, 2.0, 7.0, 2.0, 0.0),
    "MX": (3.0, 0.5, 3.0, 6.0, 2.0, 0.0),
}


def load_domains() -> dict[str, tuple[str, ...]]:
    """Read ``FLIGHTS_DOMAINS`` from the loader module without importing the package."""
    spec = importlib.util.spec_from_file_location("_flights_loader", DATASETS_DIR / "__init__.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FLIGHTS_DOMAINS


def normalize(weights: np.ndarray) -> np.ndarray:
    """Scale non-negative weights so that each row sums to one."""
    return weights / weights.sum(axis=-1, keepdims=True)


def sample_rows(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """Draw one category index per row of ``probs`` (shape ``(n, k)``) by inverse CDF."""
    cdf = np.cumsum(probs, axis=1)
    cdf[:, -1] = 1.0
    return (rng.random(len(probs))[:, None] >= cdf).sum(axis=1)


def generate(domains: dict[str, tuple[str, ...]]) -> pa.Table:
    """Generate the flights table; column categories are indices into ``domains``."""
    origins, dests, carriers = domains["origin"], domains["dest"], domains["carrier"]
    delays, services = domains["delay"], domains["services"]
    assert set(ORIGIN_WEIGHTS) == set(origins)
    assert sorted([*DEST_BY_RANK, *DEST_NEVER]) == sorted(dests)
    assert set(CARRIER_SHARES) == set(UNPUNCTUALITY) == set(SERVICE_WEIGHTS) == set(carriers)
    assert set(DELAY_BASE) | {"on_time"} == set(delays)
    rng = np.random.default_rng(SEED)

    origin_p = normalize(np.array([ORIGIN_WEIGHTS[a] for a in origins]))
    origin = rng.choice(len(origins), size=N_ROWS, p=origin_p)

    rank = np.array([DEST_BY_RANK.index(a) + 1 if a in DEST_BY_RANK else np.inf for a in dests])
    dest_p = normalize(rank**-1.1 * np.exp(-rank / 22))  # rank inf -> weight 0
    dest_of_origin = np.array([dests.index(a) for a in origins])
    dest = rng.choice(len(dests), size=N_ROWS, p=dest_p)
    while (clash := dest == dest_of_origin[origin]).any():
        dest[clash] = rng.choice(len(dests), size=int(clash.sum()), p=dest_p)

    carrier_w = np.array(
        [
            [
                CARRIER_SHARES[c]
                * SPECIAL_BOOST.get((c, a), HUB_BOOST if a in HUBS.get(c, ()) else 1.0)
                for c in carriers
            ]
            for a in origins
        ]
    )
    carrier = sample_rows(rng, normalize(carrier_w)[origin])

    b = np.array([UNPUNCTUALITY[c] for c in carriers])
    delay_p = np.zeros((len(carriers), len(delays)))
    delay_p[:, delays.index("early")] = DELAY_BASE["early"] * b**-0.5
    delay_p[:, delays.index("late_15_60")] = DELAY_BASE["late_15_60"] * b
    delay_p[:, delays.index("late_60_plus")] = DELAY_BASE["late_60_plus"] * b**1.5
    delay_p[:, delays.index("cancelled")] = DELAY_BASE["cancelled"] * b**1.5
    delay_p[:, delays.index("on_time")] = 1.0 - delay_p.sum(axis=1)
    delay = sample_rows(rng, delay_p[carrier])

    # Weighted sampling of k distinct items without replacement (Efraimidis-Spirakis keys).
    n_p = np.array([N_SERVICES_P["low_cost" if c in LOW_COST else "full"] for c in carriers])
    n_services = sample_rows(rng, n_p[carrier])
    item_w = np.array([SERVICE_WEIGHTS[c] for c in carriers])[carrier]
    assert ((item_w > 0).sum(axis=1) >= n_services).all()
    keys = np.full(item_w.shape, np.inf)
    np.divide(-np.log(rng.random(item_w.shape)), item_w, out=keys, where=item_w > 0)
    order = np.argsort(keys, axis=1, kind="stable")
    service_lists = [
        [services[i] for i in sorted(row[:k])] for row, k in zip(order, n_services, strict=True)
    ]

    fare = fares(carrier, carriers)

    def categorical(codes: np.ndarray, domain: tuple[str, ...]) -> pa.Array:
        return pa.array(np.asarray(domain, dtype=object)[codes], type=pa.string())

    return pa.table(
        {
            "passenger_id": pa.array([f"P{i:06d}" for i in range(1, N_ROWS + 1)], pa.string()),
            "origin": categorical(origin, origins),
            "dest": categorical(dest, dests),
            "carrier": categorical(carrier, carriers),
            "delay": categorical(delay, delays),
            "services": pa.array(service_lists, type=pa.list_(pa.string())),
            "fare": pa.array(fare, type=pa.float64()),
        }
    )


# Median fare (USD) per carrier; a log-normal spread around it.
FARE_MEDIANS = {
    "AA": 240.0, "AS": 210.0, "B6": 190.0, "DL": 260.0, "F9": 95.0, "G4": 80.0, "HA": 330.0,
    "MX": 120.0, "NK": 85.0, "SY": 140.0, "UA": 250.0, "WN": 150.0,
}  # fmt: skip
FARE_BOUNDS = (39.0, 1500.0)


def fares(carrier: np.ndarray, carriers: tuple[str, ...]) -> np.ndarray:
    """One fare per row: log-normal around the carrier's median, clipped to ``FARE_BOUNDS``."""
    rng = np.random.default_rng(SEED + 1)
    medians = np.array([FARE_MEDIANS[code] for code in carriers])[carrier]
    raw = medians * np.exp(rng.normal(0.0, 0.55, carrier.size))
    return np.round(np.clip(raw, *FARE_BOUNDS))


def main() -> None:
    """Generate the dataset and write it to ``OUTPUT``."""
    table = generate(load_domains())
    pq.write_table(
        table,
        OUTPUT,
        compression="zstd",
        compression_level=19,
        use_dictionary=["origin", "dest", "carrier", "delay", "services.list.element"],
    )


if __name__ == "__main__":
    main()
