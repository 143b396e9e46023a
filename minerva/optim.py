"""``mv.optim``: optimizers that update parameters in place from their ``.grad``.

    for p in params: p.attach_grad()
    opt = mv.optim.SGD(params, lr=0.05, momentum=0.9)
    with mv.autograd.record():
        loss = f(params)
    loss.backward()
    opt.step()          # every parameter written in place, nothing waits

``step()`` runs under ``autograd.pause()``: the updates are never recorded. Each
parameter's update runs on the parameter's device, and the optimizer's state (SGD's
velocity, Adam's moments) lives there too, made once at the first step. The parameter
handles keep their storage (and buffer): ``w -= ...`` writes in place, so replicas made
with ``w.to(dev)`` see each new value once, and a jitted or recorded program that holds
the parameters keeps reading the live ones. The arithmetic follows PyTorch's ``SGD`` and
``Adam`` (weight decay added to the gradient; see doc/apps.md, "Optimizers").
"""
from __future__ import annotations

import math

from minerva import autograd
from minerva.api.core.creation import copy, empty, zeros
from minerva.api.core.ufuncs import FUNCTIONS
from minerva.builder import device
from minerva.narray import NArray

_MULTIPLY, _SQRT, _DIVIDE = FUNCTIONS["multiply"], FUNCTIONS["sqrt"], FUNCTIONS["divide"]

__all__ = ["Optimizer", "SGD", "Adam"]


class Optimizer:
    """The parameters, their per-parameter state, and the loop over them.

    ``params`` is an iterable of NArrays (or a dict of them: its values, in order), each
    with a gradient buffer (``attach_grad``). ``lr`` may be changed between steps.
    """

    def __init__(self, params, lr: float, weight_decay: float = 0.0):
        values = params.values() if isinstance(params, dict) else params
        self.params: list[NArray] = list(values)
        for i, p in enumerate(self.params):
            if not isinstance(p, NArray):
                raise TypeError(f"parameter {i} is a {type(p).__name__}, not an NArray")
        _check("lr", lr, 0.0)
        _check("weight_decay", weight_decay, 0.0)
        self.lr, self.weight_decay = float(lr), float(weight_decay)
        self.state: list[dict] = [{} for _ in self.params]
        self.n_steps = 0

    def step(self) -> None:
        """Update every parameter in place from its ``.grad`` (not recorded)."""
        self.n_steps += 1
        with autograd.pause():
            for i, p in enumerate(self.params):
                grad = _grad(p, i)
                with device(p.device):
                    self._update(p, grad, self.state[i])

    def zero_grad(self) -> None:
        """Set every parameter's ``.grad`` to zero (for ``grad_req="add"``)."""
        with autograd.pause():
            for i, p in enumerate(self.params):
                grad = _grad(p, i)
                with device(grad.device):
                    grad[...] = 0

    def _decayed(self, p: NArray, grad: NArray) -> NArray:
        """``grad + weight_decay * p`` (a new array), or ``grad`` itself without decay."""
        if not self.weight_decay:
            return grad
        d = p * self.weight_decay
        d += grad
        return d

    def _update(self, p: NArray, grad: NArray, state: dict) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """SGD with momentum and weight decay (PyTorch's ``SGD``, no dampening):

        d = g + weight_decay * w
        v = d  (first step),  v = momentum * v + d  (later steps)
        w -= lr * v            (w -= lr * d without momentum)
    """

    def __init__(self, params, lr: float, momentum: float = 0.0,
                 weight_decay: float = 0.0):
        super().__init__(params, lr, weight_decay)
        _check("momentum", momentum, 0.0)
        self.momentum = float(momentum)

    def _update(self, p, grad, state) -> None:
        d = self._decayed(p, grad)
        if self.momentum:
            v = state.get("velocity")
            if v is None:
                state["velocity"] = d = copy(d) if d is grad else d
            else:
                v *= self.momentum
                v += d
                d = v
        p -= d * self.lr


class Adam(Optimizer):
    """Adam (PyTorch's ``Adam``, weight decay added to the gradient), at step ``t``:

        d = g + weight_decay * w
        m = beta1 * m + (1 - beta1) * d
        v = beta2 * v + (1 - beta2) * (d * d)
        w -= (lr / (1 - beta1**t)) * (m / (sqrt(v) / sqrt(1 - beta2**t) + eps))

    One parameter-sized temporary per parameter and step; ``m`` and ``v`` are its state.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(params, lr, weight_decay)
        beta1, beta2 = (float(b) for b in betas)
        for name, beta in (("beta1", beta1), ("beta2", beta2)):
            _check(name, beta, 0.0, 1.0)
        _check("eps", eps, 0.0)
        self.betas, self.eps = (beta1, beta2), float(eps)

    def _update(self, p, grad, state) -> None:
        (beta1, beta2), t = self.betas, self.n_steps
        d = self._decayed(p, grad)
        if not state:
            state["m"], state["v"] = _zeros_like(p), _zeros_like(p)
        m, v = state["m"], state["v"]
        tmp = _MULTIPLY(d, 1.0 - beta1, out=_empty_like(p))
        m *= beta1
        m += tmp
        _MULTIPLY(d, d, out=tmp)
        tmp *= 1.0 - beta2
        v *= beta2
        v += tmp
        _SQRT(v, out=tmp)
        tmp /= math.sqrt(1.0 - beta2 ** t)
        tmp += self.eps
        _DIVIDE(m, tmp, out=tmp)
        tmp *= self.lr / (1.0 - beta1 ** t)
        p -= tmp


def _grad(p: NArray, index: int) -> NArray:
    grad = p.grad
    if grad is None:
        raise ValueError(f"parameter {index} (shape {p.shape}) has no gradient buffer; "
                         "call attach_grad() on it before the optimizer steps")
    return grad


def _zeros_like(p: NArray) -> NArray:
    return zeros(p.shape, dtype=p.dtype)


def _empty_like(p: NArray) -> NArray:
    return empty(p.shape, dtype=p.dtype)


def _check(name: str, value, low: float, high: float | None = None) -> None:
    if not (value >= low and (high is None or value < high)):
        bound = f"in [{low}, {high})" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
