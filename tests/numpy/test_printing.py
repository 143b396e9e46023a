"""Printing, as NumPy prints: ``repr`` and ``str`` of arrays of many shapes and dtypes
(nested, empty, large and summarized, views) give NumPy's text; NumPy's print options
(``set_printoptions``, ``get_printoptions``, ``printoptions``) hold; ``array2string``,
``array_repr``, ``array_str``, ``format_float_positional`` and ``format_float_scientific``
take NArrays; printing waits for pending values; an array whose op failed prints as such
(``repr``) or raises its error (``str``)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import minerva as mv
from minerva.builder import build
from tests.support.gates import gated_op

ARRAYS = {
    "float64 1-D": np.array([0.0, 1.0]),
    "int64 2-D": np.array([[1, 2], [3, 4]]),
    "float32": np.arange(5, dtype=np.float32) / 3,
    "float16": np.array([0.1, 2.5, -7.0], dtype=np.float16),
    "int8": np.array([-3, 0, 127], dtype=np.int8),
    "int16": np.array([[300, -2]], dtype=np.int16),
    "int32": np.arange(6, dtype=np.int32).reshape(3, 2),
    "uint8": np.array([0, 255], dtype=np.uint8),
    "uint64": np.array([2**63, 1], dtype=np.uint64),
    "int64 wide": np.array([2**62, -(2**62)]),
    "bool": np.array([True, False, True]),
    "bool 2-D": np.eye(3, dtype=bool),
    "complex128": np.array([1 + 2j, -0.5j, 3.0]),
    "complex64": np.array([[1 + 1j], [2 - 3.5j]], dtype=np.complex64),
    "nan inf -0": np.array([np.nan, np.inf, -np.inf, -0.0, 1.0]),
    "tiny and huge": np.array([1e-10, 1.0, 1e10]),
    "thirds": np.array([1 / 3, 2 / 3, -1e-3]),
    "3-D": np.arange(24).reshape(2, 3, 4),
    "4-D float": np.arange(16.0).reshape(2, 2, 2, 2) / 7,
    "empty": np.array([]),
    "empty 2-D": np.zeros((0, 3)),
    "empty int32 2-D": np.zeros((2, 0), dtype=np.int32),
    "empty bool 3-D": np.zeros((2, 0, 2), dtype=bool),
    "large 1-D, summarized": np.arange(2000.0),
    "large 2-D, summarized": np.arange(100_000).reshape(100, 1000),
    "large 3-D, summarized": np.arange(4000, dtype=np.int16).reshape(10, 20, 20),
    "long lines": np.linspace(0.0, 1.0, 30),
    "0-d float": np.array(2.5),
    "0-d int8": np.array(3, dtype=np.int8),
    "0-d complex": np.array(1 - 1j),
    "0-d bool": np.array(False),
    "one element": np.array([7]),
    "longdouble": np.array([1.5, 2.0], dtype=np.longdouble),
}


@pytest.mark.parametrize("name", list(ARRAYS))
def test_repr_and_str_are_numpys(name):
    values = ARRAYS[name]
    x = mv.array(values)
    assert repr(x) == repr(values)
    assert str(x) == str(values)
    assert f"{x}" == f"{values}" and "%s" % (x,) == "%s" % (values,)


VIEWS = {
    "transposed": lambda a: a.T,
    "every other row": lambda a: a[::2],
    "a column": lambda a: a[:, 1],
    "reversed": lambda a: a[::-1, ::-1],
    "reshaped": lambda a: a.reshape(4, 3),
    "broadcast": lambda a: np.broadcast_to(a[0], (2, 4)),
    "a row of a 3-D view": lambda a: a.reshape(2, 3, 2)[1],
}


@pytest.mark.parametrize("view", list(VIEWS))
def test_views_print_their_elements_as_numpys(view):
    values = np.arange(12.0).reshape(3, 4) / 4
    got, want = VIEWS[view](mv.array(values)), VIEWS[view](values)
    assert repr(got) == repr(want) and str(got) == str(want)


def test_printing_is_the_same_under_every_engine(engine, capsys):
    values = np.arange(6, dtype=np.int16).reshape(2, 3) - 2
    x = mv.array(values)
    print(x, repr(x * 2), [x.sum(), x[1, 2]])
    shown = capsys.readouterr().out
    print(values, repr(values * 2), [values.sum(), values[1, 2]])
    assert shown == capsys.readouterr().out


def test_containers_of_scalars_and_arrays_print_as_numpys():
    values = np.arange(4.0)
    x = mv.array(values)
    assert repr([x.sum(), x[1], x.argmax()]) == repr([values.sum(), values[1],
                                                      values.argmax()])
    assert str({"w": x, "n": x.max()}) == str({"w": values, "n": values.max()})
    assert repr((x[:2], x > 1)) == repr((values[:2], values > 1))


def test_a_non_empty_format_spec_of_an_array_is_refused_as_numpys():
    x = mv.arange(3.0)
    with pytest.raises(TypeError, match="unsupported format string passed to "
                                        "numpy.ndarray.__format__"):
        format(x, ".2f")
    assert format(x, "") == format(np.arange(3.0), "")
    assert f"{mv.array(2.0):.3f}" == f"{np.array(2.0):.3f}" == "2.000"


# ---- print options -----------------------------------------------------------------------

@pytest.fixture
def saved_printoptions():
    """The print options as they were, restored after the test."""
    saved = np.get_printoptions()
    yield
    np.set_printoptions(**saved)


def test_the_print_option_functions_are_numpys():
    assert mv.set_printoptions is np.set_printoptions
    assert mv.get_printoptions is np.get_printoptions
    assert mv.printoptions is np.printoptions
    assert mv.get_printoptions() == np.get_printoptions()


OPTIONS = [
    {"precision": 2, "suppress": True},
    {"threshold": 5, "edgeitems": 1},
    {"linewidth": 20},
    {"sign": "+", "floatmode": "fixed", "precision": 3},
    {"formatter": {"float": lambda v: f"<{v:.1f}>"}},
    {"nanstr": "missing", "infstr": "big"},
    {"legacy": "1.25"},
]


@pytest.mark.usefixtures("saved_printoptions")
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o))
def test_print_options_are_honoured(options):
    values = np.array([[1 / 3, -2.0, np.nan], [1e-9, np.inf, 12.5]])
    x = mv.array(values)
    with mv.printoptions(**options):
        assert repr(x) == repr(values) and str(x) == str(values)
        assert repr(x.sum(axis=None)) == repr(values.sum())
        assert repr(x[0, 0]) == repr(values[0, 0]) and str(x[1, 2]) == str(values[1, 2])
    mv.set_printoptions(**options)
    assert repr(x) == repr(values) and repr(mv.arange(3000)) == repr(np.arange(3000))


@pytest.mark.usefixtures("saved_printoptions")
def test_legacy_printing_shows_scalars_as_numpy_1_25_did():
    x = mv.arange(4.0)
    mv.set_printoptions(legacy="1.25")
    assert repr(x.sum()) == "6.0" and repr(x.argmax()) == "3" and repr(x.any()) == "True"


# ---- NumPy's printing functions ----------------------------------------------------------

def test_numpys_printing_functions_take_narrays():
    values = np.arange(12.0).reshape(3, 4) / 3
    x = mv.array(values)
    for function in (np.array2string, np.array_repr, np.array_str):
        assert function(x) == function(values)
    assert np.array2string(x, separator=", ", precision=2) == np.array2string(
        values, separator=", ", precision=2)
    assert mv.array2string(x, max_line_width=30, prefix="  ") == np.array2string(
        values, max_line_width=30, prefix="  ")
    assert mv.array_repr(x, precision=1) == np.array_repr(values, precision=1)
    assert mv.array_str(x, suppress_small=True) == np.array_str(values, suppress_small=True)
    assert mv.array2string(values) == np.array2string(values)  # NumPy arrays too


def test_format_float_functions_take_minerva_scalars():
    values = np.array([0.1, 0.2], dtype=np.float32)
    x = mv.array(values)
    for function in (mv.format_float_positional, mv.format_float_scientific):
        assert function(x.sum()) == function(values.sum())  # at float32's precision
        assert function(x[0], precision=3) == function(values[0], precision=3)
    wide = mv.array(values.astype(np.float64))  # NumPy's own take them as Python floats
    for function in (np.format_float_positional, np.format_float_scientific):
        assert function(wide.sum()) == function(values.astype(np.float64).sum())
        assert function(wide[1], precision=3) == function(np.float64(values[1]),
                                                          precision=3)
    assert mv.format_float_positional(x[1], unique=False, precision=12) == \
        np.format_float_positional(values[1], unique=False, precision=12)
    assert mv.format_float_scientific(mv.array([12345.678]), exp_digits=3) == \
        np.format_float_scientific(np.float64(12345.678), exp_digits=3)
    with pytest.raises(TypeError):
        mv.format_float_positional(x)


# ---- waiting, failures -------------------------------------------------------------------

GATED, GATE = gated_op("test_printing_gate")


@pytest.mark.parametrize("show", [repr, str], ids=["repr", "str"])
def test_printing_a_pending_array_waits_for_its_values(show):
    mv.init(engine="dag")
    GATE.clear()
    pending = build(GATED, [mv.arange(3.0)]) * 2
    total = pending.sum()
    opener = threading.Timer(0.3, GATE.set)
    started = time.monotonic()
    opener.start()
    try:
        assert show(pending) == show(np.arange(3.0) * 2)
        assert time.monotonic() - started >= 0.25
        assert show(total) == show(np.float64(6.0))
    finally:
        GATE.set()
        opener.join(timeout=30)


def _failed():
    """An array whose op fails when it runs (an index out of bounds), and its sum."""
    x = mv.arange(3.0)
    picked = x[mv.array([5, 0])]
    return picked, picked.sum()


def test_repr_of_a_failed_array_says_so_without_raising(engine):
    picked, total = _failed()
    text = repr(picked)
    assert text.startswith("NArray(shape=(2,), dtype=float64, device=0, failed: OpError: ")
    assert "out of bounds" in text and "\n" not in text
    assert repr(total).startswith("NArray(shape=(), dtype=float64, device=0, failed: ")
    mv.wait_for_all(timeout=30)  # the failure was reported by repr


def test_str_and_format_of_a_failed_array_raise_its_error(engine):
    picked, total = _failed()
    for show in (str, lambda v: f"{v}", lambda v: format(v, ".2f"), mv.array2string):
        with pytest.raises(mv.OpError, match="out of bounds"):
            show(total if show is not str else picked)


def test_repr_of_an_array_of_a_shut_down_runtime_does_not_raise():
    mv.init(engine="dag")
    GATE.clear()
    computed = mv.arange(3.0) + 1
    computed.wait(timeout=30)
    lost = build(GATED, [mv.arange(2.0)]) + 1
    opener = threading.Timer(0.5, GATE.set)
    opener.start()
    mv.shutdown(timeout=0.05)
    opener.join(timeout=30)
    assert repr(computed) == repr(np.arange(3.0) + 1)
    assert repr(lost).startswith("NArray(shape=(2,), dtype=float64, device=0, failed: ")
    assert "shutdown" in repr(lost)
    with pytest.raises(mv.MinervaError):
        str(lost)
