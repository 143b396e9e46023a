"""NumPy 2's copy rules, NumPy as the oracle: ``copy=False`` never copies silently
(``mv.asarray``, ``mv.array``, ``__array__``, ``__dlpack__``, ``mv.from_dlpack``: an alias or
NumPy's error), ``copy=True`` always copies, and a NumPy array aliasing a computed CPU
array is read-only and keeps the values it had when it was handed out (a later minerva
write copies first), its buffer held while it lives."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import minerva as mv
from minerva.api.core.exports import HostExport
from tests.conftest import ENGINES, start_engine
from tests.numpy.test_ndarray import check, outcome, same_as_numpy
from tests.support.fake_cuda import gpu_runtime


def pointer(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


# ---- mv.array / mv.asarray ----------------------------------------------------------------

HOSTS = {"ndarray": np.arange(4.0), "list": [1.0, 2.0], "scalar": 3.0,
         "0-d": np.array(2), "F ndarray": np.asfortranarray(np.ones((2, 3)))}


@pytest.mark.parametrize("kind", list(HOSTS))
def test_host_data_is_never_aliased_so_copy_false_raises(engine, kind):
    """NumPy aliases its own arrays; minerva always copies host data onto a device, so
    ``copy=False`` raises NumPy's ValueError for every host object (as NumPy does for
    lists and scalars)."""
    for function in (mv.asarray, mv.array):
        got = outcome(lambda: function(HOSTS[kind], copy=False))
        assert got[0] == "raised" and isinstance(got[1], ValueError)
        assert "Unable to avoid copy" in str(got[1])
    check(mv.asarray(HOSTS[kind]), np.asarray(HOSTS[kind]))


COPY_CASES = {
    "same": {}, "dtype": {"dtype": np.float32}, "same dtype": {"dtype": np.float64},
    "order C": {"order": "C"}, "order F": {"order": "F"}, "order K": {"order": "K"},
    "order A": {"order": "A"}}


@pytest.mark.parametrize("copy", [False, None, True], ids=repr)
@pytest.mark.parametrize("case", list(COPY_CASES))
@pytest.mark.parametrize("layout", ["C", "T"])
@pytest.mark.parametrize("function", ["asarray", "array"])
def test_copy_keyword_on_narrays_is_numpys(engine, function, layout, case, copy):
    host = np.arange(6.0).reshape(2, 3)
    host = host if layout == "C" else host.T
    x = mv.array(np.arange(6.0).reshape(2, 3))
    x = x if layout == "C" else x.T
    kwargs = dict(COPY_CASES[case], copy=copy)
    got = outcome(lambda: getattr(mv, function)(x, **kwargs))
    want = outcome(lambda: getattr(np, function)(host, **kwargs))
    same_as_numpy(got, want)
    if want[0] == "ok":
        shares = np.shares_memory(want[1], host)
        assert (got[1]._storage is x._storage) == shares  # an alias exactly where NumPy's
        assert got[1].strides == want[1].strides


def test_ndmin_is_numpys(engine):
    for obj in ([1, 2], 5, np.ones((2, 3))):
        for ndmin in (0, 1, 2, 4):
            check(mv.array(obj, ndmin=ndmin), np.array(obj, ndmin=ndmin))
    x = mv.arange(3.0)
    view = mv.array(x, copy=False, ndmin=3)
    assert view.shape == (1, 1, 3) and view.base is x
    same_as_numpy(outcome(lambda: mv.array(1, ndmin=65)), outcome(lambda: np.array(1,
                                                                               ndmin=65)))


# ---- __array__ and numpy.asarray ------------------------------------------------------------

def test_asarray_of_a_computed_array_aliases_its_buffer_read_only(engine):
    x = mv.arange(6.0).reshape(2, 3)
    a, b = np.asarray(x), np.asarray(x)
    assert pointer(a) == pointer(b) and not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0, 0] = 1
    assert pointer(np.asarray(x[1:])) == pointer(a) + 24  # a view aliases its elements


def test_a_later_minerva_write_leaves_the_alias_as_it_was(engine):
    x = mv.arange(4.0)
    alias = np.asarray(x)
    x += 1
    x[0] = 9
    np.testing.assert_array_equal(alias, np.arange(4.0))  # a snapshot: never a race
    np.testing.assert_array_equal(np.asarray(x), [9.0, 2.0, 3.0, 4.0])
    view = x[1:]
    alias = np.asarray(view)
    view *= 2
    np.testing.assert_array_equal(alias, [2.0, 3.0, 4.0])
    check(x, np.array([9.0, 4.0, 6.0, 8.0]))


@pytest.mark.parametrize("engine_name", ENGINES)
def test_the_alias_holds_the_buffer_until_it_goes(engine_name):
    start_engine(engine_name, mem_pool="naive")
    x = mv.zeros(1 << 16)
    mv.wait_for_all()
    before = mv.memory_stats()["in_use_bytes"]
    alias = np.asarray(x)[::2]
    x += 1  # the write copies first: the alias keeps the old buffer
    mv.wait_for_all()
    assert mv.memory_stats()["in_use_bytes"] == 2 * before
    assert not alias.any()
    del alias
    gc.collect()
    mv.wait_for_all()
    x += 1  # the hold is gone: writes are in place again, and the old buffer is freed
    mv.wait_for_all()
    assert mv.memory_stats()["in_use_bytes"] == before
    check(x, np.full(1 << 16, 2.0))


@pytest.mark.parametrize("copy", [None, True, False], ids=repr)
@pytest.mark.parametrize("dtype", [None, np.float64, np.float32])
def test_dunder_array_follows_numpys_copy_rules(engine, dtype, copy):
    x = mv.arange(4.0)
    shared = np.asarray(x)
    got = outcome(lambda: x.__array__(dtype, copy=copy))
    want = outcome(lambda: np.arange(4.0).__array__(dtype, copy=copy))
    if want[0] == "raised":
        assert got[0] == "raised" and isinstance(got[1], type(want[1]))
        return
    values = got[1]
    assert values.dtype == want[1].dtype
    np.testing.assert_array_equal(values, want[1])
    aliases = pointer(values) == pointer(shared)
    assert aliases == (copy is not True and np.dtype(dtype or np.float64) == np.float64)
    assert values.flags.writeable == (not aliases)


@pytest.mark.parametrize("call", [
    lambda x: np.array(x), lambda x: np.array(x, copy=True), lambda x: np.copy(x),
    lambda x: x.to_numpy(), lambda x: np.asarray(x, dtype=np.float32)])
def test_copies_are_private_and_writable(engine, call):
    x = mv.arange(4.0)
    values = call(x)
    assert values.flags.writeable and pointer(values) != pointer(np.asarray(x))
    values[0] = 7
    check(x, np.arange(4.0))


def test_np_asarray_with_copy_false_aliases(engine):
    x = mv.arange(3.0)
    assert pointer(np.asarray(x, copy=False)) == pointer(np.asarray(x))
    with pytest.raises(ValueError):
        np.asarray(x, dtype=np.int32, copy=False)


def test_numpy_takes_the_alias_through_the_interface_not_a_struct(engine):
    """NumPy asks ``__array_struct__`` first; an NArray has none (a capsule could not keep
    the buffer alive), so ``numpy.asarray`` reads ``__array_interface__``, whose buffer
    object keeps the hold on the value."""
    x = mv.arange(3.0)
    assert not hasattr(x, "__array_struct__")
    base, bases = np.asarray(x), []
    while base is not None:
        bases.append(type(base))
        base = getattr(base, "base", None)
    assert HostExport in bases


def test_writes_through_numpy_to_an_alias_are_refused_in_place_functions(engine):
    x = mv.arange(4.0)
    with pytest.raises(ValueError):
        np.add(np.asarray(x), 1, out=np.asarray(x))
    with pytest.raises(ValueError):
        np.asarray(x).sort()
    check(x, np.arange(4.0))


def test_a_pending_array_is_waited_for_then_aliased(engine):
    x = mv.ones(1000) * 3
    alias = np.asarray(x)
    assert alias.sum() == 3000.0 and not alias.flags.writeable


# ---- DLPack -------------------------------------------------------------------------------

def test_dlpack_export_is_zero_copy_and_read_only(engine):
    x = mv.arange(6.0).reshape(2, 3)
    exported = np.from_dlpack(x)
    assert pointer(exported) == pointer(np.asarray(x)) and not exported.flags.writeable
    x += 1
    np.testing.assert_array_equal(exported, np.arange(6.0).reshape(2, 3))
    strided = np.from_dlpack(x[:, 1])
    np.testing.assert_array_equal(strided, [2.0, 5.0])


class Exporter:
    """A DLPack producer that calls ``x.__dlpack__`` with the given keywords."""

    def __init__(self, x, kwargs):
        self.x, self.kwargs = x, kwargs

    def __dlpack__(self, **kwargs):
        return self.x.__dlpack__(**{**kwargs, **self.kwargs})

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


@pytest.mark.parametrize("copy", [None, True, False], ids=repr)
@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=repr)
def test_dunder_dlpack_follows_the_copy_rules(engine, max_version, copy):
    """A consumer that reads DLPack's read-only flag (1.0) gets the buffer itself unless
    it asks for a copy; an older one gets a private copy, or BufferError (NumPy's) when it
    forbids copies."""
    x = mv.arange(4.0)
    got = outcome(lambda: np.from_dlpack(Exporter(x, {"max_version": max_version,
                                                     "copy": copy})))
    if max_version is None and copy is False:
        assert got[0] == "raised" and isinstance(got[1], BufferError)
        readonly = np.arange(4.0)
        readonly.flags.writeable = False
        with pytest.raises(BufferError):
            readonly.__dlpack__(copy=False)  # NumPy's answer to the same request
        return
    assert got[0] == "ok"
    np.testing.assert_array_equal(got[1], np.arange(4.0))
    shared = pointer(got[1]) == pointer(np.asarray(x))
    assert shared == (max_version is not None and copy is not True)
    if max_version is not None:  # NumPy reads a legacy capsule as read-only anyway
        assert got[1].flags.writeable == (not shared)


def test_from_dlpack_with_copy_false_never_copies(engine):
    x = mv.arange(3.0)
    assert mv.from_dlpack(x, copy=False) is x
    with pytest.raises(ValueError, match="copy=False"):
        mv.from_dlpack(np.arange(3.0), copy=False)
    y = mv.from_dlpack(x, copy=True)
    y += 1
    check(x, np.arange(3.0))


# ---- a GPU device (on the CUDA test double) ---------------------------------------------------

@pytest.fixture
def fake_gpu(monkeypatch):
    """The current device: a GPU device over the CUDA test double."""
    yield from gpu_runtime(monkeypatch)


def test_a_gpu_array_is_copied_to_the_host_and_never_aliased(fake_gpu):
    x = mv.array(np.arange(4.0))
    assert not hasattr(x, "__array_interface__")  # NumPy asks __array__, which copies
    values = np.asarray(x)
    assert values.flags.writeable
    np.testing.assert_array_equal(values, np.arange(4.0))
    for call in (lambda: np.asarray(x, copy=False), lambda: x.__array__(copy=False)):
        with pytest.raises(ValueError, match="Unable to avoid copy"):
            call()
    with pytest.raises(BufferError):
        x.__dlpack__(copy=False)
    assert list(x) == list(np.arange(4.0))


def test_a_gpu_view_reads_another_dtype_of_its_itemsize(fake_gpu):
    host = np.arange(4.0)
    x = mv.array(host)
    check(x.view(np.int64), host.view(np.int64))
    x.view(np.int64)[0] = 5
    host.view(np.int64)[0] = 5
    check(x, host)
    with pytest.raises(TypeError, match="same itemsize"):
        x.view(np.uint8)


def test_an_element_of_a_gpu_array_is_a_lazy_scalar(fake_gpu):
    x = mv.array(np.arange(4.0))
    got = x[1]
    assert type(got) is mv.NArray and repr(got) == repr(np.float64(1.0))
