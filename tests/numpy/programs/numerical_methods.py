"""Classic numerical methods as course notes write them in NumPy (in the style of the
exercises of "Python Programming and Numerical Methods", UC Berkeley — the techniques,
not its code): Newton's method on a nonlinear system with a Jacobian and
``np.linalg.solve``, bisection, composite trapezoid and Simpson rules by slicing (and
``np.trapezoid``), least-squares polynomial fits with ``np.polyfit``/``np.polyval`` and
``np.poly1d``, roots of a polynomial, and piecewise-linear ``np.interp``. Plain NumPy;
run by import swap."""
import math

import numpy as np


def F(v):
    x, y = v
    return np.array([x**2 + y**2 - 4.0, np.exp(x) + y - 1.0])


def J(v):
    x, y = v
    return np.array([[2 * x, 2 * y], [np.exp(x), 1.0]])


v = np.array([1.0, -1.0])
newton_steps = []
for it in range(20):
    dv = np.linalg.solve(J(v), -F(v))
    v = v + dv
    newton_steps.append(float(np.linalg.norm(dv)))
    if np.linalg.norm(dv) < 1e-12:
        break


def bisection(f, a, b, tol=1e-10):
    fa = f(a)
    while b - a > tol:
        m = 0.5 * (a + b)
        fm = f(m)
        if np.sign(fm) == np.sign(fa):
            a, fa = m, fm
        else:
            b = m
    return 0.5 * (a + b)


root = bisection(lambda x: np.cos(x) - x, 0.0, 1.0)


def trapezoid(f, a, b, n):
    x = np.linspace(a, b, n + 1)
    y = f(x)
    h = (b - a) / n
    return h * (0.5 * y[0] + y[1:-1].sum() + 0.5 * y[-1])


def simpson(f, a, b, n):
    x = np.linspace(a, b, n + 1)
    y = f(x)
    h = (b - a) / n
    return h / 3 * (y[0] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum() + y[-1])


quadrature = {}
for n in (8, 16, 32):
    quadrature[n] = [float(trapezoid(np.sin, 0, np.pi, n) - 2.0),
                     float(simpson(np.sin, 0, np.pi, n) - 2.0)]
xs = np.linspace(0, 1, 101)
gauss_area = np.trapezoid(np.exp(-xs**2), xs)
erf_gap = abs(2 / math.sqrt(math.pi) * gauss_area - math.erf(1.0))

rng = np.random.default_rng(5)
t = np.linspace(-1, 1, 30)
noisy = 0.5 * t**3 - t + 0.25 + 0.05 * rng.standard_normal(t.size)
coefficients = np.polyfit(t, noisy, 3)
fitted = np.polyval(coefficients, t)
p = np.poly1d(coefficients)
dp = p.deriv()
stationary = np.sort(np.roots(dp.coeffs).real)
roots = np.roots([1.0, -6.0, 11.0, -6.0])

xp = np.array([0.0, 1.0, 2.5, 4.0])
fp = np.array([1.0, 3.0, 2.0, 5.0])
queries = np.linspace(-1, 5, 13)
interpolated = np.interp(queries, xp, fp)
clamped = np.interp(queries, xp, fp, left=0.0, right=-1.0)

RESULT = {
    "newton_solution": v,
    "newton_steps": newton_steps,
    "residual": float(np.abs(F(v)).max()),
    "bisection_root": float(root),
    "quadrature": quadrature,
    "gauss_area": float(gauss_area),
    "erf_gap": float(erf_gap),
    "coefficients": coefficients,
    "fitted": fitted,
    "rms": float(np.sqrt(np.mean((fitted - noisy) ** 2))),
    "stationary": stationary,
    "p_at_half": float(p(0.5)),
    "roots": np.sort(roots),
    "interpolated": interpolated,
    "clamped": clamped,
}
