"""Monte Carlo methods as the benchmark suites and finance tutorials write them in NumPy
(in the style of benchpress's ``montecarlo_pi`` and ``black_scholes`` benchmarks,
bh107/benchpress, Apache-2.0 — the ideas, not their code): pi from random points in the
unit square, European option prices from geometric Brownian paths (``np.cumsum`` of
``rng.standard_normal`` increments) against the Black-Scholes formula with ``math.erf``
through ``np.vectorize``, a confidence interval, a bootstrap of the mean by
``rng.choice``, quantiles, and a 1-D random walk's first passage times. Plain NumPy;
run by import swap."""
import math

import numpy as np

rng = np.random.default_rng(99)

# pi from the fraction of points inside the quarter circle.
xy = rng.random((20000, 2))
inside = np.sum(xy[:, 0] ** 2 + xy[:, 1] ** 2 <= 1.0)
pi_estimate = 4.0 * inside / len(xy)

# A European call by simulation and in closed form.
S0, K, r, sigma, T, steps, paths = 100.0, 105.0, 0.02, 0.25, 1.0, 50, 4000
dt = T / steps
increments = (r - 0.5 * sigma**2) * dt + sigma * np.sqrt(dt) * rng.standard_normal((paths, steps))
log_paths = np.log(S0) + np.cumsum(increments, axis=1)
S = np.exp(log_paths)
payoff = np.maximum(S[:, -1] - K, 0.0)
price = np.exp(-r * T) * payoff.mean()
stderr = np.exp(-r * T) * payoff.std(ddof=1) / np.sqrt(paths)
asian = np.exp(-r * T) * np.maximum(S.mean(axis=1) - K, 0.0).mean()

cdf = np.vectorize(lambda x: 0.5 * (1.0 + math.erf(x / math.sqrt(2.0))))
d1 = (np.log(S0 / K) + (r + 0.5 * sigma**2) * T) / (sigma * np.sqrt(T))
d2 = d1 - sigma * np.sqrt(T)
black_scholes = S0 * cdf(d1) - K * np.exp(-r * T) * cdf(d2)
strikes = np.array([80.0, 95.0, 105.0, 120.0])
d1s = (np.log(S0 / strikes) + (r + 0.5 * sigma**2) * T) / (sigma * np.sqrt(T))
curve = S0 * cdf(d1s) - strikes * np.exp(-r * T) * cdf(d1s - sigma * np.sqrt(T))

# A bootstrap of the mean of a skewed sample.
sample = rng.exponential(scale=2.0, size=300)
boot = np.array([rng.choice(sample, size=sample.size, replace=True).mean() for _ in range(200)])
low, high = np.quantile(boot, [0.025, 0.975])

# First passage of simple random walks past +10.
walks = np.cumsum(rng.choice([-1, 1], size=(500, 200)), axis=1)
crossed = (walks >= 10).any(axis=1)
first = np.argmax(walks >= 10, axis=1)[crossed]

RESULT = {
    "pi": float(pi_estimate),
    "price": float(price),
    "stderr": float(stderr),
    "asian": float(asian),
    "black_scholes": float(black_scholes),
    "within_3_stderr": bool(abs(price - black_scholes) < 3 * stderr),
    "curve": curve,
    "final_quantiles": np.quantile(S[:, -1], [0.05, 0.5, 0.95]),
    "boot_interval": [float(low), float(high)],
    "crossed": int(crossed.sum()),
    "first_mean": float(first.mean()),
    "first_median": float(np.median(first)),
}
