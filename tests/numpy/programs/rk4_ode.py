"""Runge-Kutta 4 for ODE systems, as numerical-methods courses write it (a generic
``rk4(f, t, y, h)`` step, the right-hand side returning ``np.array([...])`` built from
the state's components): the Lotka-Volterra predator-prey model, the Lorenz system
stored row by row into a preallocated trajectory, a harmonic oscillator against its
exact solution with the order of convergence, and a linear system against the
eigen-decomposition of its matrix. Plain NumPy; run by import swap."""
import numpy as np


def rk4(f, t, y, h):
    k1 = f(t, y)
    k2 = f(t + h / 2, y + h / 2 * k1)
    k3 = f(t + h / 2, y + h / 2 * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def integrate(f, y0, t0, t1, steps):
    ts = np.linspace(t0, t1, steps + 1)
    ys = np.empty((steps + 1, len(y0)))
    ys[0] = y0
    for i in range(steps):
        ys[i + 1] = rk4(f, ts[i], ys[i], ts[i + 1] - ts[i])
    return ts, ys


def lotka_volterra(t, y, a=1.1, b=0.4, c=0.4, d=0.1):
    prey, predator = y
    return np.array([a * prey - b * prey * predator, d * prey * predator - c * predator])


def lorenz(t, y, sigma=10.0, rho=28.0, beta=8.0 / 3.0):
    x, v, z = y[0], y[1], y[2]
    return np.array([sigma * (v - x), x * (rho - z) - v, x * v - beta * z])


ts, lv = integrate(lotka_volterra, np.array([10.0, 5.0]), 0.0, 20.0, 200)
peak = int(np.argmax(lv[:, 0]))
_, lz = integrate(lorenz, np.array([1.0, 1.0, 1.0]), 0.0, 2.0, 200)


def oscillator(t, y):
    return np.array([y[1], -y[0]])


errors = []
for steps in (10, 20, 40):
    t, ys = integrate(oscillator, np.array([1.0, 0.0]), 0.0, 2 * np.pi, steps)
    errors.append(float(np.max(np.abs(ys[:, 0] - np.cos(t)))))
order = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))

# y' = A y has y(t) = V exp(W t) V^-1 y0.
A = np.array([[-0.5, 1.0, 0.0], [-1.0, -0.5, 0.2], [0.0, 0.0, -0.1]])
y0 = np.array([1.0, 0.0, 2.0])
_, lin = integrate(lambda t, y: A @ y, y0, 0.0, 3.0, 60)
w, V = np.linalg.eig(A)
exact = (V @ np.diag(np.exp(w * 3.0)) @ np.linalg.solve(V, y0)).real

RESULT = {
    "lotka_volterra": lv,
    "prey_peak": [peak, float(ts[peak])],
    "lorenz": lz,
    "errors": errors,
    "order": order,
    "linear_end": lin[-1],
    "linear_gap": float(np.abs(lin[-1] - exact).max()),
    "eigenvalues": np.sort_complex(w),
}
