"""What the MNIST apps share: the command line, devices, data, and ``main``.

An app describes its model with an :class:`App` (parameters, forward and hand-written
backward, the shape of one image) and calls :func:`main`; the training loop is in
``apps/train.py`` and the reporting (progress bar, log lines, plot, trace, JSON results,
summary) in ``apps/report.py``.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Callable

import minerva as mv
from minerva.datasets import DatasetError, load_mnist

from apps import layers, report, train
from apps.basics import AppError, device_names, split  # noqa: F401  (apps use common.*)

SMOKE_SIZES = {"train": 2560, "val": 500, "test": 1000}
SMOKE_EPOCHS = 1
OPTIMIZERS = ("sgd", "adam")
ADAM_LR = 1e-3   # Adam's default learning rate (the apps' --lr defaults are SGD's)


@dataclasses.dataclass(frozen=True)
class App:
    """An app's model and settings.

    ``forward(params, x)`` returns the logits of images ``x`` and what ``backward(params,
    cache, dlogits)`` (the hand-written backward pass, ``--manual-backward``) needs to
    return the gradients of every parameter; ``image_shape`` is one image as the model
    reads it; ``defaults`` overrides flag defaults; ``make_step`` builds the training step
    over the app's devices (default: ``train.Step``, one device); ``max_devices`` is how
    many devices it can use (None: any number).
    """

    name: str
    init_params: Callable
    forward: Callable
    backward: Callable
    image_shape: tuple
    defaults: dict = dataclasses.field(default_factory=dict)
    make_step: Callable | None = None
    max_devices: int | None = 1

    def loss_and_grads(self, params: dict, x, labels, n_total: int) -> tuple:
        """Summed loss of a batch and the gradients of (summed loss / ``n_total``)."""
        logits, cache = self.forward(params, x)
        dlogits = layers.loss_backward(logits, labels, n_total)
        return layers.loss_sum(logits, labels), self.backward(params, cache, dlogits)

    def predict(self, params: dict, x):
        """Logits of images ``x``."""
        return self.forward(params, x)[0]


# ---------------------------------------------------------------- command line
def settings(app: App) -> dict:
    """Default training settings, with the app's own defaults applied."""
    values = dict(epochs=10, batch_size=64, lr=0.05, lr_decay=1.0, momentum=0.9)
    values.update(app.defaults)
    return values


def make_parser(app: App, description: str | None) -> argparse.ArgumentParser:
    """The flags every app takes, with the app's defaults."""
    d = settings(app)
    p = argparse.ArgumentParser(prog=f"{app.name}.py", description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--devices", help="gpu:0,1 | gpu | cpu:2 | cpu (default: every GPU "
                   f"if any, else {'cpu' if app.max_devices == 1 else 'cpu:2'})")
    p.add_argument("--epochs", type=int, help=f"passes over the training set (default: "
                   f"{d['epochs']}; {SMOKE_EPOCHS} with --smoke)")
    p.add_argument("--batch-size", type=int, default=d["batch_size"],
                   help="images per step, over all devices (default: %(default)s)")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd",
                   help="sgd (with --momentum) or adam (default: %(default)s)")
    p.add_argument("--lr", type=float, help=f"learning rate (default: {d['lr']} for sgd, "
                   f"{ADAM_LR} for adam)")
    p.add_argument("--lr-decay", type=float, default=d["lr_decay"],
                   help="learning rate factor per epoch (default: %(default)s)")
    p.add_argument("--momentum", type=float, default=d["momentum"],
                   help="SGD momentum (default: %(default)s)")
    p.add_argument("--manual-backward", action="store_true",
                   help="use the hand-written backward passes of apps/layers.py instead "
                   "of recording the forward pass with mv.autograd")
    p.add_argument("--no-jit", action="store_true",
                   help="run every step eagerly instead of replaying it with mv.jit")
    p.add_argument("--max-steps", type=int, help="stop training after this many steps")
    p.add_argument("--seed", type=int, default=0, help="seed of weights and shuffling")
    p.add_argument("--data-dir", help="folder with mnist.npz or the IDX files")
    p.add_argument("--json", metavar="PATH", type=output_path,
                   help="write the full results (per-epoch figures, losses) as JSON")
    p.add_argument("--trace", metavar="PATH", type=output_path,
                   help="write a Chrome trace of the run")
    p.add_argument("--plot", metavar="PATH", type=output_path,
                   help="save loss/accuracy curves as a PNG")
    p.add_argument("--smoke", action="store_true",
                   help=f"train on {SMOKE_SIZES['train']} images only (for CI)")
    return p


def output_path(text: str) -> str:
    """``text`` if a file can be written there: its folder exists and it is no folder
    itself (an argparse ``type``, so a bad path is a usage error before any training)."""
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{text}: there is no folder {folder}")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    return text


def parse_args(app: App, argv=None, description: str | None = None) -> argparse.Namespace:
    """Parsed flags, with the app's defaults filled in and the values checked."""
    parser = make_parser(app, description)
    args = parser.parse_args(argv)
    if args.epochs is None:
        args.epochs = SMOKE_EPOCHS if args.smoke else settings(app)["epochs"]
    if args.lr is None:
        args.lr = ADAM_LR if args.optimizer == "adam" else settings(app)["lr"]
    for name in ("epochs", "batch_size", "max_steps"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


# ---------------------------------------------------------------- devices
def parse_devices(text: str) -> list[tuple[str, int | None]]:
    """``"gpu:0,1"`` -> [("gpu", 0), ("gpu", 1)]; ``"cpu:2"`` -> two ("cpu", None);
    ``"cpu"`` -> one; ``"gpu"`` -> [("gpu", None)], meaning every GPU."""
    kind, _, rest = text.strip().lower().partition(":")
    try:
        numbers = [int(n) for n in rest.split(",")] if rest else []
    except ValueError:
        numbers = [-1]
    if kind == "cpu" and len(numbers) <= 1 and all(n >= 1 for n in numbers):
        return [("cpu", None)] * (numbers[0] if numbers else 1)
    if kind == "gpu" and all(n >= 0 for n in numbers):
        return [("gpu", n) for n in numbers] if numbers else [("gpu", None)]
    raise AppError(f"--devices {text!r}: use gpu:0,1 (GPU ordinals), gpu (every GPU), "
                   "cpu:N (N CPU devices) or cpu")


def default_devices(app: App) -> str:
    """Every GPU (one for a one-device app) if there are any, else CPU devices."""
    n_gpus = mv.get_gpu_device_count()
    n_max = app.max_devices
    if n_gpus:
        return "gpu:" + ",".join(str(i) for i in range(min(n_gpus, n_max or n_gpus)))
    return "cpu" if n_max == 1 else "cpu:2"


def create_devices(app: App, text: str | None) -> list[int]:
    """Create the devices ``text`` names (default: :func:`default_devices`); the ids."""
    specs = parse_devices(text or default_devices(app))
    if specs == [("gpu", None)]:
        n_gpus = mv.get_gpu_device_count()
        if not n_gpus:
            raise AppError("--devices gpu: no GPU found (is CuPy installed? try cpu:2)")
        specs = [("gpu", i) for i in range(n_gpus)]
    if app.max_devices is not None and len(specs) > app.max_devices:
        raise AppError(f"{app.name} runs on {app.max_devices} device; got {len(specs)} "
                       "(mnist_cnn_2gpu.py trains data parallel on several)")
    devices = [mv.create_cpu_device() if kind == "cpu" else _gpu(n) for kind, n in specs]
    mv.set_device(devices[0])
    return devices


def _gpu(ordinal: int) -> int:
    try:
        return mv.create_gpu_device(ordinal)
    except mv.DeviceError as err:
        raise AppError(f"--devices: {err}") from None


# ---------------------------------------------------------------- data
def load_data(app: App, args) -> dict:
    """MNIST as ``{split: (images, labels)}``, images reshaped to ``app.image_shape``;
    the first few images of each split only with ``--smoke``."""
    raw = load_mnist(args.data_dir)
    data = {}
    for split in ("train", "val", "test"):
        images, labels = raw[f"{split}_images"], raw[f"{split}_labels"]
        if args.smoke:
            n = SMOKE_SIZES[split]
            images, labels = images[:n], labels[:n]
        data[split] = (images.reshape((-1,) + tuple(app.image_shape)), labels)
    return data


def describe(data: dict, devices: list[int]) -> str:
    """One line: split sizes and the devices used."""
    sizes = " / ".join(f"{len(data[s][1])} {s}" for s in ("train", "val", "test"))
    return f"MNIST: {sizes} images; devices: {device_names(devices)}"


# ---------------------------------------------------------------- main
def main(app: App, argv=None, description: str | None = None) -> int:
    """Parse ``argv``, train and test ``app``; the exit status (0 when all went well)."""
    args = parse_args(app, argv, description)
    try:
        report.check_extras(args)
        devices = create_devices(app, args.devices)
        data = load_data(app, args)
        print(describe(data, devices), flush=True)
        history = train.fit(app, args, devices, data)
        report.finish(args, history)
    except DatasetError as err:
        print(f"error: could not load MNIST.\n{err}", file=sys.stderr)
        return 1
    except AppError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        mv.shutdown()
    return 0
