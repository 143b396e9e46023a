"""NArray's Python and NumPy surface, with NumPy as the oracle: comparisons with objects
that are not numbers, ``in``, ``divmod``, truth values, memory orders and ``flags``,
ufunc methods, dtypes minerva refuses at every entry point, and arrays of a runtime that
was shut down."""
from __future__ import annotations

import copy
import decimal
import fractions
import json
import operator
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import minerva as mv
from minerva.builder import build
from minerva.ops import registry
from tests.numpy.test_ndarray import outcome


def same_as_numpy(got, want) -> None:
    """``got`` (minerva's outcome) is NumPy's ``want``: the same values, dtype and shape,
    or an error of NumPy's class."""
    if want[0] == "raised":
        assert got[0] == "raised", f"NumPy raised {want[1]!r}; minerva gave {got[1]!r}"
        kinds = (type(want[1]), mv.ShapeError) if isinstance(want[1], np.exceptions.AxisError) \
            else type(want[1])  # minerva's bad axes are ShapeErrors (ValueErrors)
        assert isinstance(got[1], kinds), (got[1], want[1])
        return
    assert got[0] == "ok", f"NumPy gave {want[1]!r}; minerva raised {got[1]!r}"
    check(got[1], want[1])


def check(got, want) -> None:
    """``got`` (an NArray, or a tuple of them) holds exactly NumPy's ``want``."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w)
        return
    if not isinstance(want, (np.ndarray, np.generic)):  # a Python object's own answer
        assert type(got) is type(want) and got == want
        return
    assert isinstance(got, mv.NArray), type(got)
    values, want = got.to_numpy(), np.asarray(want)
    assert values.dtype == want.dtype and values.shape == want.shape, (values, want)
    np.testing.assert_array_equal(values, want)


# ---- comparisons with objects that are not numbers --------------------------------------

class AlwaysEqual:
    """An object whose ``==`` is always true (NumPy compares it element by element)."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None


OBJECTS = {
    "None": None, "str": "x", "bytes": b"x", "object": object(), "dict": {}, "set": {1},
    "np.str_": np.str_("x"), "str list": ["a", "b", "c", "d"], "None list": [None, 1, 2, 3],
    "Decimal": decimal.Decimal(1), "Fraction": fractions.Fraction(2), "custom": AlwaysEqual(),
    "big int": 2 ** 70, "negative big int": -(2 ** 70), "300": 300, "-1": -1,
    "range": range(4),
    "short str list": ["a", "b"], "ragged": [[1], [1, 2]],
}
COMPARISONS = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge)
HOST = {"int64": np.arange(4), "float64": np.arange(4.0) - 1.5,
        "uint8": np.arange(4, dtype=np.uint8), "2-D": np.arange(8).reshape(2, 4)}


@pytest.mark.parametrize("compare", COMPARISONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("other", list(OBJECTS), ids=str)
@pytest.mark.parametrize("kind", list(HOST))
def test_comparisons_with_objects_give_numpys_answer(compare, other, kind):
    host, value = HOST[kind], OBJECTS[other]
    x = mv.array(host)
    same_as_numpy(outcome(compare, x, value), outcome(compare, host, value))
    same_as_numpy(outcome(compare, value, x), outcome(compare, value, host))


@pytest.mark.parametrize("other", ["None", "str", "object", "Decimal", "big int"])
@pytest.mark.parametrize("name", ["equal", "not_equal", "less", "greater_equal"])
def test_comparison_functions_with_objects_give_numpys_answer(name, other):
    host, value = HOST["int64"], OBJECTS[other]
    want = outcome(getattr(np, name), host, value)
    same_as_numpy(outcome(getattr(mv, name), mv.array(host), value), want)
    same_as_numpy(outcome(getattr(np, name), mv.array(host), value), want)  # __array_ufunc__
    same_as_numpy(outcome(getattr(mv, name), value, mv.array(host)),
                  outcome(getattr(np, name), value, host))


@pytest.mark.parametrize("shape", [(), (0,), (2, 0), (3,)])
def test_equality_with_none_keeps_the_shape(engine, shape):
    host = np.ones(shape)
    x = mv.array(host)
    check(x == None, np.asarray(host == None))  # noqa: E711  (the case under test)
    check(x != None, np.asarray(host != None))  # noqa: E711


def test_equality_with_none_needs_no_host_read(engine):
    step = mv.jit(lambda x: x == None)  # noqa: E711  (a host read would be refused here)
    check(step(mv.arange(3.0)), np.arange(3.0) == None)  # noqa: E711


# ---- in, divmod, truth values ------------------------------------------------------------

@pytest.mark.parametrize("value", [2, 7, 2.0, None, "x", [4, 5, 6, 7], [9, 9, 9, 9],
                                   decimal.Decimal(3)], ids=repr)
@pytest.mark.parametrize("shape", [(8,), (2, 4)])
def test_in_is_any_equal(value, shape):
    host = np.arange(8).reshape(shape)
    want = outcome(operator.contains, host, value)
    same_as_numpy(outcome(operator.contains, mv.array(host), value), want)
    if want[0] == "ok":
        assert (value in mv.array(host)) is want[1]


DIVMOD_CASES = {
    "int by int": (np.arange(-5, 5), 3), "int by negative": (np.arange(-5, 5), -3),
    "int8 by int": (np.arange(-5, 5, dtype=np.int8), 2), "int by zero": (np.arange(-3, 3), 0),
    "float by float": (np.linspace(-3, 3, 7), 0.75), "float by zero": (np.arange(-2.0, 3), 0.0),
    "float32 by negative": (np.linspace(-3, 3, 7, dtype=np.float32), -1.25),
    "int by float": (np.arange(-4, 4), 1.5), "bool by bool": (np.array([True, False]), True),
    "int by array": (np.arange(-6, 6).reshape(3, 4), np.array([1, -2, 3, 0])),
    "float by array": (np.linspace(-2, 2, 12).reshape(3, 4),
                       np.array([0.5, -0.25, 0.0, 3.0])),
    "by numpy scalar": (np.arange(6), np.int8(4)),
}


@pytest.mark.parametrize("case", list(DIVMOD_CASES))
def test_divmod_gives_numpys_quotients_and_remainders(case):
    a, b = DIVMOD_CASES[case]
    x = mv.array(a)
    y = mv.array(b) if isinstance(b, np.ndarray) else b
    same_as_numpy(outcome(divmod, x, y), outcome(divmod, a, b))
    same_as_numpy(outcome(divmod, y, x), outcome(divmod, b, a))
    same_as_numpy(outcome(np.divmod, x, y), outcome(np.divmod, a, b))
    same_as_numpy(outcome(mv.divmod, x, y), outcome(np.divmod, a, b))
    same_as_numpy(outcome(mv.divmod, b, x), outcome(np.divmod, b, a))


def test_divmod_writes_into_out_and_reads_views(engine):
    a = np.arange(-6, 6).reshape(3, 4)
    q, r = mv.zeros((4, 3), dtype=np.int64), mv.zeros((4, 3), dtype=np.int64)
    assert mv.divmod(mv.array(a).T, 4, out=(q, r)) == (q, r)
    check((q, r), np.divmod(a.T, 4))
    host_q, host_r = np.zeros((4, 3), np.int64), np.zeros((4, 3), np.int64)
    got = np.divmod(mv.array(a).T, mv.array(a).T + 7, out=(host_q, host_r))
    assert got[0] is host_q and got[1] is host_r
    np.testing.assert_array_equal(host_q, np.divmod(a.T, a.T + 7)[0])
    np.testing.assert_array_equal(host_r, np.divmod(a.T, a.T + 7)[1])
    assert mv.divmod.nout == 2 and mv.divmod.nin == 2


def test_divmod_of_unsupported_operands_is_numpys_error(engine):
    same_as_numpy(outcome(divmod, mv.array([1j]), 1), outcome(divmod, np.array([1j]), 1))
    same_as_numpy(outcome(mv.divmod, mv.array([1j]), 1), outcome(np.divmod, np.array([1j]), 1))
    same_as_numpy(outcome(divmod, mv.arange(3), None), outcome(divmod, np.arange(3), None))
    same_as_numpy(outcome(mv.divmod, mv.arange(3), None),
                  outcome(np.divmod, np.arange(3), None))


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3, 1)])
def test_truth_value_of_an_empty_array_is_numpys_error(engine, shape):
    with pytest.raises(ValueError) as want:
        bool(np.zeros(shape))
    with pytest.raises(ValueError) as got:
        bool(mv.zeros(shape))
    assert str(got.value) == str(want.value)


def test_truth_value_of_arrays(engine):
    assert bool(mv.array([2.0])) is True and bool(mv.array(0)) is False
    with pytest.raises(ValueError) as want:
        bool(np.ones(2))
    with pytest.raises(ValueError) as got:
        bool(mv.ones(2))
    assert str(got.value) == str(want.value)


# ---- memory orders and flags --------------------------------------------------------------

def views(xp):
    """The same arrays and views, made with ``xp`` (NumPy or minerva)."""
    a = xp.arange(24.0).reshape(2, 3, 4)
    return {
        "fresh": xp.ones((2, 3, 4)), "reshaped": a, "T": a.T, "swapped": a.swapaxes(0, 1),
        "sliced": a[:, 1:, ::2], "reversed": a[::-1], "reversed T": a.T[::-1],
        "broadcast": xp.broadcast_to(a[0, :1], (3, 4)), "new axis": a[:, None],
        "one row": a[:1], "one row T": a[:1].T, "empty": a[:, :0], "empty T": a[:, :0].T,
        "fresh empty": xp.zeros((2, 0, 3)), "row": a[0, 0], "strided row": a[0, 0, ::2],
        "0-d": xp.array(5.0), "column": a[:, :, :1], "2-D T slice": a.reshape(6, 4).T[1:],
        "sum of T": a.T + 1, "transposed copy": a.T.copy(),
    }


FLAGS = ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED")


def assert_layout(got: mv.NArray, want: np.ndarray) -> None:
    """Same shape, strides, flags and values."""
    assert got.shape == want.shape and got.strides == want.strides, (got.strides,
                                                                     want.strides)
    for name in FLAGS:
        assert got.flags[name] == want.flags[name], name
        assert getattr(got.flags, name.lower()) == getattr(want.flags, name.lower()), name
    np.testing.assert_array_equal(got.to_numpy(), want)


@pytest.mark.parametrize("name", list(views(np)))
def test_flags_and_strides_are_numpys(name):
    got, want = views(mv)[name], views(np)[name]
    assert got.strides == want.strides
    for flag in FLAGS:
        assert got.flags[flag] == want.flags[flag], flag
        assert getattr(got.flags, flag.lower()) == getattr(want.flags, flag.lower()), flag
    assert got.flags.c_contiguous == got.flags["C"] and got.flags.f_contiguous == got.flags["F"]
    with pytest.raises(KeyError):
        got.flags["NOPE"]


@pytest.mark.parametrize("order", "CFAK")
@pytest.mark.parametrize("name", list(views(np)))
def test_copies_in_every_order_are_laid_out_as_numpys(name, order):
    got, want = views(mv)[name], views(np)[name]
    assert_layout(got.copy(order=order), want.copy(order=order))
    assert_layout(mv.copy(got, order=order), np.copy(want, order=order))
    assert_layout(mv.array(got, order=order), np.array(want, order=order))


@pytest.mark.parametrize("name", list(views(np)))
def test_default_copies_and_fortran_arrays_are_numpys(name):
    got, want = views(mv)[name], views(np)[name]
    assert_layout(np.copy(got), np.copy(want))
    assert_layout(copy.copy(got), copy.copy(want))
    assert_layout(copy.deepcopy(got), copy.deepcopy(want))
    assert_layout(mv.asfortranarray(got), np.asfortranarray(want))
    assert_layout(mv.asarray(got, order="F"), np.asarray(want, order="F"))
    assert_layout(mv.asfortranarray(got, dtype=np.float32),
                  np.asfortranarray(want, dtype=np.float32))


def test_order_of_host_data_and_copy_false(engine):
    host = np.arange(12.0).reshape(3, 4)
    for order in "CFAK":
        assert_layout(mv.array(host.T, order=order), np.array(host.T, order=order))
        assert_layout(mv.array([[1, 2], [3, 4]], order=order),
                      np.array([[1, 2], [3, 4]], order=order))
    f = mv.asfortranarray(mv.array(host))
    assert mv.asfortranarray(f) is f and mv.asarray(f, order="A") is f
    with pytest.raises(ValueError):
        np.array(host.T, copy=False, order="C")
    with pytest.raises(ValueError):
        mv.array(mv.array(host).T, copy=False, order="C")
    with pytest.raises(ValueError):
        mv.ones(3).copy(order="X")


def test_a_fortran_copy_is_its_own_array(engine):
    host = np.arange(6.0).reshape(2, 3)
    x = mv.array(host)
    f = x.copy(order="F")
    assert f.flags.f_contiguous and f.flags.owndata and not f.flags.c_contiguous
    f[0, 0] = 100.0
    x[1, 1] = -1.0
    want = host.copy(order="F")
    want[0, 0] = 100.0
    check(f, want)
    check(f.reshape(6), want.reshape(6))
    check(f + x, want + np.where(host == 4.0, -1.0, host))


# ---- ufunc methods ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["multiply", "subtract", "exp", "logaddexp", "divmod"])
def test_every_ufunc_has_numpys_methods(name):
    ufunc = getattr(mv, name)
    for method in ("reduce", "accumulate", "reduceat", "outer", "at"):
        assert callable(getattr(ufunc, method))
        assert getattr(ufunc, method).__name__ == getattr(np, name).__getattribute__(
            method).__name__


def test_a_numpy_ufunc_method_on_a_plain_minerva_function_says_so(engine, monkeypatch):
    monkeypatch.setattr(mv, "hypot", lambda a, b: mv.sqrt(a * a + b * b))
    x = mv.arange(6.0)
    for method, args in {"at": (x, [0, 1], 2.0), "reduceat": (x, [0, 2]),
                         "reduce": (x,), "accumulate": (x,), "outer": (x, x)}.items():
        with pytest.raises(mv.UfuncMethodError, match=f"hypot.{method}") as info:
            getattr(np.hypot, method)(*args)
        assert "to_numpy()" in str(info.value)
        assert isinstance(info.value, (NotImplementedError, AttributeError, TypeError))
        assert isinstance(info.value, mv.MinervaError)


INPUTS = {"float": np.arange(12.0).reshape(3, 4) - 5.5,
          "int8": np.arange(12, dtype=np.int8).reshape(3, 4) - 3,
          "int32": np.arange(12, dtype=np.int32).reshape(3, 4) * 7,
          "bool": (np.arange(12) % 3 == 0).reshape(3, 4)}
REDUCE_ARGS = [{}, {"axis": None}, {"axis": 1}, {"axis": -1, "keepdims": True},
               {"axis": (0, 1)}, {"dtype": np.float32}]


@pytest.mark.parametrize("kwargs", REDUCE_ARGS, ids=str)
@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "logical_and",
                                  "logical_or"])
@pytest.mark.parametrize("kind", list(INPUTS))
def test_ufunc_reduce_is_numpys(kind, name, kwargs):
    host = INPUTS[kind]
    want = outcome(lambda a: getattr(np, name).reduce(a, **kwargs), host)
    same_as_numpy(outcome(lambda a: getattr(mv, name).reduce(a, **kwargs), mv.array(host)),
                  want)
    same_as_numpy(outcome(lambda a: getattr(np, name).reduce(a, **kwargs), mv.array(host)),
                  want)


@pytest.mark.parametrize("kwargs", [{}, {"axis": 1}, {"axis": -1}, {"axis": None},
                                    {"dtype": np.int16}], ids=str)
@pytest.mark.parametrize("name", ["add", "multiply"])
@pytest.mark.parametrize("kind", list(INPUTS) + ["0-d", "1-D"])
def test_ufunc_accumulate_is_numpys(kind, name, kwargs):
    host = {"0-d": np.array(3), "1-D": np.arange(5) - 2}.get(kind, INPUTS.get(kind))
    function = lambda module: lambda a: getattr(module, name).accumulate(a, **kwargs)  # noqa: E731
    want = outcome(function(np), host)
    same_as_numpy(outcome(function(mv), mv.array(host)), want)
    same_as_numpy(outcome(function(np), mv.array(host)), want)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "greater", "divmod",
                                  "maximum"])
def test_ufunc_outer_is_numpys(engine, name):
    a, b = np.arange(3) - 1, np.arange(8).reshape(2, 4) + 1
    check(getattr(mv, name).outer(mv.array(a), mv.array(b)), getattr(np, name).outer(a, b))
    check(getattr(mv, name).outer(a, mv.array(b)), getattr(np, name).outer(a, b))


def test_ufuncs_describe_themselves_as_numpys(engine):
    for name in ("add", "exp", "divmod", "equal", "abs"):
        ours, theirs = getattr(mv, name), getattr(np, name)
        assert (ours.nin, ours.nout, ours.nargs) == (theirs.nin, theirs.nout, theirs.nargs)
        assert ours.__name__ == theirs.__name__
    assert mv.add.identity == 0 and mv.multiply.identity == 1
    assert callable(mv.add.at) and mv.abs is mv.absolute


# ---- dtypes minerva refuses ---------------------------------------------------------------

ENTRY_POINTS = {
    "astype": "x.astype(D)", "mv.astype": "mv.astype(x, D)", "array": "mv.array(x, dtype=D)",
    "array of a list": "mv.array([1, 2], dtype=D)", "asarray": "mv.asarray(x, dtype=D)",
    "zeros": "mv.zeros(3, dtype=D)", "ones": "mv.ones(3, D)", "full": "mv.full(3, 1, D)",
    "full of an array": "mv.full(3, x[:1], D)", "empty": "mv.empty(3, D)",
    "zeros_like": "mv.zeros_like(x, dtype=D)", "ones_like": "mv.ones_like(x, dtype=D)",
    "empty_like": "mv.empty_like(x, dtype=D)", "full_like": "mv.full_like(x, 1, dtype=D)",
    "arange": "mv.arange(3, dtype=D)", "linspace": "mv.linspace(0, 1, 3, dtype=D)",
    "eye": "mv.eye(3, dtype=D)", "identity": "mv.identity(3, dtype=D)",
    "sum": "x.sum(dtype=D)", "mean": "mv.mean(x, dtype=D)", "prod": "x.prod(dtype=D)",
    "cumsum": "mv.cumsum(x, dtype=D)", "std": "mv.std(x, dtype=D)",
    "add": "mv.add(x, x, dtype=D)", "exp": "mv.exp(x, dtype=D)",
    "numpy add": "np.add(x, x, dtype=D)", "rand": "mv.rand((2,), dtype=D)",
    "generator": "mv.random.default_rng(0).random(2, dtype=D)",
    "randint": "mv.random.randint(0, 3, 2, dtype=D)",
    "ascontiguousarray": "mv.ascontiguousarray(x, dtype=D)",
    "asfortranarray": "mv.asfortranarray(x, dtype=D)",
    "concatenate": "mv.concatenate([x, x], dtype=D)",
    "einsum": "mv.einsum('i->i', x, dtype=D)", "add.reduce": "mv.add.reduce(x, dtype=D)",
}
UNSUPPORTED = ("object", "'(2,)f8'", "'nope'")
"""Dtypes minerva arrays never hold: Python objects, subarray dtypes, what is no dtype."""
BEYOND_NUMBERS = ("str", "'M8[s]'", "'m8'", "'V8'", "'S3'", "[('a', 'i4'), ('b', 'U2')]")
"""Dtypes a CPU device holds beyond numbers: each entry point does what NumPy does."""
NUMPY_FORMS = {"rand": "np.random.default_rng(0).random(2, dtype=D)"}

_CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import minerva as mv
    warnings.simplefilter("ignore")
    for dtype, cases in json.loads(sys.argv[1]).items():
        D = eval(dtype)
        for name, (expr, numpy_expr) in cases.items():
            print(json.dumps(["start", dtype, name]), flush=True)
            got = []
            for module, x in ((mv, mv.arange(3.0)), (np, np.arange(3.0))):
                try:
                    result = eval(expr if module is mv else numpy_expr)
                    got.append(["returned", repr(getattr(result, "dtype", result))])
                except Exception as exc:
                    got.append(["raised", type(exc).__name__, isinstance(exc, mv.DTypeError),
                                isinstance(exc, (TypeError, ValueError))])
            print(json.dumps(["done", dtype, name] + got), flush=True)
""")


def _entry_points(dtypes) -> dict:
    """What the child runs: each entry point, in minerva's form and in NumPy's."""
    forms = {name: (expr, NUMPY_FORMS.get(name, expr.replace("mv.", "np.")))
             for name, expr in ENTRY_POINTS.items()}
    return {dtype: forms for dtype in dtypes}


def _run_child(dtypes) -> dict:
    """Each entry point in a child process (a crash fails the test, not the run):
    (dtype, entry point) -> [minerva's outcome, NumPy's outcome]."""
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(_entry_points(dtypes))],
                          capture_output=True, text=True, timeout=100)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert done.returncode == 0, f"the child died ({done.returncode}) at {lines[-1:]}"
    results = {(line[1], line[2]): line[3:] for line in lines if line[0] == "done"}
    assert len(results) == len(dtypes) * len(ENTRY_POINTS)
    return results


def test_every_entry_point_refuses_unsupported_dtypes_without_crashing():
    results = _run_child(UNSUPPORTED)
    wrong = {key: mine for key, (mine, _) in results.items()
             if mine[:1] != ["raised"] or not mine[2]}
    assert wrong == {}


def test_every_entry_point_takes_dtypes_beyond_numbers_as_numpy_does():
    """The same dtype where NumPy returns one; a TypeError or ValueError where it raises.
    (NumPy's einsum of one operand returns a view of it, ignoring ``dtype=``; minerva's
    refuses a dtype that is no number.)"""
    wrong = {key: (mine, numpy_outcome)
             for key, (mine, numpy_outcome) in _run_child(BEYOND_NUMBERS).items()
             if key[1] != "einsum" and mine[0] != numpy_outcome[0] or mine[0] == "returned" and mine != numpy_outcome
             or mine[0] == "raised" and not mine[3]}
    assert wrong == {}


def test_astype_object_raises_in_place_of_crashing():
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import minerva as mv
        try:
            mv.arange(3.0).astype(object).to_numpy()
        except mv.DTypeError as exc:
            print("refused:", exc)
    """)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "refused: " in done.stdout, (done.returncode,
                                                                  done.stderr[-500:])
    assert "object" in done.stdout


def test_supported_dtypes_still_work(engine):
    x = mv.arange(3.0)
    for dtype in (np.bool_, np.int8, np.uint16, np.float32, np.complex64, "f8", "i4"):
        check(x.astype(dtype), np.arange(3.0).astype(dtype))
        check(mv.zeros(2, dtype), np.zeros(2, dtype))
        check(mv.sum(x, dtype=np.float32 if dtype == np.bool_ else dtype),
              np.sum(np.arange(3.0), dtype=np.float32 if dtype == np.bool_ else dtype))


# ---- arrays of a runtime that was shut down --------------------------------------------------

GATE, STARTED = threading.Event(), threading.Event()


def _gate_infer(x):
    return (x,)


def _gate_impl(xp, x, *, out):
    STARTED.set()
    GATE.wait(timeout=30)
    out[...] = x


GATED = registry.register("test_surface_gate", _gate_infer, _gate_impl)

COMPUTED = "was computed but belongs to a minerva runtime that was shut down"
LOST = "shut down before this array was computed"


def _uses(old, new, index, mask):
    """Every way of using ``old`` (an array of a runtime that is gone, as are ``index``
    and ``mask``) in a new op."""
    return {
        "operator": lambda: old + 1, "reflected": lambda: 1 + old,
        "with a new array": lambda: new + old, "comparison": lambda: old == None,  # noqa: E711
        "unary": lambda: -old, "function": lambda: mv.exp(old), "numpy": lambda: np.exp(old),
        "reduction": lambda: old.sum(), "method copy": lambda: old.copy(),
        "astype": lambda: old.astype(np.float32), "matmul": lambda: old @ old,
        "to same device": lambda: old.to(0), "to another device": lambda: old.to(
            mv.create_cpu_device()), "array": lambda: mv.array(old),
        "setitem into it": lambda: old.__setitem__(0, 1.0),
        "in-place": lambda: old.__iadd__(1.0), "fill": lambda: old.fill(2.0),
        "as a value": lambda: new.__setitem__(slice(None), old),
        "as an index": lambda: new[index], "as a mask": lambda: new[mask],
        "as a mask to write": lambda: new.__setitem__(mask, 0.0),
        "as out=": lambda: mv.add(new, new, out=old), "unique": lambda: mv.unique(old),
        "nonzero": lambda: mv.nonzero(old), "concatenate": lambda: mv.concatenate([old, new]),
        "divmod": lambda: divmod(old, 2),
    }


@pytest.mark.parametrize("use", list(_uses(None, None, None, None)))
@pytest.mark.parametrize("engine_name", ["naive", "dag"])
def test_computed_arrays_of_a_shut_down_runtime_are_refused_truthfully(engine_name, use):
    mv.init(engine=engine_name)
    old, index, mask = mv.arange(1.0, 4.0), mv.array([0, 2]), mv.array([True, False, True])
    for x in (old, index, mask):
        x.wait(timeout=30)
    mv.shutdown()
    new = mv.ones(3)
    with pytest.raises(mv.MinervaError) as info:
        result = _uses(old, new, index, mask)[use]()
        if isinstance(result, mv.NArray):
            result.wait(timeout=30)
    assert COMPUTED in str(info.value) and "value is lost" not in str(info.value)
    np.testing.assert_array_equal(old.to_numpy(timeout=30), [1.0, 2.0, 3.0])  # readable
    check(new, np.ones(3))


def test_uncomputed_arrays_of_a_shut_down_runtime_say_their_value_is_lost():
    mv.init(engine="dag")
    GATE.clear(), STARTED.clear()
    running = build(GATED, [mv.arange(3.0)])
    pending = running * 2  # cannot start before the gated op ends
    assert STARTED.wait(timeout=30)
    opener = threading.Timer(0.5, GATE.set)
    opener.start()
    mv.shutdown(timeout=0.05)  # cancels what has not started; the gated op finishes
    opener.join(timeout=30)
    for use in ("operator", "function", "to same device", "setitem into it", "as out="):
        with pytest.raises(mv.MinervaError, match=LOST):
            _uses(pending, mv.ones(3), None, None)[use]()
        with pytest.raises(mv.MinervaError, match=COMPUTED):
            _uses(running, mv.ones(3), None, None)[use]()
    with pytest.raises(mv.OpError):
        pending.to_numpy(timeout=30)
    np.testing.assert_array_equal(running.to_numpy(timeout=30), np.arange(3.0))
