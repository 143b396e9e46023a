"""The training loop the MNIST apps share: SGD, one step, epochs, evaluation.

The loop only builds ops; minerva runs them in the background. It reads a value (and so
waits) only where it reports: the loss every few steps, the end of an epoch, accuracies.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

import minerva as mv
from apps import layers, report
from apps.common import split

N_REPORTS = 8          # progress updates per epoch, at least
MAX_REPORT_EVERY = 20  # steps between progress updates, at most
EVAL_BATCH = 1000


class SGD:
    """SGD with momentum: ``v = momentum * v + g``, ``w = w - lr * v``.

    The update runs on the current device; the velocities live there too.
    """

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
    """One SGD step on the current device; the new parameters and the summed loss."""
    loss, grads = app.loss_and_grads(params, mv.array(x), mv.array(y), len(y))
    return opt.step(params, grads), loss


@dataclasses.dataclass
class Run:
    """One training run: what every epoch needs."""

    app: object
    args: object
    devices: list
    opt: SGD
    rng: np.random.Generator
    history: report.History


def fit(app, args, devices: list[int], data: dict) -> report.History:
    """Train ``app`` as ``args`` say, evaluating after each epoch, then on the test set."""
    mv.random.seed(args.seed)
    params = app.init_params()
    run = Run(app, args, devices, SGD(args.lr, args.momentum),
              np.random.default_rng(args.seed), report.History(app.name, devices))
    steps_left = args.max_steps or 10**12
    with report.tracing(args.trace):
        for epoch in range(1, args.epochs + 1):
            run.opt.lr = args.lr * args.lr_decay ** (epoch - 1)
            params, n_steps, seconds = train_epoch(run, params, data["train"], epoch,
                                                   steps_left)
            steps_left -= n_steps
            run.history.end_epoch(epoch, seconds, evaluate(app, devices, params,
                                                           *data["val"]))
            if steps_left <= 0:
                break
    run.history.test_acc = evaluate(app, devices, params, *data["test"])
    return run.history


def batches(n: int, size: int, rng) -> list[np.ndarray]:
    """Indices of the full batches of one shuffled pass over ``n`` examples."""
    order = rng.permutation(n)
    return [order[i:i + size] for i in range(0, n - size + 1, size)]


def train_epoch(run: Run, params: dict, train_data: tuple, epoch: int, max_steps: int):
    """One pass over ``train_data`` (at most ``max_steps`` steps); the new parameters,
    the steps taken and the seconds spent."""
    images, labels = train_data
    size = run.args.batch_size
    index = batches(len(labels), size, run.rng)[:max_steps]
    every = max(1, min(MAX_REPORT_EVERY, len(index) // N_REPORTS))
    step = run.app.train_step or train_step
    progress = report.Progress(epoch, run.args.epochs, len(index) * size)
    start, losses, n_images = time.perf_counter(), [], 0
    for i, idx in enumerate(index, 1):
        params, loss = step(run.app, run.devices, params, run.opt, images[idx], labels[idx])
        losses.append(loss)
        n_images += len(idx)
        if i % every == 0 or i == len(index):
            mean = sum(float(x) for x in losses) / n_images   # waits: a report point
            progress.update(n_images, mean)
            run.history.add_loss(mean, n_images)
            losses, n_images = [], 0
    mv.wait_for_all()
    progress.close()
    return params, len(index), time.perf_counter() - start


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
