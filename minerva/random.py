"""``mv.random``: NumPy's random module, giving NumPy's numbers.

The legacy functions (``seed``, ``rand``, ``randn``, ``randint``, ``normal`` …) draw from
one process-wide ``numpy.random.RandomState``, as NumPy's do; ``RandomState(seed)`` and
``default_rng(seed)`` wrap NumPy's own generators. Values are drawn on the host, on the
calling thread, when the call is made, and uploaded to the current device: the same seed
and the same calls give NumPy's values on every device and engine. ``shuffle`` permutes an
NArray in place along its first axis.

``seed(n)`` also restarts Minerva's on-device draws (``mv.randn``, ``mv.rand``,
``mv.randb``, ``mv.nn.dropout``; see ``minerva.seeding``).
"""
from __future__ import annotations

import threading

import numpy as np

from minerva import seeding
from minerva.api.core.indexing import getitem, setitem
from minerva.api.fallback.resolve import attribute, numpy_names
from minerva.builder import host_array, upload
from minerva.narray import HOST_READS, NArray
from minerva.ops.dtypes import supported_dtype

_DRAWS = ("rand", "randn", "randint", "random", "random_sample", "uniform", "normal",
          "standard_normal", "exponential", "standard_exponential",
          "binomial", "poisson", "beta", "gamma", "standard_gamma", "lognormal",
          "laplace", "logistic", "geometric", "multinomial", "multivariate_normal",
          "dirichlet", "chisquare", "standard_t", "triangular", "weibull", "pareto",
          "rayleigh", "gumbel", "vonmises", "wald", "zipf", "f", "hypergeometric",
          "negative_binomial", "noncentral_chisquare", "noncentral_f", "power",
          "standard_cauchy", "logseries", "random_integers")
_GENERATOR_DRAWS = ("random", "standard_normal", "normal", "integers", "uniform",
                    "exponential", "standard_exponential", "binomial", "poisson", "beta",
                    "gamma", "standard_gamma", "lognormal", "laplace", "logistic",
                    "geometric", "multinomial", "multivariate_normal", "dirichlet",
                    "chisquare", "standard_t", "triangular", "weibull", "pareto",
                    "rayleigh", "gumbel", "vonmises", "wald", "zipf", "f",
                    "hypergeometric", "negative_binomial", "standard_cauchy", "logseries")


def _as_result(values):
    """A draw as NumPy returns it: a scalar stays a Python/NumPy scalar; arrays are
    uploaded to the current device."""
    HOST_READS.check("a draw of mv.random (NumPy's generators, on the host)")
    if isinstance(values, np.ndarray):
        return upload(values)
    return values


def _host_args(args, kwargs):
    """NArray arguments (probabilities, bounds) as host arrays: the draw happens now."""
    args = [a.to_numpy() if isinstance(a, NArray) else a for a in args]
    kwargs = {k: v.to_numpy() if isinstance(v, NArray) else v for k, v in kwargs.items()}
    return args, kwargs


class _Sampler:
    """Methods shared by RandomState and Generator wrappers: draws, choice, permutation and
    in-place shuffle. ``_lock`` guards the wrapped NumPy generator (``_gen``)."""

    def __init__(self, gen):
        self._gen = gen
        self._lock = threading.Lock()

    def _draw(self, name, args, kwargs):
        args, kwargs = _host_args(args, kwargs)
        if kwargs.get("dtype") is not None:
            kwargs["dtype"] = supported_dtype(kwargs["dtype"])
        with self._lock:
            return _as_result(getattr(self._gen, name)(*args, **kwargs))

    def choice(self, a, size=None, replace=True, p=None, **kwargs):
        """Random samples from ``a`` (an int n: ``arange(n)``), as NumPy's ``choice``."""
        if isinstance(a, NArray):
            a = a.to_numpy()
        return self._draw("choice", (a, size, replace, p), kwargs)

    def permutation(self, x):
        """A permuted copy of ``x`` (an int n: ``arange(n)``), along its first axis."""
        if isinstance(x, NArray):
            with self._lock:
                order = self._gen.permutation(len(x))
            return getitem(x, upload(order))
        return self._draw("permutation", (x,), {})

    def shuffle(self, x) -> None:
        """Permute ``x`` in place along its first axis (the draws NumPy makes for it)."""
        if not isinstance(x, NArray):
            with self._lock:
                self._gen.shuffle(x)
            return
        order = np.arange(len(x))
        with self._lock:
            self._gen.shuffle(order)
        setitem(x, Ellipsis, getitem(x, upload(order)))

    def bytes(self, length: int) -> bytes:
        """``length`` random bytes."""
        with self._lock:
            return self._gen.bytes(length)


def _method(name):
    def method(self, *args, **kwargs):
        return self._draw(name, args, kwargs)
    method.__name__ = name
    method.__doc__ = f"NumPy's ``{name}``: drawn on the host, uploaded to the current device."
    return method


class RandomState(_Sampler):
    """NumPy's legacy ``RandomState(seed)``: the same methods, the same numbers."""

    def __init__(self, seed=None):
        super().__init__(np.random.RandomState(seed))

    def seed(self, seed=None) -> None:
        """Reseed this generator."""
        with self._lock:
            self._gen.seed(seed)

    def get_state(self, legacy=True):
        """The generator's state, as NumPy's ``get_state``."""
        with self._lock:
            return self._gen.get_state(legacy)

    def set_state(self, state) -> None:
        """Restore a state from ``get_state``."""
        with self._lock:
            self._gen.set_state(state)

    @property
    def bit_generator(self):
        """The NumPy bit generator this generator draws from."""
        return self._gen._bit_generator

    def use_bit_generator(self, bit_generator) -> None:
        """Draw from ``bit_generator`` (a NumPy BitGenerator) from now on."""
        with self._lock:
            self._gen = np.random.RandomState(bit_generator)


for _name in _DRAWS:
    setattr(RandomState, _name, _method(_name))


class Generator(_Sampler):
    """NumPy's ``Generator`` (from ``default_rng``): the same methods, the same numbers."""

    @property
    def bit_generator(self):
        """The NumPy bit generator underneath."""
        return self._gen.bit_generator

    def spawn(self, n: int) -> list:
        """``n`` independent child generators."""
        with self._lock:
            return [Generator(g) for g in self._gen.spawn(n)]


for _name in _GENERATOR_DRAWS:
    setattr(Generator, _name, _method(_name))


def default_rng(seed=None) -> Generator:
    """A new Generator seeded as ``numpy.random.default_rng(seed)``."""
    if isinstance(seed, Generator):
        return seed
    return Generator(np.random.default_rng(seed))


_GLOBAL = RandomState()


def seed(seed=None) -> None:
    """Reseed the global generator, as ``numpy.random.seed``; with an int, also restart
    Minerva's on-device draws from it."""
    _GLOBAL.seed(seed)
    if seed is not None:
        seeding.seed(int(host_array(seed, "seed").reshape(-1)[0]) if np.ndim(seed) else seed)


def get_state(legacy=True):
    """The global generator's state."""
    return _GLOBAL.get_state(legacy)


def set_state(state) -> None:
    """Restore the global generator's state."""
    _GLOBAL.set_state(state)


def get_bit_generator():
    """The bit generator under the global generator, as
    ``numpy.random.get_bit_generator``."""
    return _GLOBAL.bit_generator


def set_bit_generator(bitgen) -> None:
    """Make the global generator draw from ``bitgen`` (a NumPy BitGenerator), as
    ``numpy.random.set_bit_generator``."""
    _GLOBAL.use_bit_generator(bitgen)


def _global(name):
    def function(*args, **kwargs):
        return getattr(_GLOBAL, name)(*args, **kwargs)
    function.__name__ = name
    function.__doc__ = f"``numpy.random.{name}`` from the global generator."
    return function


FUNCTIONS = {name: _global(name) for name in _DRAWS + ("choice", "permutation", "shuffle",
                                                        "bytes")}
FUNCTIONS["ranf"] = FUNCTIONS["sample"] = FUNCTIONS["random_sample"]  # NumPy's aliases
"""NumPy's module-level draws by name (``mv.random.normal`` ...), from the global
generator: this module's attributes (see ``__getattr__``)."""


def __getattr__(name):
    """The module-level draw ``name`` (``FUNCTIONS``); NumPy's other random names are
    NumPy's own (its bit generators, ``SeedSequence``) or the host fallback
    (``minerva.api.fallback``); AttributeError for names NumPy lacks."""
    try:
        return FUNCTIONS[name]
    except KeyError:
        return attribute("random", name)


def __dir__() -> list:
    return sorted(set(globals()) | set(FUNCTIONS) | numpy_names("random"))
