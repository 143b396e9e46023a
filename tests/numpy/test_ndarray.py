"""NArray's ``numpy.ndarray`` surface, NumPy as the oracle: ``.shape =`` and ``.strides =``
(views, NumPy's errors), ``.view(dtype)``, ``getfield``/``setfield``, ``.flat``, ``flags``
(settable ``writeable``, ``setflags``), ``.base``, ``tobytes``/``tofile``/``byteswap``/
``resize``, ``__array_interface__``, ``item``, ``ctypes``, ``data``, pickles."""
from __future__ import annotations

import operator
import pickle
import warnings

import numpy as np
import pytest

import minerva as mv


def outcome(function, *args):
    """``("ok", value)`` or ``("raised", exception)`` of ``function(*args)``."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", function(*args)
    except Exception as exc:  # noqa: BLE001  (the oracle's error is part of the answer)
        return "raised", exc


def check(got, want) -> None:
    """``got`` holds NumPy's ``want``: an NArray (or a tuple of them) of the same values,
    dtype and shape; a Python or NumPy scalar equal to it, of its type."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w)
        return
    if isinstance(want, np.ndarray):
        assert isinstance(got, mv.NArray), type(got)
        values = got.to_numpy()
        assert values.dtype == want.dtype and values.shape == want.shape, (values, want)
        np.testing.assert_array_equal(values, want)
        return
    if isinstance(got, mv.NArray):  # a NumPy scalar's stand-in
        got = got.to_numpy()[()]
    assert type(got) is type(want) and (got == want or got != got and want != want), (
        got, want)


def builtin_class(exc: BaseException) -> type:
    """The class of ``exc``, or for NumPy's own classes (``UFuncTypeError``, ``AxisError``)
    the Python class they are (TypeError, ValueError ...)."""
    for kind in type(exc).__mro__:
        if not kind.__module__.startswith("numpy"):
            return kind
    return type(exc)


def same_as_numpy(got, want) -> None:
    """minerva's outcome ``got`` is NumPy's ``want``: the same values, or an error of
    NumPy's class."""
    if want[0] == "raised":
        assert got[0] == "raised", f"NumPy raised {want[1]!r}; minerva gave {got[1]!r}"
        assert isinstance(got[1], builtin_class(want[1])), (got[1], want[1])
        return
    assert got[0] == "ok", f"NumPy gave {want[1]!r}; minerva raised {got[1]!r}"
    check(got[1], want[1])


def both(call, host):
    """``call(array)`` on an NArray of ``host`` and on a copy of ``host``: the two
    outcomes, then the two arrays (to compare what a call did to them)."""
    x, h = mv.array(host), np.array(host)
    return outcome(call, x), outcome(call, h), x, h


# ---- x.shape = ..., x.strides = ... -------------------------------------------------------

SHAPE_CASES = {
    "C reshape": (lambda a: a, (3, 2)), "with -1": (lambda a: a, (-1,)),
    "an int": (lambda a: a, 6), "of a slice": (lambda a: a[:, :2], (4,)),
    "transposed": (lambda a: a.T, (6,)), "strided": (lambda a: a[:, ::2], (4,)),
    "wrong size": (lambda a: a, (4,)), "two -1": (lambda a: a, (-1, -1)),
    "of a column": (lambda a: a[:, 1:2], (2,)), "0-d": (lambda a: a[0, 0:1], ()),
}


@pytest.mark.parametrize("case", list(SHAPE_CASES))
def test_setting_the_shape_is_numpys(engine, case):
    pick, shape = SHAPE_CASES[case]
    host = np.arange(6.0).reshape(2, 3)
    x = mv.array(host)
    xs, hs = pick(x), pick(host)
    got, want = outcome(setattr, xs, "shape", shape), outcome(setattr, hs, "shape", shape)
    same_as_numpy(got, want)
    assert xs.shape == hs.shape and xs.strides == hs.strides
    xs[...] = -1  # a view of the same memory: the write reaches the base
    hs[...] = -1
    check(x, host)
    if want[0] == "raised" and isinstance(want[1], AttributeError):
        assert str(got[1]) == str(want[1])


def test_a_reshaped_handle_keeps_its_base(engine):
    x = mv.arange(6.0)
    y = x[:]
    y.shape = (2, 3)
    assert y.base is x and y.shape == (2, 3) and x.shape == (6,)


def set_strides(a, strides):
    """The outcome of ``a.strides = strides``, and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            a.strides = strides
            result = ("ok", a)
        except Exception as exc:  # noqa: BLE001  (the oracle's error is the answer)
            result = ("raised", exc)
    return result, [w.category for w in caught]


@pytest.mark.parametrize("strides", [(16,), (8,), (0,), (24,), (-8,), (8, 8), (16.0,)],
                         ids=repr)
def test_setting_strides_is_numpys_and_warns_as_numpy(engine, strides):
    host = np.arange(6.0)
    x = mv.array(host)
    view, hview = x[:3], host[:3]
    (got, got_warnings), (want, want_warnings) = set_strides(view, strides), set_strides(
        hview, strides)
    assert got_warnings == want_warnings == [DeprecationWarning]
    same_as_numpy(got, (want[0], want[1].copy()) if want[0] == "ok" else want)
    assert view.strides == hview.strides and view.shape == hview.shape
    assert view.flags.c_contiguous == hview.flags.c_contiguous
    if want[0] == "ok" and 0 not in hview.strides:
        view[...] = view * 10  # the same memory as NumPy's: the write lands where it does
        hview[...] = hview * 10
        check(x, host)


# ---- x.view(dtype), getfield, setfield ------------------------------------------------------

VIEWED = {"contiguous": lambda a: a, "strided": lambda a: a[::2], "2-D": lambda a:
          a.reshape(2, 4), "transposed": lambda a: a.reshape(2, 4).T, "row": lambda a:
          a.reshape(2, 4)[1], "empty": lambda a: a[:0], "0-d": lambda a: a[3], }
DTYPES = [np.uint8, np.int16, np.int32, np.float32, np.float64, np.complex128, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", list(VIEWED))
def test_view_as_another_dtype_is_numpys(engine, kind, dtype):
    host = np.arange(8, dtype=np.float32) * 1.5 - 3
    x = mv.array(host)
    xs, hs = VIEWED[kind](x), VIEWED[kind](host)
    if kind == "0-d":
        xs, hs = x[3:4].reshape(()), host[3:4].reshape(())
    got, want = outcome(lambda a: a.view(dtype), xs), outcome(lambda a: a.view(dtype), hs)
    same_as_numpy(got, want)
    if want[0] == "ok":
        view, hview = got[1], want[1]
        assert view.strides == hview.strides and view.base is x
        if view.size and dtype is not np.bool_:
            view[...] = hview[::-1] if view.ndim else hview  # written through the view
            hview[...] = hview[::-1] if hview.ndim else hview
        check(x, host)


def test_view_of_a_view_reads_the_first_dtype_chain(engine):
    host = np.arange(6, dtype=np.int64)
    x = mv.array(host)
    y = x.view(np.float64)[1:].view(np.uint8)[::8]
    want = host.view(np.float64)[1:].view(np.uint8)[::8]
    check(y, want)
    check(y.reshape(-1, 1).copy(), want.reshape(-1, 1).copy())
    check(mv.sum(x.view(np.int32)), np.sum(host.view(np.int32)))


def test_view_types(engine):
    x = mv.arange(4.0)
    same = x.view()
    assert isinstance(same, mv.NArray) and same is not x and same.base is x
    assert isinstance(x.view(mv.NArray), mv.NArray)
    host = x.view(np.ndarray)
    assert type(host) is np.ndarray and not host.flags.writeable
    np.testing.assert_array_equal(host, np.arange(4.0))
    assert outcome(x.view, list)[0] == "raised"
    assert outcome(np.arange(4.0).view, list)[0] == "raised"


@pytest.mark.parametrize("dtype, offset", [(np.float32, 0), (np.float32, 4), (np.int16, 6),
                                           (np.float32, 6), (np.float32, -4),
                                           (np.float64, 0), (np.uint8, 7)])
def test_getfield_and_setfield_are_numpys(engine, dtype, offset):
    host = np.arange(6.0).reshape(2, 3) * 1.25
    got, want, x, h = both(lambda a: a.getfield(dtype, offset), host)
    same_as_numpy(got, want)
    got, want, x, h = both(lambda a: a.setfield(7, dtype, offset), host)
    same_as_numpy(got, want)
    check(x, h)


def test_getfield_is_a_view(engine):
    host = np.arange(3.0)
    x = mv.array(host)
    field = x.getfield(np.float32, 4)
    field[...] = 1.0
    host.getfield(np.float32, 4)[...] = 1.0
    check(x, host)


# ---- x.flat --------------------------------------------------------------------------------

FLAT_READS = {"int": 4, "negative": -1, "slice": slice(1, 5), "step": slice(None, None, 2),
              "list": [0, 5, 2], "mask": np.arange(6) % 2 == 0, "ellipsis": Ellipsis,
              "tuple of one": (3,), "out of bounds": 6, "two indices": (1, 2),
              "empty list": []}


@pytest.mark.parametrize("key", list(FLAT_READS))
@pytest.mark.parametrize("kind", ["C", "transposed"])
def test_flat_reads_are_numpys(engine, kind, key):
    host = np.arange(6.0).reshape(2, 3) * 2
    host = host if kind == "C" else host.T
    x = mv.array(host)
    same_as_numpy(outcome(lambda a: a.flat[FLAT_READS[key]], x),
                  outcome(lambda a: a.flat[FLAT_READS[key]], host))


FLAT_WRITES = {"int": (4, 9.0), "slice scalar": (slice(1, 5), -1), "list cycled": (
    [1, 2, 3], [10, 20]), "mask": (np.arange(6) > 2, [7, 8, 9]), "ellipsis": (
    Ellipsis, [1, 2]), "an array": (slice(None), np.arange(6.0)[::-1]), "empty": ([], 5)}


@pytest.mark.parametrize("key", list(FLAT_WRITES))
def test_flat_writes_are_numpys(engine, key):
    index, value = FLAT_WRITES[key]
    host = np.zeros((2, 3))
    got, want, x, h = both(lambda a: a.flat.__setitem__(index, value), host)
    same_as_numpy(got, want)
    check(x, h)


def test_flat_of_a_view_writes_the_base(engine):
    host = np.zeros((3, 4))
    x = mv.array(host)
    x[:, 1:].T.flat[[0, 4]] = 5
    host[:, 1:].T.flat[[0, 4]] = 5
    check(x, host)
    x.flat = [1, 2]
    host.flat = [1, 2]
    check(x, host)


def test_the_flat_iterator_is_numpys(engine):
    host = np.arange(6).reshape(2, 3).T
    x = mv.array(host)
    flat, hflat = x.flat, host.flat
    assert len(flat) == len(hflat) and flat.base is x
    assert [next(flat) for _ in range(2)] == [next(hflat) for _ in range(2)]
    assert flat.index == hflat.index and flat.coords == hflat.coords
    assert list(flat) == list(hflat)
    check(x.flat.copy(), host.flat.copy())
    np.testing.assert_array_equal(np.asarray(x.flat), np.asarray(host.flat))
    assert [type(v) for v in x.flat] == [type(v) for v in host.flat]


# ---- flags, setflags, base -----------------------------------------------------------------

WRITES = {"item": lambda a: a.__setitem__(0, 1), "slice": lambda a: a.__setitem__(
    slice(None), 2), "mask": lambda a: a.__setitem__(np.ones(a.shape, bool), 3),
    "in place": lambda a: a.__iadd__(1), "out=": lambda a: np.add(a, 1, out=a),
    "fill": lambda a: a.fill(4), "view write": lambda a: a[1:].__setitem__(0, 5)}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_read_only_array_refuses_writes_as_numpy(engine, write):
    host = np.arange(4.0)
    x = mv.array(host)
    x.flags.writeable = False
    host.flags.writeable = False
    got, want = outcome(WRITES[write], x), outcome(WRITES[write], host)
    same_as_numpy(got, want)
    assert isinstance(got[1], ValueError) and "read-only" in str(got[1])
    check(x, np.arange(4.0))
    x.flags.writeable = True
    host.flags.writeable = True
    same_as_numpy(outcome(WRITES[write], x), outcome(WRITES[write], host))
    check(x, host)


def test_an_item_write_raises_numpys_words(engine):
    x = mv.zeros(3)
    x.setflags(write=False)
    with pytest.raises(ValueError, match="^assignment destination is read-only$"):
        x[0] = 1


def test_turning_writes_back_on_is_refused_where_numpy_refuses(engine):
    host = np.arange(4.0)
    x = mv.array(host)
    for a in (x, host):
        a.flags.writeable = False
    xv, hv = x[1:], host[1:]
    assert xv.flags.writeable == hv.flags.writeable is False
    same_as_numpy(outcome(lambda a: a.setflags(write=True), xv),
                  outcome(lambda a: a.setflags(write=True), hv))
    for a in (x, host):
        a.flags["W"] = True
    for a in (xv, hv):
        a.flags.writeable = True
    xv[0] = 9
    hv[0] = 9
    check(x, host)


def test_a_broadcast_view_is_read_only_until_made_writeable_as_numpy(engine):
    host = np.arange(3.0)
    x = mv.array(host)
    xb, hb = mv.broadcast_to(x, (2, 3)), np.broadcast_to(host, (2, 3))
    assert xb.flags.writeable == hb.flags.writeable is False
    same_as_numpy(outcome(lambda a: a.__setitem__(0, 1), xb),
                  outcome(lambda a: a.__setitem__(0, 1), hb))
    for a in (xb, hb):
        a.flags.writeable = True  # allowed in NumPy 2.4: the base is writeable
    xb[0, 1] = 7
    hb[0, 1] = 7
    check(x, host)


@pytest.mark.parametrize("change", [
    lambda f: setattr(f, "c_contiguous", False), lambda f: f.__setitem__("C", True),
    lambda f: f.__setitem__("OWNDATA", False), lambda f: setattr(f, "nothing", 1),
    lambda f: setattr(f, "writebackifcopy", True), lambda f: f.__setitem__("X", True)])
def test_other_flags_are_not_settable_as_numpy(engine, change):
    same_as_numpy(outcome(change, mv.zeros(2).flags), outcome(change, np.zeros(2).flags))


def test_setflags_is_numpys(engine):
    x = mv.zeros(2)
    same_as_numpy(outcome(lambda a: a.setflags(uic=True), x),
                  outcome(lambda a: a.setflags(uic=True), np.zeros(2)))
    x.setflags(write=False, align=True, uic=False)
    assert x.flags.writeable is False and x.flags.aligned
    x.setflags(write=True)
    assert x.flags["WRITEABLE"]


BASES = {"owner": lambda a: a, "slice": lambda a: a[1:], "view of a view": lambda a:
         a[1:][::2], "reshape": lambda a: a.reshape(2, 3), "transpose": lambda a:
         a.reshape(2, 3).T, "copy": lambda a: a.copy(), "F copy": lambda a: a.reshape(2, 3).copy("F"),
         "ravel view": lambda a: a.ravel(), "astype": lambda a: a.astype(np.float32),
         "view()": lambda a: a.view(), "view(dtype)": lambda a: a.view(np.int64),
         "index": lambda a: a[None], "getfield": lambda a: a.getfield(np.float32)}


@pytest.mark.parametrize("kind", list(BASES))
def test_base_is_numpys(engine, kind):
    host = np.arange(6.0)
    x = mv.array(host)
    got, want = BASES[kind](x), BASES[kind](host)
    if want.base is None:
        assert got.base is None
    else:
        assert want.base is host and got.base is x
    assert got.flags.owndata == want.flags.owndata


def test_a_reshape_that_copies_is_not_a_view_of_its_input(engine):
    x = mv.arange(6.0)
    y = x.reshape(2, 3).T.reshape(6)
    assert y.base is not x and np.arange(6.0).reshape(2, 3).T.reshape(6).base is not None


def test_a_view_of_an_f_ordered_copy_has_the_copy_as_base(engine):
    x = mv.arange(6.0).reshape(2, 3).copy("F")
    assert x.base is None and x[1:].base is x


# ---- bytes, files, byteswap, resize ---------------------------------------------------------

@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("pick", [lambda a: a, lambda a: a.T, lambda a: a[:, ::2]],
                         ids=["C", "T", "strided"])
def test_tobytes_is_numpys(engine, pick, order):
    host = np.arange(12, dtype=np.int16).reshape(3, 4)
    same_as_numpy(outcome(lambda a: pick(a).tobytes(order), mv.array(host)),
                  outcome(lambda a: pick(a).tobytes(order), host))


@pytest.mark.parametrize("sep", ["", " ", ","])
def test_tofile_writes_what_numpy_writes(engine, tmp_path, sep):
    host = np.arange(6.0).reshape(2, 3).T * 0.5
    mv.array(host.T).T.tofile(tmp_path / "mine", sep=sep)
    host.tofile(tmp_path / "numpys", sep=sep)
    assert (tmp_path / "mine").read_bytes() == (tmp_path / "numpys").read_bytes()
    with open(tmp_path / "open", "wb") as stream:
        mv.array(host).tofile(stream, sep=sep)
    assert (tmp_path / "open").read_bytes() == (tmp_path / "numpys").read_bytes()


@pytest.mark.parametrize("dtype", [np.int16, np.int64, np.float32, np.complex64, np.uint8,
                                   np.bool_])
def test_byteswap_is_numpys(engine, dtype):
    host = (np.arange(6) * 37 + 1).astype(dtype).reshape(2, 3)
    x = mv.array(host)
    check(x.byteswap(), host.byteswap())
    check(x.T.byteswap(), host.T.byteswap())
    check(x, host)
    x[:, 1:].byteswap(inplace=True)
    host[:, 1:].byteswap(inplace=True)
    check(x, host)


@pytest.mark.parametrize("shape", [(2, 4), 8, (3,), (0,), (2, 2, 3)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_resize_is_numpys(engine, shape, order):
    host = np.array(np.arange(6).reshape(2, 3), order=order)
    x = mv.array(host, order=order)
    got, want = outcome(lambda a: a.resize(shape, refcheck=False), x), outcome(
        lambda a: a.resize(shape, refcheck=False), host)
    same_as_numpy(got, want)
    check(x, host)
    assert x.flags.f_contiguous == host.flags.f_contiguous


def test_resize_takes_ints_and_refuses_views_as_numpy(engine):
    host = np.arange(4)
    x = mv.array(host)
    x.resize(2, 3)
    host.resize(2, 3)
    check(x, host)
    same_as_numpy(outcome(lambda a: a[1:].resize(2), x),
                  outcome(lambda a: a[1:].resize(2), np.arange(4)))
    same_as_numpy(outcome(lambda a: a.resize(-1), x), outcome(lambda a: a.resize(-1), host))


def test_resize_gives_earlier_views_the_old_buffer(engine):
    x = mv.arange(4)
    view = x[:2]
    x.resize(6)
    x[0] = 9
    check(view, np.arange(2))
    check(x, np.array([9, 1, 2, 3, 0, 0]))


# ---- __array_interface__, item, ctypes, data, pickles ---------------------------------------

@pytest.mark.parametrize("pick", [lambda a: a, lambda a: a[1:, ::2], lambda a: a.T,
                                  lambda a: a[:0], lambda a: a[1, 2:3].reshape(())],
                         ids=["C", "strided", "T", "empty", "0-d"])
def test_array_interface_is_numpys(engine, pick):
    host = np.arange(12.0).reshape(3, 4)
    x = pick(mv.array(host))
    got, want = x.__array_interface__, pick(host).__array_interface__
    for key in ("shape", "typestr", "descr", "version"):
        assert got[key] == want[key], key
    assert (got["strides"] is None) == (want["strides"] is None)
    if got["strides"] is not None:
        assert got["strides"] == want["strides"]
    values = np.asarray(x)
    np.testing.assert_array_equal(values, pick(host))
    assert values.strides == pick(host).strides or not values.size


def test_array_interface_is_the_computed_buffer(engine):
    x = mv.arange(8.0)
    y = x[2:]
    face = y.__array_interface__
    pointer = face["data"].__array_interface__["data"][0] + face["offset"]
    assert pointer == np.asarray(x).ctypes.data + 16 == np.asarray(y).ctypes.data


@pytest.mark.parametrize("args", [(), (3,), (-1,), ((1, 2),), (1, 2), (12,), (1,),
                                  ((1,),), (0, 9), ("a",)], ids=repr)
@pytest.mark.parametrize("shape", [(3, 4), (1,), ()])
def test_item_is_numpys(engine, shape, args):
    host = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 0.5
    same_as_numpy(outcome(lambda a: a.item(*args), mv.array(host)),
                  outcome(lambda a: a.item(*args), host))


def test_item_of_a_view_and_a_typed_view(engine):
    host = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = mv.array(host)
    assert x.T.item(5) == host.T.item(5) and x[::2, 1:].item(1, 2) == host[::2, 1:].item(1, 2)
    assert x.view(np.float32).item(7) == host.view(np.float32).item(7)


def test_ctypes_and_data_are_the_values_on_the_host(engine):
    host = np.arange(6.0).reshape(2, 3)
    x = mv.array(host)
    assert x.ctypes.shape[:] == host.ctypes.shape[:]
    assert x.ctypes.data == np.asarray(x).ctypes.data
    assert bytes(x.data) == bytes(host.data) and x.data.readonly
    assert bytes(x.T.data) == bytes(host.T.data)


def test_dumps_and_dump_pickle_the_array(engine, tmp_path):
    x = mv.arange(6.0).reshape(2, 3).T
    check(pickle.loads(x.dumps()), np.arange(6.0).reshape(2, 3).T)
    x.dump(tmp_path / "x.pickle")
    with open(tmp_path / "x.pickle", "rb") as stream:
        check(pickle.load(stream), np.arange(6.0).reshape(2, 3).T)
    with open(tmp_path / "y.pickle", "wb") as stream:
        x.dump(stream)
    check(np.load(tmp_path / "y.pickle", allow_pickle=True), np.arange(6.0).reshape(2, 3).T)


def test_metadata_and_lists_are_numpys(engine):
    host = np.arange(6, dtype=np.int16).reshape(2, 3)[:, ::2]
    x = mv.array(np.arange(6, dtype=np.int16).reshape(2, 3))[:, ::2]
    assert (x.nbytes, x.itemsize, x.ndim, x.size) == (host.nbytes, host.itemsize,
                                                     host.ndim, host.size)
    assert x.tolist() == host.tolist()


def test_deleting_elements_and_class_subscripts_are_numpys(engine):
    same_as_numpy(outcome(operator.delitem, mv.zeros(3), 0),
                  outcome(operator.delitem, np.zeros(3), 0))
    assert mv.NArray[(int, np.dtype)].__origin__ is mv.NArray


NATIVE = ("base", "byteswap", "ctypes", "data", "dump", "dumps", "flat", "getfield",
          "resize", "setfield", "setflags", "tobytes", "tofile", "view", "item", "tolist",
          "nbytes", "itemsize", "fill", "sort", "put", "nonzero", "clip", "cumsum",
          "__array_interface__", "__delitem__", "__class_getitem__", "__array__")


@pytest.mark.parametrize("name", NATIVE)
def test_these_ndarray_names_are_natives_of_narray(name):
    assert name in dir(np.ndarray) and name in vars(mv.NArray), name


def test_a_view_keeps_its_base_after_the_base_handle_goes(engine):
    x = mv.array(np.arange(6.0).reshape(2, 3))
    y = x[1:][:, ::2]
    del x
    base = y.base
    assert base is y.base and base.shape == (2, 3) and base.base is None
    check(base, np.arange(6.0).reshape(2, 3))
    assert mv.arange(6.0).reshape(2, 3)[1:].base.shape == np.arange(6.0).reshape(2, 3)[
        1:].base.shape == (6,)  # the owner of the data, as NumPy's
