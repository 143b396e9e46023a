"""The NumPy namespace: dtypes and constants are NumPy's own objects, the data-type
functions give NumPy's answers (an NArray standing for its dtype), names NumPy has and
minerva has no native version of come from the host fallback (NumPy's own objects for its
classes and constants), other names raise Python's AttributeError, and the array API /
DLPack entry points."""
from __future__ import annotations

import math

import numpy as np
import pytest

import minerva as mv
from minerva import dtypes
from minerva.api.fallback import HostFunction
from minerva.api.missing import missing_attribute
from tests.numpy.test_copy_rules import Exporter

ARRAY_API_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float32", "float64", "complex64", "complex128")


OWN = ("finfo", "iinfo", "can_cast", "result_type", "min_scalar_type", "common_type",
       "iscomplexobj", "isrealobj", "__array_api_version__", "__array_namespace_info__")


@pytest.mark.parametrize("name", sorted(set(dtypes.__all__) - set(OWN)))
def test_exported_names_are_numpys_objects(name):
    assert getattr(mv, name) is getattr(np, name)


@pytest.mark.parametrize("name", ARRAY_API_DTYPES + (
    "bool_", "intp", "uintp", "float16", "double", "single", "half", "longlong", "int_",
    "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact",
    "floating", "complexfloating", "dtype"))
def test_dtype_names(name):
    assert getattr(mv, name) is getattr(np, name)


def test_dtypes_module_has_numpys_dtype_classes():
    assert mv.dtypes.Float64DType is np.dtypes.Float64DType
    assert mv.dtype(mv.float32) == mv.dtypes.Float32DType()
    with pytest.raises(AttributeError, match="'minerva.dtypes' has no attribute 'nope'"):
        mv.dtypes.nope  # noqa: B018


def test_constants():
    assert mv.pi == math.pi and mv.e == math.e and mv.euler_gamma == np.euler_gamma
    assert mv.inf == math.inf and math.isnan(mv.nan) and mv.newaxis is None
    assert mv.True_ is np.True_ and mv.False_ is np.False_


def test_builtin_bool_is_not_shadowed_inside_minerva(engine):
    assert mv.bool is np.bool_
    assert bool(mv.array([1.0])) is True
    assert mv.array([1, 0]).astype(mv.bool).dtype == np.bool_


def test_dtype_comparisons(engine):
    x = mv.zeros(3, dtype=mv.float32)
    assert x.dtype == mv.float32 and x.dtype == np.float32 and x.dtype == "float32"
    assert np.issubdtype(x.dtype, mv.floating) and mv.issubdtype(x.dtype, np.inexact)
    assert mv.isdtype(x.dtype, "real floating") and not mv.isdtype(x.dtype, "integral")


def test_data_type_functions_take_narrays_for_their_dtypes(engine):
    x32, i8 = mv.zeros(2, dtype=np.float32), mv.zeros(2, dtype=np.int8)
    assert mv.finfo(x32) == np.finfo(np.float32)
    assert mv.finfo(mv.float64).eps == np.finfo(np.float64).eps
    assert mv.iinfo(i8).max == 127 and mv.iinfo(mv.uint16).max == np.iinfo(np.uint16).max
    assert mv.can_cast(i8, mv.int16) and not mv.can_cast(x32, mv.int64)
    assert mv.can_cast(x32, np.float16, casting="same_kind")
    assert mv.result_type(x32, 1.0) == np.float32
    assert mv.result_type(x32, i8, np.float64) == np.float64
    assert mv.result_type(i8, mv.zeros(2, dtype=np.uint8)) == np.int16
    assert mv.promote_types(mv.int8, mv.uint8) == np.int16
    assert mv.common_type(x32, np.zeros(2)) is np.float64


def test_complex_and_real_objects(engine):
    z, r = mv.zeros(2, dtype=np.complex64), mv.zeros(2)
    assert mv.iscomplexobj(z) and not mv.iscomplexobj(r) and mv.isrealobj(r)
    assert np.iscomplexobj(z) and np.isrealobj(r)  # through __array_function__
    assert mv.iscomplexobj(1j) and mv.isrealobj(np.ones(2))


def test_min_scalar_type_looks_at_a_0d_value(engine):
    assert mv.min_scalar_type(mv.array(3)) == np.min_scalar_type(np.array(3)) == np.uint8
    assert mv.min_scalar_type(mv.array([3])) == np.int64
    assert mv.min_scalar_type(-300) == np.int16


# ---- names minerva has no native version of --------------------------------------------

def test_a_numpy_name_minerva_lacks_runs_on_the_host():
    assert isinstance(mv.histogram2d, HostFunction) and mv.histogram2d.label == \
        "numpy.histogram2d"
    assert mv.histogram2d is mv.histogram2d and mv.histogram2d.__doc__ == \
        np.histogram2d.__doc__
    assert "histogram2d" in dir(mv) and "fft" in dir(mv.fft)


@pytest.mark.parametrize("name", ["matrix", "memmap", "datetime64", "vectorize", "ndindex",
                                  "get_include", "ma", "testing"])
def test_numpys_classes_constants_and_modules_are_numpys_own(name):
    assert getattr(mv, name) is getattr(np, name)


def test_other_names_raise_a_plain_attribute_error():
    with pytest.raises(AttributeError, match="^module 'minerva' has no attribute 'nope'$"):
        mv.nope  # noqa: B018
    with pytest.raises(AttributeError, match="^module 'minerva' has no attribute '__x__'$"):
        mv.__x__  # noqa: B018
    assert not hasattr(mv, "float_")  # gone from NumPy 2 too
    assert getattr(mv, "nope", 7) == 7


def test_names_of_submodules():
    assert mv.random.PCG64 is np.random.PCG64 and mv.linalg.test is np.linalg.test
    assert isinstance(mv.fft.rfft, HostFunction) and isinstance(mv.emath.sqrt,
                                                                HostFunction)
    for module, where in ((mv.linalg, "minerva.linalg"), (mv.random, "minerva.random"),
                          (mv.fft, "minerva.fft"), (mv.emath, "minerva.emath")):
        with pytest.raises(AttributeError, match=f"^module '{where}' has no attribute 'no'$"):
            module.no  # noqa: B018
    error = missing_attribute("resize", "ndarray")
    assert isinstance(error, AttributeError) and error.name == "resize"
    assert str(error).startswith("'NArray' object has no attribute 'resize': NumPy's resize "
                                 "cannot run on a host copy: it changes the array's own")
    assert str(missing_attribute("nope", "linalg")) == \
        "module 'minerva.linalg' has no attribute 'nope'"


# ---- the array API namespace and DLPack -------------------------------------------------------

def test_array_namespace_is_minerva_for_consumers(engine):
    x = mv.ones((2, 3))
    xp = x.__array_namespace__()
    assert xp is mv.array_api and x.__array_namespace__(api_version="2023.12") is xp
    assert xp.matmul is mv.matmul and xp.linalg is mv.linalg
    assert xp.__array_api_version__ == mv.__array_api_version__
    values = np.array([3, 1, 2, 1, 0, 5, 40, -7])
    assert np.array_equal(xp.unique_values(mv.array(values)).to_numpy(), np.unique(values))
    with pytest.raises(ValueError, match="array API version"):
        x.__array_namespace__(api_version="1999.01")


def test_array_namespace_info(engine):
    assert mv.__array_api_version__ == "2024.12"
    info = mv.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"] is True
    second = mv.create_cpu_device()
    assert info.default_device() == mv.current_device() and second in info.devices()
    assert info.default_dtypes()["real floating"] == np.float64
    assert info.default_dtypes(device=second)["indexing"] == np.intp
    assert list(info.dtypes()) == list(ARRAY_API_DTYPES)
    assert list(info.dtypes(kind="signed integer")) == ["int8", "int16", "int32", "int64"]
    assert list(info.dtypes(kind=("bool", "complex floating"))) == [
        "bool", "complex64", "complex128"]
    assert all(info.dtypes()[name] == getattr(mv, name) for name in ARRAY_API_DTYPES)


def test_array_api_attributes(engine):
    x = mv.array(np.arange(24.0).reshape(2, 3, 4))
    np.testing.assert_array_equal(x.mT.to_numpy(), np.swapaxes(np.arange(24.0).reshape(
        2, 3, 4), -1, -2))
    assert isinstance(x.device, int)
    assert x.to_device(x.device) is x


def test_dlpack_round_trip_with_numpy(engine):
    values = np.arange(12.0).reshape(3, 4)
    x = mv.array(values)
    assert x.__dlpack_device__() == (1, 0)
    exported = np.from_dlpack(x)
    np.testing.assert_array_equal(exported, values)
    x += 1  # the export is a copy: later writes do not reach it
    np.testing.assert_array_equal(exported, values)
    np.testing.assert_array_equal(np.from_dlpack(x[:, 1]), values[:, 1] + 1)


def test_from_dlpack_copies_onto_the_current_device(engine):
    d0, d1 = mv.create_cpu_device(), mv.create_cpu_device()
    values = np.arange(6, dtype=np.int32).reshape(2, 3)
    with mv.device(d1):
        x = mv.from_dlpack(values)
        assert x.device == d1 and x.dtype == np.int32
    np.testing.assert_array_equal(x.to_numpy(), values)
    with mv.device(d0):
        y = mv.from_dlpack(x)
    z = mv.from_dlpack(x, device=d1)
    x += 1
    assert y.device == d0 and z.device == d1
    np.testing.assert_array_equal(y.to_numpy(), values)
    np.testing.assert_array_equal(z.to_numpy(), values)


def test_from_dlpack_without_copy_shares_only_an_narray_of_the_current_device(engine):
    d0, d1 = mv.create_cpu_device(), mv.create_cpu_device()
    with mv.device(d0):
        x = mv.ones(3)
        assert mv.from_dlpack(x, copy=False) is x
        with pytest.raises(ValueError, match="copy=False"):
            mv.from_dlpack(np.ones(3), copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        mv.from_dlpack(x, device=d1, copy=False)
    assert mv.from_dlpack(x, copy=True) is not x


def test_dunder_dlpack_takes_the_array_api_keywords(engine):
    x = mv.array(np.arange(4.0))
    for kwargs in ({}, {"copy": True}, {"copy": False}, {"max_version": (1, 0)},
                   {"dl_device": (1, 0)}):
        np.testing.assert_array_equal(np.from_dlpack(Exporter(x, kwargs)), np.arange(4.0))


def test_conformance_fixes(engine):
    """Gaps the array-API conformance run found: reductions with a small dtype, copies,
    clip without bounds, descending sorts, device= on creation, read-only broadcasts."""
    import numpy
    x = mv.arange(6, dtype=numpy.int8)
    assert mv.sum(x, dtype=numpy.int8).dtype == numpy.int8
    assert mv.prod(x, dtype=numpy.int16).dtype == numpy.int16
    a = mv.ones(3)
    assert mv.asarray(a, dtype=a.dtype, copy=True) is not a
    numpy.testing.assert_array_equal(mv.clip(mv.arange(3.0)).to_numpy(), [0.0, 1.0, 2.0])
    values = numpy.array([3, 1, 2, 1, 3])
    numpy.testing.assert_array_equal(mv.sort(values, descending=True).to_numpy(),
                                     numpy.sort(values)[::-1])
    numpy.testing.assert_array_equal(mv.argsort(values, descending=True, stable=True).to_numpy(),
                                     numpy.argsort(-values, stable=True))
    other = mv.create_cpu_device()
    assert mv.zeros(3, device=other).device == other and mv.arange(3, device=other).device == other
    b = mv.broadcast_to(mv.arange(3.0), (2, 3))
    assert b.flags["WRITEABLE"] is False
    with pytest.raises(ValueError, match="read-only"):
        b[0, 0] = 1
    with pytest.raises(ValueError, match="read-only"):
        b += 1


def test_trace_is_numpys_trace_and_the_profiler_records():
    import numpy
    m = numpy.arange(9.0).reshape(3, 3)
    assert float(mv.trace(m)) == numpy.trace(m) and callable(mv.profiler.start)
    assert not hasattr(mv.trace, "start")
