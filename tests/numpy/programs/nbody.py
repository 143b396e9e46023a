"""An N-body simulation in the style of benchpress's ``nbody`` benchmark
(bh107/benchpress, Apache-2.0 — the idea, not its code): all pairwise separations by
broadcasting, the self-interaction removed with ``np.fill_diagonal``, forces summed over
an axis, and a leapfrog (kick-drift-kick) integration whose total energy and momentum
are checked along the way. Plain NumPy; run by import swap."""
import numpy as np

G, softening, dt = 1.0, 0.2, 0.005
rng = np.random.default_rng(2024)
n = 24
mass = rng.uniform(0.5, 1.5, size=n)
pos = rng.standard_normal((n, 3))
vel = 0.3 * rng.standard_normal((n, 3))
vel -= np.average(vel, axis=0, weights=mass)        # no drift of the centre of mass
pos -= np.average(pos, axis=0, weights=mass)


def accelerations(pos, mass):
    dx = pos[np.newaxis, :, 0] - pos[:, np.newaxis, 0]
    dy = pos[np.newaxis, :, 1] - pos[:, np.newaxis, 1]
    dz = pos[np.newaxis, :, 2] - pos[:, np.newaxis, 2]
    r2 = dx**2 + dy**2 + dz**2 + softening**2
    np.fill_diagonal(r2, np.inf)                     # no force of a body on itself
    inv_r3 = r2 ** -1.5
    ax = G * (dx * inv_r3) @ mass
    ay = G * (dy * inv_r3) @ mass
    az = G * (dz * inv_r3) @ mass
    return np.stack((ax, ay, az), axis=1)


def energy(pos, vel, mass):
    kinetic = 0.5 * np.sum(mass[:, None] * vel**2)
    i, j = np.triu_indices(len(mass), k=1)
    r = np.sqrt(((pos[i] - pos[j])**2).sum(axis=1) + softening**2)
    potential = -G * np.sum(mass[i] * mass[j] / r)
    return kinetic + potential


e0 = energy(pos, vel, mass)
acc = accelerations(pos, mass)
energies, momenta = [], []
for step in range(60):
    vel += 0.5 * dt * acc
    pos += dt * vel
    acc = accelerations(pos, mass)
    vel += 0.5 * dt * acc
    if step % 10 == 9:
        energies.append(float(energy(pos, vel, mass)))
        momenta.append(float(np.linalg.norm(mass @ vel)))

# The same forces from one 3-D separation tensor, as an einsum.
d = pos[None, :, :] - pos[:, None, :]
r2 = np.einsum("ijk,ijk->ij", d, d) + softening**2
r2[np.diag_indices(n)] = np.inf
acc_einsum = G * np.einsum("ijk,ij,j->ik", d, r2 ** -1.5, mass)
closest = np.unravel_index(np.argmin(r2), r2.shape)

RESULT = {
    "e0": float(e0),
    "energies": energies,
    "drift": float(abs(energies[-1] - e0) / abs(e0)),
    "momenta": momenta,
    "pos": pos,
    "vel": vel,
    "forces_agree": bool(np.allclose(acc_einsum, accelerations(pos, mass))),
    "closest": [int(c) for c in closest],
}
