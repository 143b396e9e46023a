"""A 2-D heat equation and a Laplace problem by Jacobi relaxation, in the style of
benchpress's ``heat_equation`` benchmark (bh107/benchpress, Apache-2.0 — the idea, not
its code): the five-point stencil as slices of the grid (``center``, ``north``, ``south``,
``east``, ``west``), the interior updated in place through a view, iteration until the
largest change falls below a tolerance; and an explicit heat step checked against the
decay of a Fourier mode. Plain NumPy; run by import swap."""
import numpy as np

# Laplace on an 18 x 18 grid: hot top edge, cold elsewhere; Jacobi until converged.
n = 18
grid = np.zeros((n, n))
grid[0, :] = 100.0
grid[:, 0] = 25.0 * np.linspace(1, 0, n)
center = grid[1:-1, 1:-1]
north, south = grid[:-2, 1:-1], grid[2:, 1:-1]
west, east = grid[1:-1, :-2], grid[1:-1, 2:]
tolerance, iterations, deltas = 1e-3, 0, []
while True:
    work = 0.25 * (north + south + east + west)
    delta = np.max(np.abs(work - center))
    center[:] = work
    iterations += 1
    if iterations % 50 == 0:
        deltas.append(float(delta))
    if delta < tolerance or iterations >= 2000:
        break
residual = np.abs(grid[1:-1, 1:-1] - 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1]
                                             + grid[1:-1, :-2] + grid[1:-1, 2:])).max()

# Red-black Gauss-Seidel sweeps on the same problem, with a checkerboard of masks.
gs = np.zeros((n, n))
gs[0, :] = 100.0
gs[:, 0] = 25.0 * np.linspace(1, 0, n)
i, j = np.indices((n - 2, n - 2))
red = (i + j) % 2 == 0
black = ~red
for sweep in range(150):
    for colour in (red, black):
        inner = gs[1:-1, 1:-1]
        avg = 0.25 * (gs[:-2, 1:-1] + gs[2:, 1:-1] + gs[1:-1, :-2] + gs[1:-1, 2:])
        inner[colour] = avg[colour]
gs_gap = float(np.linalg.norm(gs - grid) / np.linalg.norm(grid))

# Explicit heat equation u_t = alpha (u_xx + u_yy) on the unit square, u = 0 on the edge:
# the mode sin(pi x) sin(pi y) decays as exp(-2 pi^2 alpha t).
m, alpha = 41, 1.0
x = np.linspace(0.0, 1.0, m)
h = x[1] - x[0]
dt = 0.2 * h * h / alpha
u = np.outer(np.sin(np.pi * x), np.sin(np.pi * x))
steps = 150
for _ in range(steps):
    lap = (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * u[1:-1, 1:-1]) / h**2
    u[1:-1, 1:-1] += alpha * dt * lap
t = steps * dt
exact = np.exp(-2 * np.pi**2 * alpha * t) * np.outer(np.sin(np.pi * x), np.sin(np.pi * x))
heat_error = np.abs(u - exact).max()
total_heat = np.trapezoid(np.trapezoid(u, x, axis=1), x)

RESULT = {
    "iterations": iterations,
    "deltas": deltas,
    "grid": grid,
    "residual": float(residual),
    "gauss_seidel": gs,
    "gs_gap": gs_gap,
    "u": u,
    "heat_error": float(heat_error),
    "total_heat": float(total_heat),
    "center_is_view": bool(np.shares_memory(center, grid)),
}
