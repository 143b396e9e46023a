"""NArray: a handle on a value the runtime computes asynchronously.

Building an NArray registers an op and returns at once; reading its values (``to_numpy``,
``float``, ``numpy.asarray``) waits for it. A handle keeps its value alive; when the last
handle goes, the runtime frees the value as soon as no pending op needs it.
"""
from __future__ import annotations

import numpy as np

from minerva import system as _system
from minerva.common.callsite import format_callsite, user_callsite
from minerva.common.errors import MinervaError, ShapeError
from minerva.dag.nodes import STATE_NAMES
from minerva.ops import registry
from minerva.ops.dtypes import is_scalar
from minerva.ops.elementwise import BINARY

OPS = registry._REGISTRY
SCALAR_OP = {name: name + "_scalar" for name in BINARY}
_SCALAR_TYPES = (int, float, bool, complex, np.generic)


def apply_op(op_def, inputs, **attrs):
    """Build ``op_def`` over NArrays ``inputs`` on the current device; its NArray result
    (a tuple of NArrays for ops with several outputs). Shape errors raise here, at once."""
    system = _system._SYSTEM or _system.get_system()
    engine = system.engine
    nodes = [x._node for x in inputs]
    for x in inputs:
        if x._engine is not engine:
            raise MinervaError("this NArray belongs to a minerva runtime that was shut down")
    try:
        out_specs = op_def.infer(*[node.spec for node in nodes], **attrs)
    except ShapeError as err:
        err.add_note(f"in op '{op_def.name}' built at {format_callsite(user_callsite())}")
        raise
    outputs = system.run_op(op_def, nodes, attrs, out_specs)
    if len(outputs) == 1:
        return NArray(outputs[0], engine)
    return tuple(NArray(node, engine) for node in outputs)


def binary(name: str, a: "NArray", b, reverse: bool = False):
    """``a <name> b`` (``b <name> a`` when ``reverse``) for an NArray ``a`` and an NArray,
    scalar or array-like ``b``; NotImplemented for other operand types."""
    if isinstance(b, _SCALAR_TYPES):
        return apply_op(OPS[SCALAR_OP[name]], [a], scalar=b, reverse=reverse)
    if isinstance(b, NArray):
        return apply_op(OPS[name], [b, a] if reverse else [a, b])
    if is_scalar(b):
        scalar = b[()] if isinstance(b, np.ndarray) else b
        return apply_op(OPS[SCALAR_OP[name]], [a], scalar=scalar, reverse=reverse)
    if isinstance(b, (np.ndarray, list, tuple)):
        from minerva.creation import array
        return binary(name, a, array(b), reverse)
    return NotImplemented


class NArray:
    """An n-dimensional array computed by the minerva runtime (see API.md, "Arrays")."""

    __slots__ = ("_node", "_engine", "__weakref__")
    __array_ufunc__ = None  # NumPy operators defer to ours (``ndarray + NArray``)

    def __init__(self, node, engine):
        self._node = node
        self._engine = engine

    def __del__(self):
        try:
            engine = self._engine
            if not engine.closed:
                engine.release(self._node)
        except Exception:  # interpreter shutdown: modules may be gone
            pass

    # ---- metadata (never blocks) --------------------------------------------------------

    @property
    def shape(self) -> tuple:
        """The shape, a tuple of ints."""
        return self._node.spec.shape

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype."""
        return self._node.spec.dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._node.spec.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self._node.spec.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Bytes of the elements."""
        return self._node.spec.nbytes

    @property
    def device(self) -> int:
        """Id of the device the value lives on."""
        return self._node.device_id

    @property
    def node_id(self) -> int:
        """Id of the data node behind this handle (as shown by ``dump_dag`` and traces)."""
        return self._node.node_id

    # ---- values (block) -----------------------------------------------------------------

    def wait(self, timeout: float | None = None) -> "NArray":
        """Block until computed; raise the op's stored error. Returns self."""
        self._engine.wait(self._node, timeout)
        return self

    def to_numpy(self, timeout: float | None = None) -> np.ndarray:
        """A NumPy copy of the values, once computed (raises the op's stored error)."""
        self._engine.wait(self._node, timeout)
        device = self._engine.devices.get(self._node.device_id)
        return device.to_host(self._node.array)

    def __array__(self, dtype=None, copy=None):
        values = self.to_numpy()
        return values if dtype is None else values.astype(dtype, copy=False)

    def _scalar(self, kind):
        if self.size != 1:
            raise TypeError(f"only size-1 arrays can be converted to Python scalars; "
                            f"this one has shape {self.shape}")
        return kind(self.to_numpy().reshape(()))

    def __float__(self):
        return self._scalar(float)

    def __int__(self):
        return self._scalar(int)

    def __bool__(self):
        if self.size != 1:
            raise ValueError("the truth value of an array with more than one element is "
                             "ambiguous; use .any() or .all()")
        return self._scalar(bool)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        node = self._node
        return (f"NArray(shape={self.shape}, dtype={self.dtype}, device={node.device_id}, "
                f"{STATE_NAMES[node.state]})")

    def __str__(self) -> str:
        return str(self.to_numpy())

    def __setitem__(self, key, value):
        raise TypeError("NArray is immutable; build a new array instead "
                        "(mv.where, mv.concatenate, or arithmetic)")

    # ---- operators ------------------------------------------------------------------------

    def __add__(self, other): return binary("add", self, other)
    def __radd__(self, other): return binary("add", self, other, True)
    def __sub__(self, other): return binary("subtract", self, other)
    def __rsub__(self, other): return binary("subtract", self, other, True)
    def __mul__(self, other): return binary("multiply", self, other)
    def __rmul__(self, other): return binary("multiply", self, other, True)
    def __truediv__(self, other): return binary("divide", self, other)
    def __rtruediv__(self, other): return binary("divide", self, other, True)
    def __floordiv__(self, other): return binary("floor_divide", self, other)
    def __rfloordiv__(self, other): return binary("floor_divide", self, other, True)
    def __mod__(self, other): return binary("remainder", self, other)
    def __rmod__(self, other): return binary("remainder", self, other, True)
    def __pow__(self, other): return binary("power", self, other)
    def __rpow__(self, other): return binary("power", self, other, True)
    def __eq__(self, other): return binary("equal", self, other)
    def __ne__(self, other): return binary("not_equal", self, other)
    def __lt__(self, other): return binary("less", self, other)
    def __le__(self, other): return binary("less_equal", self, other)
    def __gt__(self, other): return binary("greater", self, other)
    def __ge__(self, other): return binary("greater_equal", self, other)
    def __and__(self, other): return binary("bitwise_and", self, other)
    def __rand__(self, other): return binary("bitwise_and", self, other, True)
    def __or__(self, other): return binary("bitwise_or", self, other)
    def __ror__(self, other): return binary("bitwise_or", self, other, True)
    def __xor__(self, other): return binary("bitwise_xor", self, other)
    def __rxor__(self, other): return binary("bitwise_xor", self, other, True)

    def __matmul__(self, other):
        return _functions.matmul(self, other)

    def __rmatmul__(self, other):
        return _functions.matmul(other, self)

    def __neg__(self): return apply_op(OPS["negative"], [self])
    def __pos__(self): return self
    def __abs__(self): return apply_op(OPS["absolute"], [self])
    def __invert__(self): return apply_op(OPS["invert"], [self])

    __hash__ = None

    # ---- methods (as NumPy's) -------------------------------------------------------------

    def __getitem__(self, index):
        from minerva.ops.shape import normalize_index
        return apply_op(OPS["getitem"], [self], index=normalize_index(index))

    def to(self, device: int) -> "NArray":
        """This value on ``device`` (copied once and cached while this value lives)."""
        return _functions.to_device(self, device)

    def astype(self, dtype) -> "NArray":
        """A copy cast to ``dtype`` (unsafe casting, as NumPy's astype)."""
        return _functions.astype(self, dtype)

    def copy(self) -> "NArray":
        """A copy on the current device."""
        return apply_op(OPS["copy"], [self])

    def reshape(self, *shape) -> "NArray":
        """The values in a new shape (one dimension may be -1)."""
        return _functions.reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes) -> "NArray":
        """Dimensions permuted (reversed by default)."""
        return _functions.transpose(self, axes[0] if len(axes) == 1 else (axes or None))

    @property
    def T(self) -> "NArray":
        """The transpose (dimensions reversed)."""
        return _functions.transpose(self)

    def flatten(self) -> "NArray":
        """A 1-D copy."""
        return _functions.reshape(self, (-1,))

    ravel = flatten

    def sum(self, axis=None, keepdims=False): return _functions.sum(self, axis, keepdims)
    def prod(self, axis=None, keepdims=False): return _functions.prod(self, axis, keepdims)
    def max(self, axis=None, keepdims=False): return _functions.max(self, axis, keepdims)
    def min(self, axis=None, keepdims=False): return _functions.min(self, axis, keepdims)
    def mean(self, axis=None, keepdims=False): return _functions.mean(self, axis, keepdims)
    def any(self, axis=None, keepdims=False): return _functions.any(self, axis, keepdims)
    def all(self, axis=None, keepdims=False): return _functions.all(self, axis, keepdims)
    def argmax(self, axis=None, keepdims=False): return _functions.argmax(self, axis, keepdims)
    def argmin(self, axis=None, keepdims=False): return _functions.argmin(self, axis, keepdims)

    def clip(self, low=None, high=None) -> "NArray":
        """Values limited to ``[low, high]``."""
        return _functions.clip(self, low, high)


from minerva import functions as _functions  # noqa: E402  (functions imports NArray)
