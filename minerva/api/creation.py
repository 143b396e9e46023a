"""NumPy's array-creation functions beyond the basics (``minerva.api.core.creation``):
the matrices ``eye``, ``identity`` and ``tri``; ``tril``, ``triu``, ``diag`` and
``diagflat``; numerical ranges (``linspace``, ``logspace``, ``geomspace``) and grids
(``meshgrid``, ``mgrid``, ``ogrid``); and Minerva's on-device random draws (``randn``,
``rand``, ``randb``).

``diag`` of a 2-D array returns a *copy* of the diagonal (NumPy returns a read-only view);
``diag`` of a 1-D array writes it through a diagonal view of zeros. Ranges and grids from
slices are computed on the host (their values follow from the arguments alone) and copied
to the device.
"""
from __future__ import annotations

import numpy as np

from minerva import seeding
from minerva.api.core.arguments import as_int
from minerva.api.core.creation import check_dtype, check_shape, zeros
from minerva.api.core.indexing import assign
from minerva.api.core.manipulation import broadcast_arrays, diagonal_view, ravel, reshape
from minerva.builder import COPY, build, to_narray, upload
from minerva.common.errors import DTypeError, ShapeError
from minerva.narray import NArray
from minerva.ops import registry

_EYE, _TRI, _TRIANGLE = registry.get("eye"), registry.get("tri"), registry.get("triangle")
_RANDOM = registry.get("random")


# ---- matrices, triangles and diagonals ---------------------------------------------------

def _matrix_attrs(name: str, N, M, k, dtype) -> dict:
    n = as_int(name, N)
    m = n if M is None else as_int(name, M)
    if n < 0 or m < 0:
        raise ValueError("negative dimensions are not allowed")
    return {"n": n, "m": m, "k": as_int(name, k), "dtype": check_dtype(dtype)}

def eye(N, M=None, k=0, dtype=None, order="C", *, device=None, like=None) -> NArray:
    """An ``N`` x ``M`` array with ones on the ``k``-th diagonal and zeros elsewhere
    (``float64`` unless ``dtype`` is given)."""
    _check_layout("eye", order, device, like)
    return build(_EYE, [], _matrix_attrs("eye", N, M, k, dtype))

def identity(n, dtype=None, *, like=None) -> NArray:
    """The ``n`` x ``n`` identity matrix."""
    return eye(n, dtype=dtype, like=like)

def tri(N, M=None, k=0, dtype=None, *, like=None) -> NArray:
    """An ``N`` x ``M`` array with ones at and below the ``k``-th diagonal."""
    _check_layout("tri", "C", None, like)
    return build(_TRI, [], _matrix_attrs("tri", N, M, k, dtype))

def _check_layout(name: str, order, device, like) -> None:
    if order != "C":
        raise ValueError(f"{name}: only order='C' is supported, got {order!r}")
    if device not in (None, "cpu") or like is not None:
        raise ValueError(f"{name}: device= and like= are not supported; use mv.device()")

def _triangle(name: str, m, k, lower: bool) -> NArray:
    x = to_narray(m, name)
    if x.ndim == 0:
        raise TypeError(f"{name}: the input must have at least one dimension")
    return build(_TRIANGLE, [x], {"k": as_int(name, k), "lower": lower})

def tril(m, k=0) -> NArray:
    """``m`` with the elements above the ``k``-th diagonal zeroed (over the last two
    axes; a 1-D ``m`` is taken as every row of a square matrix)."""
    return _triangle("tril", m, k, True)

def triu(m, k=0) -> NArray:
    """``m`` with the elements below the ``k``-th diagonal zeroed (over the last two
    axes; a 1-D ``m`` is taken as every row of a square matrix)."""
    return _triangle("triu", m, k, False)

def diag(v, k=0) -> NArray:
    """The ``k``-th diagonal of a 2-D array (a copy), or a 2-D array with the 1-D ``v`` on
    its ``k``-th diagonal and zeros elsewhere."""
    x = to_narray(v, "diag")
    k = as_int("diag", k)
    if x.ndim == 2:
        return build(COPY, [diagonal_view(x, k)])
    if x.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = x.shape[0] + abs(k)
    result = zeros((n, n), x.dtype)
    assign(diagonal_view(result, k), x)
    return result

def diagflat(v, k=0) -> NArray:
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal."""
    return diag(ravel(to_narray(v, "diagflat")), k)

# ---- numerical ranges and grids --------------------------------------------------------

def _host(value):
    return value.to_numpy() if isinstance(value, NArray) else value

def _dtype(dtype):
    return None if dtype is None else check_dtype(dtype, sized=False)

def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless
    ``endpoint`` is False); with ``retstep``, ``(values, step)``."""
    if device not in (None, "cpu"):
        raise ValueError("linspace: device= is not supported; use mv.device()")
    result = np.linspace(_host(start), _host(stop), num, endpoint, retstep, _dtype(dtype),
                         axis)
    if retstep:
        return upload(result[0]), result[1]
    return upload(result)

def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)``: values evenly spaced on a log scale."""
    return upload(np.logspace(_host(start), _host(stop), num, endpoint, _host(base),
                              _dtype(dtype), axis))

def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` values from ``start`` to ``stop`` in a geometric progression."""
    return upload(np.geomspace(_host(start), _host(stop), num, endpoint, _dtype(dtype),
                               axis))

class _Grid:
    """``mgrid`` (dense) or ``ogrid`` (open) grids from slices, computed on the host."""

    __slots__ = ("sparse",)

    def __init__(self, sparse: bool):
        self.sparse = sparse

    def __getitem__(self, key):
        values = (np.ogrid if self.sparse else np.mgrid)[key]
        if isinstance(values, (tuple, list)):
            return tuple(upload(v) for v in values)
        return upload(values)

mgrid = _Grid(sparse=False)
"""``mgrid[0:2, 0:3]``: a dense mesh grid (one stacked array)."""

ogrid = _Grid(sparse=True)
"""``ogrid[0:2, 0:3]``: an open mesh grid (a tuple of broadcastable arrays)."""

def meshgrid(*xi, copy=True, sparse=False, indexing="xy") -> tuple:
    """Coordinate arrays from 1-D coordinate vectors (inputs of more dimensions are
    flattened): ``indexing`` 'xy' (Cartesian) or 'ij' (matrix), ``sparse`` broadcastable
    arrays, ``copy=False`` read-only broadcast views instead of new arrays."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    shapes = [[1] * ndim for _ in range(ndim)]
    for i, shape in enumerate(shapes):
        shape[i] = -1
    if indexing == "xy" and ndim > 1:
        shapes[0][:2], shapes[1][:2] = [1, -1], [-1, 1]
    output = [reshape(to_narray(x, "meshgrid"), tuple(shape))
              for x, shape in zip(xi, shapes)]
    if not sparse:
        output = broadcast_arrays(*output)
    if copy:
        output = [build(COPY, [x]) for x in output]
    return tuple(output)

# ---- Minerva's on-device random draws -------------------------------------------------------

def _random_op(kind, shape, dtype, params):
    dtype = check_dtype(dtype)
    if kind != "bernoulli" and dtype.kind not in "fc":
        raise DTypeError(f"unsupported dtype {dtype} for {kind} samples; use a float dtype")
    return build(_RANDOM, [], {"kind": kind, "shape": check_shape(shape), "dtype": dtype,
                               "params": params, "seed": seeding.next_seed()})

def randn(shape, mu=0.0, sigma=1.0, dtype=None) -> NArray:
    """Normal samples with mean ``mu`` and standard deviation ``sigma`` (Minerva's draw,
    reproducible after ``mv.random.seed``; NumPy's is ``mv.random.randn``)."""
    return _random_op("normal", shape, dtype, (float(mu), float(sigma)))

def rand(shape, low=0.0, high=1.0, dtype=None) -> NArray:
    """Uniform samples in ``[low, high)`` (Minerva's draw; NumPy's is ``mv.random.rand``)."""
    return _random_op("uniform", shape, dtype, (float(low), float(high)))

def randb(shape, prob, dtype=None) -> NArray:
    """Bernoulli samples: 1 with probability ``prob``, else 0."""
    if not 0.0 <= float(prob) <= 1.0:
        raise ShapeError(f"randb: prob must be in [0, 1], got {prob}")
    return _random_op("bernoulli", shape, dtype, (float(prob),))


__all__ = ["diag", "diagflat", "eye", "geomspace", "identity", "linspace", "logspace",
           "meshgrid", "mgrid", "ogrid", "rand", "randb", "randn", "tri", "tril", "triu"]
