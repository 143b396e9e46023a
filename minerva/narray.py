"""NArray: a handle on an array the runtime computes asynchronously.

A handle is a **storage** (the identity of one buffer's contents over time, shared by every
view of it) plus a **view** (``None`` for the whole buffer in C order, else ``(shape,
strides, offset)`` in bytes) and the handle's own shape and dtype (``spec``). Building an
op registers it and returns at once; reading values (``to_numpy``, ``float``,
``numpy.asarray``) waits for them. A storage keeps its current value alive; when the last
handle on it goes, the runtime frees the value as soon as no pending op needs it.

This module holds what needs no op: metadata and reading values. Operators and NumPy's
methods are installed on the class from the one table of ``minerva.api.methods``, which
builds ops through ``minerva.builder``.

NArray's private fields are its inside: only a short list of modules touch them (this one,
the seam ``minerva.builder``, ``minerva.api.core``, ``minerva.autograd`` and
``minerva.jit``; see doc/design.md, "NArray's door"). The functions at the end are the
door for the others.
"""
from __future__ import annotations

import contextlib
import math
import threading
import weakref

import numpy as np

from minerva.ops import views as _views


class HostGuard(threading.local):
    """Per thread: what forbids reading values on the host now, if anything (a jit
    recording sets ``refuse`` to a function making the error to raise)."""

    refuse = None
    refusing = [0]
    """How many threads refuse host reads now (one list all threads share: the C lean path
    reads the per-thread ``refuse`` only while some thread does)."""
    _counting = threading.Lock()

    def check(self, what: str) -> None:
        """Raise the refusal's error for ``what`` (a host read), if reads are refused."""
        if self.refuse is not None:
            raise self.refuse(what)

    @contextlib.contextmanager
    def refused(self, refuse):
        """Refuse host reads on this thread inside the block, raising ``refuse(what)``."""
        before = self.refuse
        with HostGuard._counting:
            HostGuard.refusing[0] += 1
            self.refuse = refuse
        try:
            yield
        finally:
            with HostGuard._counting:
                self.refuse = before
                HostGuard.refusing[0] -= 1


HOST_READS = HostGuard()
COPIED_SCALARS = "biufcmMUS"
"""Kinds whose NumPy scalars are copies, read at once as NumPy's own (``x[i]``; a
structured element, ``np.void``, is a view of its array in NumPy: read lazily, never as
an alias of minerva's buffer)."""
SCALAR_CLASSES: dict = {}
"""dtype kind -> the subclass of NArray a NumPy scalar of that kind gives as its
``__class__`` (filled by ``minerva.api.core.scalars``)."""


class NArray:
    """An n-dimensional array computed by the minerva runtime (see API.md, "Arrays")."""

    __slots__ = ("_storage", "_view", "_spec", "_grad_info", "_readonly", "_owndata",
                 "_numpy_scalar", "_base", "__weakref__")
    __array_priority__ = 100

    @property
    def __class__(self):
        """NArray; for a NumPy scalar, the subclass standing for its kind of NumPy scalar
        type (``SCALAR_CLASSES``), so that ``isinstance(s, numbers.Real)`` holds as for
        ``np.float64`` (``type(s)`` stays NArray)."""
        if self._numpy_scalar:
            return SCALAR_CLASSES.get(self._spec.dtype.kind, NArray)
        return NArray

    def __init__(self, storage, view, spec):
        self._storage = storage
        self._view = view
        self._spec = spec
        self._grad_info = None
        self._readonly = False
        self._owndata = True  # False for a view of another array (see view_of)
        self._numpy_scalar = False  # True where NumPy gives a scalar (api/core/scalars.py)
        self._base = None  # a view's BaseLink to the array owning the data (view_of)

    # ---- metadata (never blocks) --------------------------------------------------------

    @property
    def shape(self) -> tuple:
        """The shape, a tuple of ints."""
        return self._spec.shape

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype."""
        return self._spec.dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._spec.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self._spec.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the elements."""
        return self._spec.nbytes

    @property
    def itemsize(self) -> int:
        """Bytes of one element."""
        return self._spec.dtype.itemsize

    @property
    def strides(self) -> tuple:
        """Byte strides, as NumPy would give them for this view (settable: a view of the
        same elements' memory, ``minerva.api.core.attributes``)."""
        return tuple(_views.of(self._spec, self._view)[1])

    @property
    def device(self) -> int:
        """Id of the device the array lives on."""
        return self._storage.current.device_id

    @property
    def node_id(self) -> int:
        """Id of the data node of the current value (as shown by ``dump_dag`` and traces)."""
        return self._storage.current.node_id

    @property
    def label(self) -> str:
        """``storage@version`` of the current value: which array, after how many writes
        (as ``dump_dag`` and traces name it)."""
        return self._storage.current.label

    @property
    def flags(self) -> "Flags":
        """NumPy's memory-layout flags of this handle (``x.flags.f_contiguous``,
        ``x.flags["F_CONTIGUOUS"]``); a broadcast view is read-only, as NumPy's.
        ``writeable`` is settable, as NumPy allows (``Flags``, ``setflags``)."""
        shape, strides, offset = _views.of(self._spec, self._view)
        return Flags(shape, strides, offset, self._spec.dtype, self._owndata,
                     not self._readonly, owner=self)

    def setflags(self, write=None, align=None, uic=None) -> None:
        """NumPy's ``setflags``: ``write=False`` makes writes through this handle raise
        NumPy's ``ValueError: assignment destination is read-only``; ``write=True`` undoes
        it where NumPy allows (not for a view of a read-only array). minerva's arrays are
        always aligned (``align=False`` is refused) and never write back (``uic=True``)."""
        if uic:
            raise ValueError("cannot set WRITEBACKIFCOPY flag to True")
        if align is not None and not align:
            raise ValueError("minerva arrays are always aligned: cannot set the ALIGNED "
                             "flag to False")
        if write is not None:
            set_writeable(self, bool(write))

    @property
    def base(self):
        """The array owning the memory of this view (None for an array owning its data),
        as NumPy's ``base``: the view's base's base collapses to the owner."""
        return None if self._base is None else self._base.handle(self._storage)

    @property
    def is_view(self) -> bool:
        """Whether this handle sees part of a buffer, or its elements in another order."""
        return self._view is not None

    # ---- values (block) -----------------------------------------------------------------

    def wait(self, timeout: float | None = None) -> "NArray":
        """Block until computed; raise the op's stored error. Returns self."""
        check_timeout(timeout)
        HOST_READS.check("wait()")
        data = self._storage.current
        _engine_of(self).wait(data, timeout)
        return self

    def to_numpy(self, timeout: float | None = None) -> np.ndarray:
        """A NumPy copy of the values, once computed (raises the op's stored error)."""
        check_timeout(timeout)
        HOST_READS.check("reading values on the host")
        data = self._storage.current
        engine = _engine_of(self)
        engine.wait(data, timeout)
        return engine.devices.get(data.device_id).to_host(data.array, self._view)

    get = to_numpy

    def tolist(self):
        """The values as nested Python lists of Python scalars."""
        return self.to_numpy().tolist()

    def _scalar(self, kind):
        if self.size != 1:
            raise TypeError(f"only size-1 arrays can be converted to Python scalars; "
                            f"this one has shape {self.shape}")
        value = self.to_numpy().reshape(())
        return kind(value[()] if self._numpy_scalar else value)  # as NumPy's scalar does

    def __float__(self):
        return self._scalar(float)

    def __int__(self):
        return self._scalar(int)

    def __complex__(self):
        return self._scalar(complex)

    def __index__(self):
        if not self.ndim and self.dtype.kind in "iu":
            return self._scalar(int)
        if self._numpy_scalar:
            raise TypeError(f"'numpy.{self.dtype.type.__name__}' object cannot be "
                            "interpreted as an integer")
        raise TypeError("only integer scalar arrays can be converted to a scalar index")

    def __bool__(self):
        size = self.size
        if size == 0:
            raise ValueError("The truth value of an empty array is ambiguous. Use "
                             "`array.size > 0` to check that an array is not empty.")
        if size != 1:
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return self._scalar(bool)

    def __len__(self) -> int:
        if self._numpy_scalar:
            raise TypeError(f"object of type 'numpy.{self.dtype.type.__name__}' has no "
                            "len()")
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __hash__(self) -> int:
        """A NumPy scalar's hash: its value's (waits), equal to the hash of the equal
        Python number (a NaN, equal to nothing, hashes by identity, as Python's); arrays
        are unhashable, as NumPy's."""
        if not self._numpy_scalar:
            raise TypeError("unhashable type: 'NArray'")
        value = self.to_numpy()[()]
        return object.__hash__(self) if value != value else hash(value)


class Flags:
    """An array's memory-layout flags, as NumPy's ``ndarray.flags`` reports them: by key
    (``"C_CONTIGUOUS"``, ``"F_CONTIGUOUS"``, ``"OWNDATA"``, ``"WRITEABLE"``, ``"ALIGNED"``,
    ``"WRITEBACKIFCOPY"``, their one-letter forms, and NumPy's combined ones) or by
    attribute (``flags.f_contiguous``). As NumPy's, ``writeable`` (``"WRITEABLE"``,
    ``"W"``), ``aligned`` and ``writebackifcopy`` are settable, through the array's
    ``setflags``; the others are not (NumPy's AttributeError or KeyError)."""

    _ABBREVIATIONS = {"C": "C_CONTIGUOUS", "F": "F_CONTIGUOUS", "O": "OWNDATA",
                      "W": "WRITEABLE", "A": "ALIGNED", "X": "WRITEBACKIFCOPY",
                      "CONTIGUOUS": "C_CONTIGUOUS", "FORTRAN": "F_CONTIGUOUS"}
    _SHOWN = ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED",
              "WRITEBACKIFCOPY")

    _SETTABLE = {"WRITEABLE": "write", "ALIGNED": "align", "WRITEBACKIFCOPY": "uic"}

    def __init__(self, shape, strides, offset, dtype, owndata: bool, writeable: bool,
                 owner=None):
        object.__setattr__(self, "_owner", owner)
        c = _views.is_contiguous((shape, strides, offset), dtype.itemsize)
        f = _views.is_contiguous((shape[::-1], strides[::-1], offset), dtype.itemsize)
        aligned = offset % dtype.alignment == 0 and all(
            s % dtype.alignment == 0 for n, s in zip(shape, strides) if n > 1)
        behaved = aligned and writeable
        self._values = {
            "C_CONTIGUOUS": c, "F_CONTIGUOUS": f, "OWNDATA": owndata,
            "WRITEABLE": writeable, "ALIGNED": aligned, "WRITEBACKIFCOPY": False,
            "FNC": f and not c, "FORC": f or c,
            "BEHAVED": behaved, "CARRAY": behaved and c, "FARRAY": behaved and f and not c}

    def __getitem__(self, key: str) -> bool:
        name = self._ABBREVIATIONS.get(key, key)
        if name not in self._values:
            raise KeyError(f"Unknown flag {key!r}")
        return self._values[name]

    def __getattr__(self, name: str) -> bool:
        if name.startswith("_") or name.upper() not in self._values:
            raise AttributeError(f"'Flags' object has no attribute {name!r}")
        return self._values[name.upper()]

    def __setattr__(self, name, value) -> None:
        if name == "_values":
            object.__setattr__(self, name, value)
        elif name.upper() in self._SETTABLE and name.islower():
            self._set(name.upper(), value)
        elif name.upper() in self._values and name.islower():
            raise AttributeError(f"attribute {name!r} of 'Flags' objects is not writable")
        else:
            raise AttributeError(f"'Flags' object has no attribute {name!r}")

    def __setitem__(self, key: str, value) -> None:
        name = self._ABBREVIATIONS.get(key, key)
        if name not in self._SETTABLE:
            raise KeyError("Unknown flag")
        self._set(name, value)

    def _set(self, name: str, value) -> None:
        if self._owner is None:
            raise AttributeError("these flags belong to no array")
        self._owner.setflags(**{self._SETTABLE[name]: bool(value)})
        self._values[name] = bool(value) if name == "WRITEABLE" else self._values[name]

    def __eq__(self, other) -> bool:
        return isinstance(other, Flags) and other._values == self._values

    __hash__ = None

    def __repr__(self) -> str:
        return "\n".join(f"  {name} : {self._values[name]}" for name in self._SHOWN)


class BaseLink:
    """A view's link to its base, the array owning the data: held weakly (a view keeps the
    storage alive, not its base's handle, which autograd follows), and remade from the
    storage and the layout it had when the base's handle is gone."""

    __slots__ = ("_ref", "_held", "_view", "_spec", "_readonly")

    def __init__(self, owner: NArray):
        self._ref, self._held = weakref.ref(owner), None
        self._view, self._spec, self._readonly = owner._view, owner._spec, owner._readonly

    def handle(self, storage) -> NArray:
        """The base: its handle while it lives, else one remade on ``storage``."""
        owner = self._owner()
        if owner is None:
            owner = self._held = NArray(storage, self._view, self._spec)
            owner._readonly = self._readonly
        return owner

    def readonly(self) -> bool:
        """Whether writes through the base are refused (as they were when it went)."""
        owner = self._owner()
        return self._readonly if owner is None else owner._readonly

    def _owner(self):
        owner = self._ref()
        return self._held if owner is None else owner


def _engine_of(x: NArray):
    return x._storage.engine


def set_writeable(x: NArray, writeable: bool) -> None:
    """Let writes through ``x`` happen, or make them raise NumPy's ValueError. Turning
    them back on is refused, as NumPy refuses it, for a view whose base (the array owning
    the data) is read-only."""
    if writeable and x._base is not None and x._base.readonly():
        raise ValueError("cannot set WRITEABLE flag to True of this array")
    x._readonly = not writeable


def device_of(x: NArray):
    """The device ``x`` lives on (its ``kind``, its array module ``xp`` ...)."""
    return _engine_of(x).devices.get(x.device)


def device_array(x: NArray):
    """``(device, array)``: the device ``x`` lives on and ``x``'s current value there (the
    device's own array, seen through ``x``'s view), once computed."""
    data = x._storage.current
    _engine_of(x).wait(data, None)
    device = device_of(x)
    return device, data.array if x._view is None else device.view(data.array, x._view)


def storage_of(x: NArray):
    """The storage ``x`` sees, one object for every view of one buffer (what
    ``may_share_memory`` compares); ``api.core.manipulation.explicit_view(x)`` says where
    in it ``x``'s elements lie. Waits for nothing."""
    return x._storage


def check_timeout(timeout) -> None:
    """TypeError/ValueError now for a timeout that is not None or seconds >= 0."""
    if timeout is not None and (isinstance(timeout, bool)
                                or not isinstance(timeout, (int, float))):
        raise TypeError(f"timeout must be a number of seconds or None, got {timeout!r}")
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be >= 0, got {timeout}")


__all__ = ["NArray", "BaseLink", "Flags", "HOST_READS", "check_timeout", "device_array",
           "device_of", "storage_of"]
