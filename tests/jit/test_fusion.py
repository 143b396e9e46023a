"""Element-wise fusion of jit replays (``mv.jit(fn, fuse=...)``, doc/jit.md "Fusion").

Random element-wise programs run four ways: NumPy, eager minerva, jitted unfused
(``fuse=False``), jitted fused, at two sizes: tiny arrays (``SHAPE``: numexpr kernels) and
arrays of several blocks (``BIG``: cache-blocked NumPy kernels). Exact kernels
(arithmetic, comparisons, ``where``, ``maximum``, ``sqrt``, ``abs``; every blocked kernel)
must give NumPy's bits; the transcendental functions of numexpr are held to the
documented bound (``ULP_BOUND`` ulps of NumPy's result).
"""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from minerva.device.cpu import fused as cpu_fused
from minerva.jit import fusion
from tests.conftest import start_engine
from tests.support.jit_fixtures import assert_same

pytestmark = pytest.mark.skipif(not cpu_fused.available(), reason="numexpr is not installed")

ULP_BOUND = 4
"""doc/jit.md: a fused transcendental function is within 4 ulps of NumPy's result."""
SHAPE = (6, 7)
BIG = (900, 160)
"""(900, 160): 1.1 MB in float64, 562 KiB in float32: three and two blocks of
cpu/blocked.py's 512 KiB (the last one partial)."""
SEEDS = range(12)


@pytest.fixture
def runtime():
    start_engine("dag")
    yield
    mv.shutdown(timeout=30)


# ---- random programs ------------------------------------------------------------------

EXACT_BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum")
EXACT_UNARY = ("negative", "absolute", "square", "sqrt_abs")
INEXACT_UNARY = ("exp_neg_abs", "tanh", "sin", "cos", "log1p_abs")
SCALARS = (2.0, 0.5, -1.25, 3, 0.1)


def unary(ns, name, x):
    """One unary step of a program (kept in the domain where values stay finite)."""
    if name == "sqrt_abs":
        return ns.sqrt(ns.absolute(x))
    if name == "exp_neg_abs":
        return ns.exp(-ns.absolute(x))
    if name == "log1p_abs":
        return ns.log1p(ns.absolute(x))
    return getattr(ns, name)(x)


def program(rng, n_ops: int, unaries, binaries=EXACT_BINARY, scalars=SCALARS,
            scalar_ops=("+", "-", "*", "/", "r-", "r*")) -> list:
    """``n_ops`` random instructions over 4 inputs (see ``run``)."""
    code = []
    for k in range(n_ops):
        n = 4 + k
        kind = rng.choice(["binary", "scalar", "unary", "where"], p=[0.35, 0.3, 0.2, 0.15])
        pick = [int(i) for i in rng.integers(max(0, n - 5), n, 3)]
        if kind == "binary":
            code.append(("binary", str(rng.choice(binaries)), pick[:2]))
        elif kind == "scalar":
            op = str(rng.choice(scalar_ops))
            code.append(("scalar", op, pick[:1], scalars[rng.integers(len(scalars))]))
        elif kind == "unary":
            code.append(("unary", str(rng.choice(unaries)), pick[:1]))
        else:
            code.append(("where", "where", pick))
    return code


def run(ns, code, inputs) -> tuple:
    """The program over ``inputs`` with namespace ``ns`` (NumPy or minerva); returns the
    last value and one intermediate (which the fusion must materialise)."""
    values = list(inputs)
    for instruction in code:
        kind, op, args = instruction[:3]
        xs = [values[i] for i in args]
        if kind == "binary":
            values.append(getattr(ns, op)(xs[0], xs[1]))
        elif kind == "unary":
            values.append(unary(ns, op, xs[0]))
        elif kind == "where":
            values.append(ns.where(xs[0] > xs[1], xs[1], xs[2]))
        else:
            s, x = instruction[3], xs[0]
            values.append({"+": lambda: x + s, "-": lambda: x - s, "*": lambda: x * s,
                           "/": lambda: x / s, "r-": lambda: s - x, "r*": lambda: s * x}[op]())
    return values[-1], values[len(values) // 2 + 2]


def host_inputs(rng, dtype, shape=SHAPE) -> list:
    """A full array, a row, a column and a 0-d array: every step broadcasts."""
    shapes = [shape, shape[1:], (shape[0], 1), ()]
    if np.dtype(dtype).kind == "i":
        return [rng.integers(-50, 50, s).astype(dtype) for s in shapes]
    return [np.asarray(rng.standard_normal(s) * 3, dtype) for s in shapes]


def four_ways(code, host, fuse=True):
    """NumPy's results, eager minerva's, the unfused replay's and the fused replay's (each
    replay the second call of its jitted function), and the fused function."""
    with np.errstate(all="ignore"):
        want = run(np, code, host)
        eager = [r.to_numpy() for r in run(mv, code, [mv.array(a) for a in host])]
        results = []
        for level in (False, fuse):
            jitted = mv.jit(lambda *xs: run(mv, code, xs), fuse=level)
            jitted(*[mv.array(a) for a in host])
            results.append([r.to_numpy() for r in jitted(*[mv.array(a) for a in host])])
    return want, eager, results[0], results[1], jitted


@pytest.mark.parametrize("shape", [SHAPE, BIG], ids=["numexpr", "blocked"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_exact_fused_chains_equal_numpy_bitwise(runtime, dtype, shape):
    fused_somewhere = 0
    for seed in SEEDS[:4] if shape == BIG else SEEDS:
        rng = np.random.default_rng(seed)
        if np.dtype(dtype).kind == "f":
            code = program(rng, 14, EXACT_UNARY)
        else:   # integer programs stay integer (wrapping arithmetic)
            code = program(rng, 14, ("negative",), ("add", "subtract", "multiply", "maximum",
                                                    "minimum"), (2, 3, -1), ("+", "-", "*"))
        want, eager, unfused, fused, jitted = four_ways(code, host_inputs(rng, dtype, shape))
        for results in (eager, unfused, fused):
            for w, g in zip(want, results):
                assert_same(w, g)
        fused_somewhere += jitted.stats()["n_fused"]
    assert fused_somewhere > 0


def test_the_blocked_kernels_are_numpy_bitwise_with_transcendentals_too(runtime):
    fused_somewhere = 0
    for seed in SEEDS[:4]:
        rng = np.random.default_rng(200 + seed)
        code = program(rng, 14, EXACT_UNARY + INEXACT_UNARY)
        for dtype in (np.float32, np.float64):
            want, eager, unfused, fused, jitted = four_ways(code, host_inputs(rng, dtype, BIG))
            for results in (eager, unfused, fused):
                for w, g in zip(want, results):
                    assert_same(w, g)
            fused_somewhere += jitted.stats()["n_fused"]
    assert fused_somewhere > 0


def _edge_values(dtype, shape) -> np.ndarray:
    """Random values with zeros of both signs, subnormals, the extremes, infinities, NaN."""
    info = np.finfo(dtype)
    rng = np.random.default_rng(5)
    special = np.array([0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal,
                        info.tiny, info.tiny * 3, info.max, -info.max, np.inf, -np.inf,
                        np.nan], dtype)
    values = np.asarray(rng.standard_normal(shape) * 1e3, dtype)
    values.flat[:special.size] = special
    return values


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_division_by_a_power_of_two_is_numpy_bitwise(runtime, dtype):
    # the blocked kernel multiplies by the exact reciprocals of 2.0, 0.25, -4.0 and a
    # subnormal power (2**-127 in float32, 2**-1030 in float64); it divides by 3.0 and by
    # a power whose reciprocal overflows (2**-140, 2**-1060)
    tiny, tinier = (2.0 ** -127, 2.0 ** -140) if dtype == np.float32 else (2.0 ** -1030,
                                                                           2.0 ** -1060)

    def f(ns, x):
        y = (x / 2.0 + x / 0.25) / -4.0
        return (y / 3.0) * 1.5 + x / tiny - x / tinier
    host = _edge_values(dtype, (600, 160))
    with np.errstate(all="ignore"):
        want = f(np, host)
        jitted = mv.jit(lambda x: f(mv, x))
        for _ in range(2):
            got = jitted(mv.array(host)).to_numpy()
    assert_same(want, got)
    assert jitted.stats()["n_fused_kernels"] == 1


def test_blocked_steps_write_in_place_into_the_buffer_of_an_input_they_read_last(runtime):
    def f(ns, a, b):
        c = ns.where(a > 0, a * 2.0 + 1.0, b)   # where never writes over its inputs
        return ns.sqrt(ns.absolute(c * b - 0.5)) * 3.0
    rng = np.random.default_rng(3)
    host = [rng.standard_normal(BIG) for _ in range(2)]
    jitted = mv.jit(lambda *xs: f(mv, *xs))
    for _ in range(2):
        got = jitted(*[mv.array(h) for h in host]).to_numpy()
    assert_same(f(np, *host), got)
    (step,) = next(iter(jitted._plans.values())).segments[0].plan.steps
    kernel = step.op_def.kernel
    assert kernel.blocked and len(kernel.program) == 9
    # a > 0 and a * 2.0 need two slots, + 1.0 writes over a * 2.0, where takes a third;
    # the steps after it write over the value before (the last one into the output)
    assert kernel.n_slots == 3


@pytest.mark.parametrize("shape", [SHAPE, (300, 320)], ids=["numexpr", "blocked"])
def test_mixed_dtypes_fuse_only_where_numpy_computes_in_one_dtype(runtime, shape):
    rng = np.random.default_rng(7)
    f32, f64, i32 = (rng.standard_normal(shape).astype(np.float32),
                     rng.standard_normal(shape), rng.integers(-9, 9, shape).astype(np.int32))

    def f(ns, a, b, c):
        x = a * 2.0 + a - 0.5    # float32, fused
        y = x + c                # float32 + int32 -> float64: a step of its own
        z = y * b - 1.5 + b      # float64, fused
        w = c * 3 + c - 7        # int32, fused
        return z, w, x
    want = f(np, f32, f64, i32)
    jitted = mv.jit(lambda *xs: f(mv, *xs))
    for _ in range(2):
        got = jitted(mv.array(f32), mv.array(f64), mv.array(i32))
    for w, g in zip(want, got):
        assert_same(w, g)
    assert jitted.fused_kernels() == [("multiply_scalar", "add", "subtract_scalar"),
                                      ("multiply", "subtract_scalar", "add"),
                                      ("multiply_scalar", "add", "subtract_scalar")]


def ulps(a, b) -> np.ndarray:
    """Distance in units in the last place between two float arrays of one dtype."""
    ints = np.int64 if a.dtype == np.float64 else np.int32
    ia, ib = a.view(ints).astype(np.int64), b.view(ints).astype(np.int64)
    ia = np.where(ia < 0, np.iinfo(ints).min - ia, ia)   # monotone order of the floats
    ib = np.where(ib < 0, np.iinfo(ints).min - ib, ib)
    return np.abs(ia - ib)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["exp", "log", "sin", "cos", "tanh", "expm1", "log1p",
                                  "sigmoid"])
def test_fused_transcendentals_are_within_the_documented_bound(runtime, dtype, name):
    rng = np.random.default_rng(3)
    host = (rng.standard_normal(4096) * 4).astype(dtype)   # tiny: a numexpr kernel
    if name in ("log", "log1p"):
        host = np.abs(host) + dtype(0.01)
    function = (lambda ns, x: 1 / (1 + ns.exp(-x))) if name == "sigmoid" else (
        lambda ns, x: getattr(ns, name)(x))
    jitted = mv.jit(lambda x: -function(mv, x - 0.0))   # - and - 0.0: exact, fused with it
    x = mv.array(host)
    jitted(x)
    got = jitted(x).to_numpy()
    want = -function(np, host - 0.0).astype(dtype)
    assert jitted.stats()["n_fused"] >= 3
    assert got.dtype == want.dtype
    assert int(ulps(got, want).max()) <= ULP_BOUND
    exact = mv.jit(lambda x: -function(mv, x - 0.0), fuse="exact")
    exact(x)
    assert_same(want, exact(x))


def test_tiny_chains_with_transcendentals_stay_close_to_numpy(runtime):
    for seed in SEEDS:
        rng = np.random.default_rng(100 + seed)
        code = program(rng, 14, EXACT_UNARY[:3] + INEXACT_UNARY,
                       ("add", "subtract", "multiply", "maximum", "minimum"))
        for dtype, rtol in ((np.float32, 1e-4), (np.float64, 1e-11)):
            host = host_inputs(rng, dtype)
            want, eager, unfused, fused, _ = four_ways(code, host)
            for w, e, u, g in zip(want, eager, unfused, fused):
                assert_same(w, e)
                assert_same(w, u)
                scale = max(1.0, float(np.max(np.abs(w))))
                np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)


# ---- views, in-place writes, devices ----------------------------------------------------

def test_view_arguments_and_in_place_updates(runtime):
    rng = np.random.default_rng(11)
    data = rng.standard_normal((8, 10)).astype(np.float32)
    acc_host = rng.standard_normal((4, 10)).astype(np.float32)

    def f(ns, acc, x, y):
        acc += x * 2.0 - y        # in place: the written value is the kernel's output
        acc *= 0.5
        t = ns.maximum(acc, 0.0) + y
        return t * t, acc - 1.0
    whole = mv.array(data)
    acc = mv.array(acc_host)
    jitted = mv.jit(lambda *xs: f(mv, *xs))
    want_acc = acc_host.copy()
    for start in (0, 2, 4):
        x, y = whole[start:start + 4], whole[start:start + 4, ::-1]   # views, moving
        got = jitted(acc, x, y)
        want = f(np, want_acc, data[start:start + 4], data[start:start + 4, ::-1])
        for w, g in zip(want, got):
            assert_same(w, g)
        assert_same(want_acc, acc)
    assert jitted.stats()["n_records"] == 1 and jitted.stats()["n_fused"] >= 5


def test_a_read_after_an_in_place_write_sees_the_new_value(runtime):
    def f(ns, x, y):
        t = x * 3.0 + 1.0 - 2.0   # read before the write: must not be recomputed after it
        x -= y * 2.0 + 1.0
        return (t + x) * 2.0 - 1.0, x
    rng = np.random.default_rng(5)
    xh, yh = rng.standard_normal(50), rng.standard_normal(50)
    jitted = mv.jit(lambda *xs: f(mv, *xs))
    for _ in range(3):
        x, want_x = mv.array(xh), xh.copy()
        got = jitted(x, mv.array(yh))
        want = f(np, want_x, yh)
        for w, g in zip(want, got):
            assert_same(w, g)
    # x * 3.0, the step that reads x, is materialised before the write (a plain step); the
    # rest of t is computed in the last kernel, from it
    assert jitted.fused_kernels() == [("multiply_scalar", "add_scalar", "subtract"),
                                      ("add_scalar", "subtract_scalar", "add",
                                       "multiply_scalar", "subtract_scalar")]


def test_ops_of_different_devices_never_fuse_together(runtime):
    devices = [mv.create_cpu_device(), mv.create_cpu_device()]
    mv.set_device(devices[0])

    def f(x, per_block):
        for k in range(6):
            with mv.device(devices[k // per_block % 2]):
                x = (x * 1.5 + 0.25) / 1.25
        return x
    host = np.linspace(-2, 2, 30)
    want = host
    for k in range(6):
        want = (want * 1.5 + 0.25) / 1.25
    three = ("multiply_scalar", "add_scalar", "divide_scalar")
    for per_block, kernels in ((1, [three] * 6), (2, [three * 2] * 3), (3, [three * 3] * 2)):
        jitted = mv.jit(lambda x: f(x, per_block))
        for _ in range(2):
            got = jitted(mv.array(host))
        assert_same(want, got)
        assert jitted.fused_kernels() == kernels   # a kernel never spans two devices
        assert jitted.stats()["n_segments"] == 6 // per_block


# ---- plans, stats, fallbacks -------------------------------------------------------------

def chain(x):
    a = x * 2.0
    b = a + 1.0
    c = mv.sqrt(abs(b)) * x
    return (c - x).sum()


def test_fused_plans_materialise_no_intermediate(runtime):
    x = mv.ones(1000, dtype=np.float32)
    fused, unfused = mv.jit(chain), mv.jit(chain, fuse=False)
    for _ in range(2):
        assert float(fused(x)) == float(unfused(x)) == float(chain(x))
    stats = fused.stats()
    assert (stats["n_ops"], stats["n_fused"], stats["n_fused_kernels"]) == (7, 6, 1)
    assert fused.fused_kernels() == [("multiply_scalar", "add_scalar", "absolute", "sqrt",
                                      "multiply", "subtract")]
    assert stats["plan_bytes"] == 4096 < unfused.stats()["plan_bytes"]   # c's slot alone
    assert unfused.stats()["n_fused"] == 0


def test_without_numexpr_tiny_kernels_stay_unfused_with_the_same_results(runtime,
                                                                         monkeypatch):
    monkeypatch.setattr(cpu_fused, "numexpr_module", lambda: None)
    for n, n_fused in ((100, 0), (100_000, 6)):   # tiny: unfused; blocked: no numexpr needed
        x = mv.array(np.linspace(-3, 3, n))
        jitted = mv.jit(chain)
        results = [float(jitted(x)) for _ in range(2)]
        assert results == [float(chain(x))] * 2
        assert jitted.stats()["n_fused"] == n_fused


def test_check_mode_fuses_the_exact_kernels_and_compares_bitwise(runtime):
    def f(x):
        return mv.exp(x * 2.0 + 1.0 - x) * 3.0 - x / 4.0
    for n, kernels in ((64, [("multiply_scalar", "add_scalar", "subtract"),
                             ("multiply_scalar", "divide_scalar", "subtract")]),
                       (100_000, [("multiply_scalar", "add_scalar", "subtract", "exp",
                                   "multiply_scalar", "divide_scalar", "subtract")])):
        jitted = mv.jit(f, check=True)   # tiny: numexpr's exp is left out; blocked: exact
        x = mv.array(np.linspace(-1, 1, n, dtype=np.float32))
        for _ in range(3):
            jitted(x).wait()
        assert jitted.stats()["n_checks"] == 2
        assert jitted.fused_kernels() == kernels


def test_an_error_state_that_raises_replays_unfused(runtime):
    jitted = mv.jit(lambda x, y: (x * 2.0) / y + 1.0)
    x, y = mv.array(np.ones(8)), mv.array(np.zeros(8))
    jitted(x, mv.array(np.ones(8)))
    assert jitted.stats()["n_fused"] == 3
    with np.errstate(divide="raise"):
        result = jitted(x, y)
        with pytest.raises(mv.OpError, match="divide by zero"):
            result.wait()
    assert jitted(x, y).to_numpy().tolist() == [np.inf] * 8   # default state: fused


def test_fuse_takes_booleans_and_levels_only():
    with pytest.raises(ValueError, match="fuse"):
        mv.jit(chain, fuse="fast")


def test_traces_name_the_fused_kernels(runtime, tmp_path):
    import json
    x = mv.ones(100)
    jitted = mv.jit(chain)
    jitted(x).wait()
    mv.profiler.start(str(tmp_path / "trace.json"))
    jitted(x).wait()
    with open(mv.profiler.stop(), encoding="utf-8") as trace:
        names = [e["name"] for e in json.load(trace)["traceEvents"]
                 if e.get("cat") == "jit-step"]
    assert "fused[multiply_scalar+add_scalar+absolute+sqrt+multiply+subtract]" in names
    assert "sum" in names


def test_a_long_chain_is_cut_into_kernels_of_bounded_depth(runtime):
    def f(x):
        for _ in range(300):
            x = x * 1.0001 + 0.5
        return x
    host = np.linspace(-1, 1, 5, dtype=np.float32)
    jitted = mv.jit(f)
    for _ in range(2):
        got = jitted(mv.array(host))
    assert_same(f(host), got)
    kernels = jitted.fused_kernels()
    depth = fusion.MAX_DEPTH
    assert sum(map(len, kernels)) == 600 and max(map(len, kernels)) <= depth + 1
    assert len(kernels) == -(-600 // depth)


def test_a_chain_of_200_levels_is_one_kernel(runtime):
    def f(x):
        for k in range(50):
            x = x * 1.0001 + 0.5
            x = abs(x) - 0.25 if k % 2 else x / 1.5 - 0.125
        return x
    host = np.linspace(-1, 1, 4, dtype=np.float32)
    jitted = mv.jit(f)
    for _ in range(2):
        got = jitted(mv.array(host))
    assert_same(f(host), got)
    assert [len(k) for k in jitted.fused_kernels()] == [200]


def test_blocked_kernels_split_over_the_device_threads(runtime, monkeypatch):
    from minerva.device.cpu import split
    monkeypatch.setattr(split, "PAYS", 0.0)              # every split judged paying
    monkeypatch.setattr(split, "CALLER_STEALS", False)   # the helper runs its ranges
    ranges, real = [], split._run_range
    monkeypatch.setattr(split, "_run_range", lambda *a: (ranges.append(a[2]), real(*a)))
    mv.set_device(mv.create_cpu_device(threads=2))
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((1000, 300)), rng.standard_normal(300)

    def f(ns, a, b):
        return ns.tanh(a * 0.5 + b) * ns.exp(-ns.absolute(a)) - b
    jitted = mv.jit(lambda *xs: f(mv, *xs))
    for _ in range(2):
        got = jitted(mv.array(a), mv.array(b))
    assert_same(f(np, a, b), got)
    (kernel,) = [s for s in next(iter(jitted._plans.values())).segments[0].plan.steps]
    assert kernel.op_def.elementwise and kernel.op_def.kernel.blocked
    assert jitted.stats()["plan_bytes"] == 0
    ranges.clear()
    assert_same(f(np, a, b), jitted(mv.array(a), mv.array(b)))
    assert len(ranges) == 2 * split.RANGES_PER_THREAD   # the replay's one kernel, cut


def rosenbrock(ns, x):
    """Benchpress's rosenbrock sum's terms: ``x ** 2.0`` is ``power``."""
    return (1 - x[:-1]) ** 2.0 + 100 * (x[1:] - x[:-1] ** 2.0) ** 2.0


@pytest.mark.parametrize("n", [SHAPE[0] * SHAPE[1], BIG[0] * BIG[1]],
                         ids=["numexpr", "blocked"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("level", ["exact", "all"])
def test_powers_of_2_half_and_minus_one_fuse_bitwise(runtime, n, dtype, level):
    rng = np.random.default_rng(3)
    host = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
    host[:4] = [0.0, -0.0, -1.5, 1e-30]

    def f(ns, x):
        return (rosenbrock(ns, x) + ns.power(abs(x[1:]), 0.5)
                - ns.power(x[1:], -1.0) * 0.25 + ns.power(x[1:], 2))
    jitted = mv.jit(lambda x: f(mv, x), fuse=level)
    with np.errstate(all="ignore"):
        want = f(np, host)
        for _ in range(2):
            got = jitted(mv.array(host))
        assert_same(want, got)
    (ops,) = jitted.fused_kernels()
    assert ops.count("power_scalar") == 6 and len(ops) == jitted.stats()["n_ops"]


def test_other_powers_and_mixed_dtypes_stay_unfused(runtime):
    host = np.linspace(0.5, 2, 12, dtype=np.float32)
    for f in (lambda x: (x * 2.0) ** 3.0 + 1.0, lambda x: 2.0 ** (x * 2.0) + 1.0,
              lambda x: (x * 2.0) ** np.float64(2.0) + 1.0):
        jitted = mv.jit(f)
        for _ in range(2):
            got = jitted(mv.array(host))
        assert_same(f(host), got)
        assert all("power_scalar" not in ops for ops in jitted.fused_kernels())
