"""NumPy interoperability both ways, the array API's namespace, and DLPack.

**NumPy functions on NArrays run in minerva** (NEP 13 and NEP 18, as CuPy and Dask arrays
do): ``numpy.exp(x)``, ``numpy.add(x, ndarray)``, ``ndarray * x`` reach
``NArray.__array_ufunc__``; ``numpy.sum(x)``, ``numpy.concatenate([x, y])``,
``numpy.linalg.norm(x)`` reach ``NArray.__array_function__``. Both find minerva's function
of the same name *at call time* in the ``minerva`` namespace (``numpy.linalg.*`` in
``minerva.linalg``), which ``minerva/__init__.py`` hands over with ``install(...)``: every
name of the namespace is found without being listed here. A NumPy function
minerva has no native version of runs through the host fallback (``minerva.api.fallback``:
NumPy's code on host copies of the inputs, NArrays back). ``numpy.asarray(x)`` is not
dispatched: it waits for ``x`` and copies its values through ``__array__``.

Ufunc methods (``numpy.add.reduce(x)``, ``numpy.multiply.outer(x, y)``,
``numpy.add.at(x, i, v)``) run minerva's function's method of that name
(``minerva.api.core.ufunc_methods``); a NumPy function with no ufunc of its name in
minerva raises ``UfuncMethodError``, a TypeError naming it. ``out=`` of a ufunc takes
NArrays (written in place) or NumPy arrays (written through an NArray copy, then given its
values). Operands that are
not arrays (None, strings ...) reach minerva's function, which answers as NumPy would; an
operand with its own ``__array_ufunc__`` gets NotImplemented.

**DLPack** (``__dlpack__``, ``__dlpack_device__``) exports a *copy* of the array's current
value: ``__dlpack__`` waits for the value, copies it (into host memory on a CPU device, on
the GPU on a GPU device) and exports the copy, so the consumer shares nothing with later
writes to the array. ``from_dlpack(x)`` copies any DLPack producer onto the current device
(through host memory).
"""
from __future__ import annotations

import functools
import pickle
import sys
import types as _types

import numpy as np

from minerva.api.core import exports
from minerva.api.core.indexing import assign
from minerva.api.core.ufunc_methods import missing_method
from minerva.builder import COPY, build, current_device, device as device_scope, upload
from minerva.narray import NArray, device_array, device_of

API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")
"""Array API standard versions ``__array_namespace__`` accepts."""

_ARRAYS = (NArray, np.ndarray, np.generic)

SCALARS_FIRST = frozenset({np.float64, np.float32, np.float16, np.complex128, np.complex64,
                            np.int64, np.int32, np.bool_})
"""NumPy scalar types NumPy hands to ``__array_ufunc__`` first in ``np.float64(h) * x``."""
_TOP_LEVEL = ("numpy", "numpy.lib.stride_tricks")
_SUBMODULES = {"numpy.lib.stride_tricks": ("lib", "stride_tricks"),
               "numpy.lib.scimath": ("emath",)}
"""NumPy's modules of ``numpy.lib`` -> the path of minerva's module for them."""
_KDL_CPU, _KDL_CUDA = 1, 2
_namespace: dict = {}
_names: dict = {}
_host_fallback = None
_consumer_namespace = None


def install(module_globals: dict, names: dict, host_fallback=None,
            consumer_namespace=None) -> None:
    """Hand interop the ``minerva`` package's namespace: its module globals (live, with
    ``__name__``) and the names it finds through ``__getattr__`` (``minerva/__init__.py``
    calls this); dispatch looks NumPy's names up in them at call time.
    ``host_fallback(func)`` makes the host fallback of a NumPy function found in no
    namespace of minerva's; ``consumer_namespace`` is what ``__array_namespace__`` gives
    (``minerva.array_api``; the package itself when None)."""
    global _namespace, _names, _host_fallback, _consumer_namespace
    _namespace, _names, _host_fallback = module_globals, names, host_fallback
    _consumer_namespace = consumer_namespace
    FAST_UFUNC_CALLS.clear()
    for value in vars(np).values():
        if isinstance(value, np.ufunc) and getattr(np, value.__name__, None) is value:
            call = vars(type(module_globals.get(value.__name__))).get("__call__")
            if isinstance(call, staticmethod):   # a Ufunc's class (``ufuncs._ufunc``)
                FAST_UFUNC_CALLS[value] = call.__func__


FAST_UFUNC_CALLS: dict = {}
"""NumPy's ufunc -> the call of minerva's Ufunc of its name in the installed namespace
(its C operator where there is one), for ``array_ufunc``'s first branch in C
(``lean.array_ufunc``); filled by ``install``."""


def namespace_module() -> _types.ModuleType:
    """The ``minerva`` package module (RuntimeError before ``install``)."""
    if "__name__" not in _namespace:
        raise RuntimeError("minerva.api.interop.install(...) has not run")
    return sys.modules[_namespace["__name__"]]


def lookup(module: str, name: str):
    """minerva's function for NumPy's ``<module>.<name>`` (``module`` as in a function's
    ``__module__``: 'numpy', 'numpy.linalg' …): its native one, else its host fallback;
    None when minerva's namespaces have no such name. Functions of ``numpy`` (and
    ``numpy._core``) are looked up in the package, those of ``numpy.<sub>`` in
    ``minerva.<sub>``, ``numpy.lib.stride_tricks``'s in ``minerva.lib.stride_tricks``
    (then the package), ``numpy.lib.scimath``'s in ``minerva.emath``; other modules of
    ``numpy.lib`` have no counterpart."""
    found = _in_submodule(_SUBMODULES.get(module, ()), name)
    if found is None and (module in _TOP_LEVEL or module.startswith("numpy._core")):
        found = _namespace.get(name, _names.get(name))
        if found is None and "__name__" in _namespace:
            found = getattr(namespace_module(), name, None)
        module_only = isinstance(found, _types.ModuleType) and not callable(found)
        return None if module_only or isinstance(found, type) else found
    if module in _SUBMODULES:
        return found
    sub = _namespace.get(module.split(".")[1]) if module.startswith("numpy.") else None
    if not isinstance(sub, _types.ModuleType) or module.count(".") > 1:
        return None
    return getattr(sub, name, None)


def _in_submodule(path: tuple, name: str):
    """``minerva.<path...>.<name>``, or None (also for an empty ``path``)."""
    found = _namespace.get(path[0]) if path else None
    for part in path[1:] + (name,):
        found = getattr(found, part, None) if found is not None else None
    return found


def _unsupported(what: str) -> TypeError:
    return TypeError(f"{what} is not supported by minerva yet; apply it to numpy.asarray(x) "
                     "to compute it on the host")


# ---- __array_function__ ---------------------------------------------------------------------

def array_function(self, func, types, args, kwargs):
    """NEP 18: run NumPy's ``func`` as minerva's function of the same name."""
    if not all(issubclass(t, (NArray, np.ndarray)) for t in types):
        return NotImplemented
    function = lookup(func.__module__, func.__name__)
    if function is func:  # minerva re-exports NumPy's own: run NumPy's implementation
        function = getattr(func, "_implementation", None)
    if function is None and _host_fallback is not None:
        function = _host_fallback(func)
    if function is None:
        raise _unsupported(f"{func.__module__}.{func.__name__}")
    kwargs = dict(kwargs)
    return call_with_out(function, args, kwargs, kwargs.pop("out", None))


def call_with_out(function, args, kwargs: dict, out):
    """``function(*args, **kwargs, out=out)``: NArrays in ``out`` (one or a tuple) are
    written by minerva; NumPy arrays receive a copy of the result, as NumPy would cast it
    (``same_kind``). Returns the result (``out`` when given)."""
    targets = out if isinstance(out, tuple) else (out,)
    if all(t is None for t in targets):
        return function(*args, **kwargs)
    if all(isinstance(t, NArray) for t in targets):
        return function(*args, out=out, **kwargs)
    result = function(*args, **kwargs)
    values = result if isinstance(result, tuple) else (result,)
    for target, value in zip(targets, values):
        _write(target, value)
    return out


def _write(target, value) -> None:
    if target is None:
        return
    if isinstance(target, np.ndarray):
        np.copyto(target, np.asarray(value), casting="same_kind")
        return
    if not np.can_cast(value.dtype, target.dtype, "same_kind"):
        raise TypeError(f"Cannot cast output from {value.dtype!r} to {target.dtype!r} with "
                        "casting rule 'same_kind'")
    assign(target, value)


# ---- __array_ufunc__ ------------------------------------------------------------------------

def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NEP 13: run ``ufunc`` (or one of its methods: ``reduce`` ...) in minerva. NumPy
    arrays given as ``out=`` (or as the array ``at`` writes) are written through an NArray
    copy, then given its values (this waits)."""
    if method == "__call__" and not kwargs and len(inputs) == 2 \
            and type(inputs[0]) in SCALARS_FIRST and type(inputs[1]) is NArray:
        function = _namespace.get(ufunc.__name__)   # ``np.float64(h) * x``: the common case
        if function is not None and getattr(np, ufunc.__name__, None) is ufunc \
                and not isinstance(function, (type, _types.ModuleType)):
            return function(*inputs)   # as below, past the checks it passes
    outs = kwargs.get("out", ())
    if any(_overrides_ufuncs(x) for x in inputs) or not all(
            o is None or isinstance(o, (NArray, np.ndarray)) for o in outs):
        return NotImplemented
    function = None
    if _is_numpys(ufunc):   # the package's attribute of its name, as ``lookup`` finds it
        function = _namespace.get(ufunc.__name__)
        if function is None or isinstance(function, (type, _types.ModuleType)):
            function = lookup("numpy", ufunc.__name__)
    if function is None and _host_fallback is not None:  # scipy.special.erf, str_len ...
        function = _foreign_ufunc(ufunc)
    if function is None:
        raise _unsupported(f"numpy.{ufunc.__name__}")
    if method != "__call__":
        if ufunc.signature is not None:  # matmul's methods: NumPy's refusal, on stand-ins
            getattr(ufunc, method)(*map(_stand_in, inputs),
                                   **{k: v for k, v in kwargs.items() if k != "out"})
        function = getattr(function, method, None)
        if function is None:
            raise missing_method(ufunc.__name__, method)
    if method == "at" and isinstance(inputs[0], np.ndarray):
        return _through_copies(lambda a: function(a[0], *inputs[1:]), (inputs[0],))
    out = kwargs.pop("out", None)
    if out is None or not any(isinstance(o, np.ndarray) for o in out):
        return function(*inputs, **kwargs) if out is None else function(
            *inputs, out=_single(out), **kwargs)
    _through_copies(lambda copies: function(*inputs, out=_single(copies), **kwargs), out)
    return _single(out)


def _is_numpys(ufunc) -> bool:
    """Whether ``ufunc`` is NumPy's ufunc of its name (``numpy.log1p``), which minerva's
    function of that name stands for; another library's (``scipy.special.log1p``, with
    its own kernels) runs through the host fallback."""
    return getattr(np, ufunc.__name__, None) is ufunc


@functools.lru_cache(maxsize=512)
def _foreign_ufunc(ufunc):
    """The host fallback of a ufunc minerva has no function for, named by the module
    that holds it (``scipy.special._ufuncs.erf``: a ufunc has no ``__module__``)."""
    return _host_fallback(ufunc, f"{pickle.whichmodule(ufunc, ufunc.__name__)}."
                                 f"{ufunc.__name__}")


def _stand_in(x):
    """Zeros of an NArray's shape and dtype; other operands as they are."""
    return np.zeros(x.shape, x.dtype) if isinstance(x, NArray) else x


def _through_copies(write, targets: tuple):
    """``write(copies)`` with NArray copies of the NumPy arrays in ``targets`` (NArrays
    as they are); then each NumPy array receives its copy's values."""
    copies = tuple(upload(t) if isinstance(t, np.ndarray) else t for t in targets)
    result = write(copies)
    for target, copy in zip(targets, copies):
        if isinstance(target, np.ndarray):
            target[...] = copy.to_numpy()
    return result


def _overrides_ufuncs(x) -> bool:
    """Whether ``x`` is an array of another kind, with its own ``__array_ufunc__``."""
    return not isinstance(x, _ARRAYS) and hasattr(type(x), "__array_ufunc__")


def _single(out):
    """A ufunc method's ``out`` tuple as one array (or None); a tuple of several arrays
    (``divmod``) as it is."""
    return out[0] if isinstance(out, tuple) and len(out) == 1 else out


# ---- the array API and DLPack ---------------------------------------------------------------

def array_namespace(self, api_version=None):
    """The array API namespace of NArrays, made for array-API consumers:
    ``minerva.array_api`` (the ``minerva`` namespace with ``unique_values`` sorted)."""
    if api_version is not None and api_version not in API_VERSIONS:
        raise ValueError(f"minerva does not know array API version {api_version!r}; "
                         f"known versions: {', '.join(API_VERSIONS)}")
    return _consumer_namespace or namespace_module()


def dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """DLPack export of the current value (waits for it), by NumPy 2's copy rules: on a CPU
    device without ``copy=True``, the value's buffer itself, read-only and held as
    ``numpy.asarray`` holds it (``minerva.api.core.exports``: a later write to this array
    copies first), for a consumer that reads DLPack's read-only flag (``max_version`` 1.0
    or later); otherwise a private copy, or BufferError for ``copy=False``."""
    kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                ("dl_device", dl_device), ("copy", copy)) if v is not None}
    to_host = dl_device is None or dl_device[0] == _KDL_CPU
    if copy is not True and to_host and exports.on_host(self):
        if max_version is not None and tuple(max_version) >= (1, 0):
            return exports.host_alias(self).__dlpack__(**kwargs)
        if copy is False:
            raise BufferError("Cannot export readonly array since signalling readonly is "
                              "unsupported by DLPack (supported by newer DLPack version).")
    elif copy is False:
        raise BufferError("an NArray of a GPU device is exported by copy only (copy=False "
                          "cannot be honoured)")
    return _exported(self, dl_device).__dlpack__(**kwargs)


def dlpack_device(self) -> tuple:
    """``(device type, ordinal)`` of the DLPack export: ``(1, 0)`` (CPU) on a CPU device,
    ``(2, GPU ordinal)`` (CUDA) on a GPU device."""
    device = device_of(self)
    if getattr(device, "kind", "cpu") == "gpu":
        return (_KDL_CUDA, device.physical)
    return (_KDL_CPU, 0)


def _exported(x: NArray, dl_device):
    """A private copy of ``x``'s current value: NumPy on the host, CuPy on a GPU."""
    device = device_of(x)
    if getattr(device, "kind", "cpu") != "gpu" or (dl_device or (0,))[0] == _KDL_CPU:
        return x.to_numpy()
    device, array = device_array(x)
    with array.device:
        copied = array.copy()
        device.xp.cuda.get_current_stream().synchronize()
    return copied


def from_dlpack(x, /, *, device=None, copy=None) -> NArray:
    """A copy of DLPack producer ``x`` (an NArray, a NumPy, CuPy or PyTorch array …) on the
    current device, or on ``device`` (a minerva device id) when given. ``copy=False``
    returns an NArray ``x`` itself (it must live on that device); other producers cannot
    be shared, so it raises ValueError for them."""
    if device is not None:
        with device_scope(device):
            return from_dlpack(x, copy=copy)
    if copy is False:
        return _shared(x)
    if isinstance(x, NArray):
        return build(COPY, [x])
    if x.__dlpack_device__()[0] == _KDL_CPU:
        return upload(np.from_dlpack(x))
    return upload(np.from_dlpack(x, device="cpu", copy=True))


def _shared(x) -> NArray:
    if isinstance(x, NArray) and x.device == current_device():
        return x
    raise ValueError("from_dlpack(copy=False): minerva can share only an NArray of the "
                     "current device; this needs a copy (use copy=None or copy=True)")


__all__: list = ["from_dlpack"]
