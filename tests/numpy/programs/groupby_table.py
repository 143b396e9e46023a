"""A group-by over a numeric table, as NumPy answers to "group by without pandas" write
it: a CSV read by ``np.loadtxt`` from an in-memory string (``delimiter``, ``skiprows``,
``usecols``), rows sorted by key with ``np.argsort(kind="stable")``, group boundaries
from ``np.flatnonzero(np.diff(...))``, per-group sums by ``np.add.reduceat``, maxima by
``np.maximum.reduceat``, groups as ``np.split`` pieces, means again by
``np.bincount(..., weights=...)``, a pivot table with ``np.add.at`` on two keys, and
``np.searchsorted`` bucketing. Plain NumPy; run by import swap."""
import io

import numpy as np

rng = np.random.default_rng(21)
n = 120
store = rng.integers(1, 6, size=n)
product = rng.integers(0, 4, size=n)
units = rng.integers(1, 20, size=n)
price = np.round(rng.uniform(2.0, 30.0, size=n), 2)
lines = ["# store,product,units,price"]
lines += [f"{s},{p},{u},{c:.2f}" for s, p, u, c in zip(store, product, units, price)]
text = "\n".join(lines)

table = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1)
keys = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, usecols=(0, 1), dtype=np.int64)
revenue = table[:, 2] * table[:, 3]

order = np.argsort(keys[:, 0], kind="stable")
sorted_store = keys[order, 0]
sorted_revenue = revenue[order]
starts = np.concatenate(([0], np.flatnonzero(np.diff(sorted_store)) + 1))
group_keys = sorted_store[starts]
group_sums = np.add.reduceat(sorted_revenue, starts)
group_max = np.maximum.reduceat(sorted_revenue, starts)
groups = np.split(sorted_revenue, starts[1:])
group_sizes = [len(g) for g in groups]
group_medians = np.array([np.median(g) for g in groups])

labels, inverse = np.unique(keys[:, 0], return_inverse=True)
means = np.bincount(inverse, weights=revenue) / np.bincount(inverse)

pivot = np.zeros((len(labels), 4))
np.add.at(pivot, (inverse, keys[:, 1]), table[:, 2])
best_product = pivot.argmax(axis=1)
share = pivot / pivot.sum(axis=1, keepdims=True)

edges = np.array([0.0, 50.0, 150.0, 300.0])
bucket = np.searchsorted(edges, revenue, side="right") - 1
bucket_counts = np.bincount(bucket, minlength=len(edges))
ranking = group_keys[np.argsort(group_sums)[::-1]]
cumulative = np.cumsum(np.sort(revenue)[::-1]) / revenue.sum()
top_share_rows = int(np.argmax(cumulative >= 0.5)) + 1

RESULT = {
    "table_shape": list(table.shape),
    "keys_dtype": str(keys.dtype),
    "group_keys": group_keys,
    "group_sums": group_sums,
    "group_max": group_max,
    "group_sizes": group_sizes,
    "group_medians": group_medians,
    "means": means,
    "means_agree": bool(np.allclose(means, group_sums / np.array(group_sizes))),
    "pivot": pivot,
    "best_product": best_product,
    "share": share,
    "bucket_counts": bucket_counts,
    "ranking": ranking,
    "top_share_rows": top_share_rows,
}
