"""The training loop the MNIST apps share: the step, epochs, evaluation.

A step records the forward pass with ``mv.autograd``, lets ``loss.backward()`` write the
gradients into each parameter's ``.grad``, and updates the parameters in place with an
optimizer of ``mv.optim`` (``--manual-backward``: the app's hand-written backward pass
writes the gradients instead). The loop only builds ops; minerva runs them in the
background. It reads a value (and so waits) only where it reports: the loss every few
steps, the end of an epoch, accuracies.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

import minerva as mv
from apps import layers, report
from apps.basics import split
from minerva import optim

N_REPORTS = 8          # progress updates per epoch, at least
MAX_REPORT_EVERY = 20  # steps between progress updates, at most
EVAL_BATCH = 1000


def make_optimizer(args, params: dict) -> optim.Optimizer:
    """The optimizer ``--optimizer`` names, over ``params`` (each with ``.grad``)."""
    if args.optimizer == "adam":
        return optim.Adam(params, lr=args.lr)
    return optim.SGD(params, lr=args.lr, momentum=args.momentum)


def attach_grads(params: dict) -> dict:
    """Give every parameter a gradient buffer (``attach_grad``); ``params``."""
    for p in params.values():
        p.attach_grad()
    return params


def backward_pass(app, params: dict, x, labels, n_total: int, manual: bool = False):
    """The summed loss of a batch (or of a device's part of it), and the gradients of
    (summed loss / ``n_total``) written into each parameter's ``.grad``, on the current
    device. The loss is detached: holding it keeps no recording alive."""
    if manual:
        loss, grads = app.loss_and_grads(params, x, labels, n_total)
        with mv.autograd.pause():
            for name, p in params.items():
                p.grad[...] = grads[name]
        return loss
    with mv.autograd.record():
        loss = layers.loss_sum(app.predict(params, x), labels)
    loss.backward(mv.full((), 1.0 / n_total, dtype=loss.dtype))
    return loss.detach()


class Step:
    """One training step on one device: gradients into ``.grad`` (see
    :func:`backward_pass`), then the optimizer's in-place update. ``step(x, y)`` (NumPy
    images and labels) returns the batch's summed loss, not waited for.

    With ``jit``, the step after the first is replayed by ``mv.jit`` (:meth:`compute` is
    the jitted function; the batch is uploaded outside it). The first step runs eagerly:
    it creates the optimizer's state. The learning rate is an argument of the jitted
    function, so a new rate records the step again. Only SGD is jitted: Adam's bias
    correction is a host scalar that changes every step, which a replay would repeat."""

    def __init__(self, app, devices: list[int], params: dict, opt, manual: bool = False,
                 jit: bool = False):
        self.app, self.devices, self.params = app, list(devices), params
        self.opt, self.manual = opt, manual
        self.jitted = mv.jit(self.compute) if jit and type(opt) is optim.SGD else None

    def __call__(self, x: np.ndarray, y: np.ndarray):
        arrays = self.upload(x, y)
        if self.jitted is None or self.opt.n_steps == 0:
            return self.compute(*arrays, self.opt.lr)
        return self.jitted(*arrays, self.opt.lr)

    def upload(self, x: np.ndarray, y: np.ndarray) -> tuple:
        """The batch as NArrays on the step's device."""
        with mv.device(self.devices[0]):
            return mv.array(x), mv.array(y)

    def compute(self, x, y, lr: float):
        """The step on uploaded arrays (``lr``: the optimizer's rate, for the jit's
        signature); the summed loss."""
        with mv.device(self.devices[0]):
            loss = backward_pass(self.app, self.params, x, y, y.shape[0], self.manual)
            self.opt.step()
        return loss


# ------------------------------------------- the functional step of tools/benchmarks/steps.py
class SGD:
    """Functional SGD with momentum: ``v = momentum * v + g``, ``w = w - lr * v``, returning
    new parameters. The apps update in place with ``mv.optim``; this one stays for
    ``tools/benchmarks/steps.py``, which runs the same update eagerly on NumPy arrays."""

    def __init__(self, lr: float, momentum: float = 0.9):
        self.lr, self.momentum = lr, momentum
        self.velocity: dict = {}

    def step(self, params: dict, grads: dict) -> dict:
        """New parameters after one step with ``grads`` (same names as ``params``)."""
        new = {}
        for name, w in params.items():
            v = grads[name]
            if self.momentum and name in self.velocity:
                v = self.velocity[name] * self.momentum + v
            self.velocity[name] = v
            new[name] = w - v * self.lr
        return new


def train_step(app, devices, params: dict, opt: SGD, x: np.ndarray, y: np.ndarray):
    """One hand-written functional step (for ``tools/benchmarks/steps.py``); the new
    parameters and the summed loss."""
    loss, grads = app.loss_and_grads(params, mv.array(x), mv.array(y), len(y))
    return opt.step(params, grads), loss


# ---------------------------------------------------------------- the loop
@dataclasses.dataclass
class Run:
    """One training run: what every epoch needs."""

    args: object
    step: Step
    rng: np.random.Generator
    history: report.History


def fit(app, args, devices: list[int], data: dict) -> report.History:
    """Train ``app`` as ``args`` say, evaluating after each epoch, then on the test set."""
    mv.random.seed(args.seed)
    params = attach_grads(app.init_params())
    opt = make_optimizer(args, params)
    step = (app.make_step or Step)(app, devices, params, opt, args.manual_backward,
                                   jit=not args.no_jit)
    history = report.History(app.name, devices, settings=dict(
        backward="manual" if args.manual_backward else "autograd", optimizer=args.optimizer,
        jit=step.jitted is not None))
    run = Run(args, step, np.random.default_rng(args.seed), history)
    steps_left = args.max_steps or 10**12
    with report.tracing(args.trace):
        for epoch in range(1, args.epochs + 1):
            opt.lr = args.lr * args.lr_decay ** (epoch - 1)
            n_steps, seconds = train_epoch(run, data["train"], epoch, steps_left)
            steps_left -= n_steps
            history.end_epoch(epoch, seconds, evaluate(app, devices, params, *data["val"]))
            if steps_left <= 0:
                break
    history.test_acc = evaluate(app, devices, params, *data["test"])
    return history


def batches(n: int, size: int, rng) -> list[np.ndarray]:
    """Indices of the full batches of one shuffled pass over ``n`` examples."""
    order = rng.permutation(n)
    return [order[i:i + size] for i in range(0, n - size + 1, size)]


def train_epoch(run: Run, train_data: tuple, epoch: int, max_steps: int):
    """One pass over ``train_data`` (at most ``max_steps`` steps); the steps taken and the
    seconds spent."""
    images, labels = train_data
    size = run.args.batch_size
    index = batches(len(labels), size, run.rng)[:max_steps]
    every = max(1, min(MAX_REPORT_EVERY, len(index) // N_REPORTS))
    progress = report.Progress(epoch, run.args.epochs, len(index) * size)
    start, losses, n_images = time.perf_counter(), [], 0
    for i, idx in enumerate(index, 1):
        losses.append(run.step(images[idx], labels[idx]))
        n_images += len(idx)
        if i % every == 0 or i == len(index):
            mean = sum(float(x) for x in losses) / n_images   # waits: a report point
            progress.update(n_images, mean)
            run.history.add_loss(mean, n_images)
            losses, n_images = [], 0
    mv.wait_for_all()
    progress.close()
    return len(index), time.perf_counter() - start


def evaluate(app, devices, params: dict, images, labels) -> float:
    """Accuracy of ``params`` on ``images``; each batch split over ``devices``."""
    counts = []
    for start in range(0, len(labels), EVAL_BATCH):
        xs = split(images[start:start + EVAL_BATCH], len(devices))
        ys = split(labels[start:start + EVAL_BATCH], len(devices))
        for dev, x, y in zip(devices, xs, ys):
            with mv.device(dev):
                logits = app.predict(params, mv.array(x))
                counts.append(layers.n_correct(logits, mv.array(y)))
    return sum(int(c) for c in counts) / len(labels)
