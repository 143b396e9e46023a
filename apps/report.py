"""How the MNIST apps report: progress bar, a log line per epoch, plot, trace, results.

The progress bar (tqdm, the ``apps`` extra) goes to stderr; the log lines and a short
summary at the end go to stdout. The full results (``History.as_dict``) go, as JSON, to
the file ``--json`` names.
"""
from __future__ import annotations

import contextlib
import json
import logging
import sys

import structlog

import minerva as mv
from apps.basics import AppError, device_names

log = structlog.wrap_logger(  # its own settings: minerva's MINERVA_LOG level does not apply
    structlog.PrintLogger(sys.stdout),
    wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
    processors=[structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="%H:%M:%S"),
                structlog.dev.ConsoleRenderer(colors=False, sort_keys=False)])


class History:
    """Losses, accuracies and times of a run, and its per-epoch log lines; ``settings``
    says how it trained (``backward``: autograd or manual; ``optimizer``; ``jit``: whether
    the step was replayed by ``mv.jit``)."""

    def __init__(self, app_name: str, devices: list[int], settings: dict | None = None):
        self.app, self.devices = app_name, list(devices)
        self.settings = dict(settings or {})
        self.losses: list[tuple[int, float]] = []   # (images seen, mean loss since last)
        self.epochs: list[dict] = []
        self.test_acc: float | None = None
        self.train_images, self.train_s = 0, 0.0   # over all epochs
        self._seen = self._epoch_sum = self._epoch_images = 0

    def add_loss(self, mean_loss: float, n_images: int) -> None:
        """Record the mean loss of the last ``n_images`` training images."""
        self._seen += n_images
        self._epoch_sum += mean_loss * n_images
        self._epoch_images += n_images
        self.losses.append((self._seen, mean_loss))

    def end_epoch(self, epoch: int, seconds: float, val_acc: float) -> None:
        """Close an epoch: record and log its loss, validation accuracy and time."""
        record = dict(epoch=epoch, train_loss=self._epoch_sum / max(self._epoch_images, 1),
                      val_acc=val_acc, epoch_s=seconds,
                      images_per_s=round(self._epoch_images / max(seconds, 1e-9)))
        self.epochs.append(record)
        self.train_images += self._epoch_images
        self.train_s += seconds
        self._epoch_sum = self._epoch_images = 0
        log.info("epoch", **{k: round(v, 4) if isinstance(v, float) else v
                             for k, v in record.items()})

    def as_dict(self) -> dict:
        """Everything recorded, as JSON-ready values (4 significant digits)."""
        epochs = [{k: _short(v) for k, v in e.items()} for e in self.epochs]
        return dict(app=self.app, devices=self.devices, **self.settings, epochs=epochs,
                    losses=[_short(loss) for _, loss in self.losses],
                    test_acc=self.test_acc)


def _short(value):
    """A float cut to 4 significant digits; other values as they are."""
    return float(f"{value:.4g}") if isinstance(value, float) else value


class Progress:
    """A tqdm bar over an epoch's images showing the loss (and images/s); nothing when
    tqdm is missing or stderr is not a terminal."""

    def __init__(self, epoch: int, n_epochs: int, n_images: int):
        try:
            from tqdm import tqdm
        except ImportError:
            self.bar = None
            return
        self.bar = tqdm(total=n_images, desc=f"epoch {epoch}/{n_epochs}", unit="img",
                        unit_scale=True, file=sys.stderr, disable=None, leave=True)

    def update(self, n_images: int, loss: float) -> None:
        """Advance by ``n_images`` and show ``loss``."""
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
            self.bar.update(n_images)

    def close(self) -> None:
        """Finish the bar."""
        if self.bar is not None:
            self.bar.close()


# ---------------------------------------------------------------- optional extras
def trace_api():
    """minerva's profiler (``mv.profiler``, which writes Chrome traces); AppError when this
    minerva has none."""
    trace = getattr(mv, "profiler", None)
    if trace is None:
        try:
            import minerva.profiler as trace
        except ImportError:
            trace = None
    if not (hasattr(trace, "start") and hasattr(trace, "stop")):
        raise AppError("--trace needs minerva's trace API (mv.profiler.start/stop), which "
                       "this installation of minerva does not have")
    return trace


def check_extras(args) -> None:
    """Fail before training if ``--plot`` or ``--trace`` cannot work (their paths, and
    ``--json``'s, are checked when the flags are parsed: ``common.output_path``)."""
    if args.trace:
        trace_api()
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise AppError("--plot needs matplotlib: pip install -e '.[plot]' "
                           "(or pip install matplotlib)") from None


@contextlib.contextmanager
def tracing(path: str | None):
    """Record a Chrome trace of the block to ``path`` (nothing when None)."""
    if not path:
        yield
        return
    trace = trace_api()
    trace.start(path)
    try:
        yield
    finally:
        mv.wait_for_all()
        trace.stop()


def save_plot(path: str, history: History) -> None:
    """Training loss against images seen, and validation accuracy per epoch, as a PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot([n for n, _ in history.losses], [v for _, v in history.losses])
    left.set(xlabel="training images seen", ylabel="loss", yscale="log",
             title=f"{history.app}: training loss")
    right.plot([e["epoch"] for e in history.epochs],
               [100 * e["val_acc"] for e in history.epochs], marker="o")
    right.set(xlabel="epoch", ylabel="accuracy (%)", title="validation accuracy")
    right.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as err:
        raise AppError(f"--plot: cannot write {path}: {err}") from None
    finally:
        plt.close(fig)


def save_json(path: str, results: dict) -> None:
    """``results`` as pretty-printed UTF-8 JSON in ``path``."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2, ensure_ascii=False)
            f.write("\n")
    except OSError as err:
        raise AppError(f"--json: cannot write {path}: {err}") from None


def summary(args, history: History) -> list[str]:
    """A few lines for the terminal: accuracy, loss, speed, devices, files written."""
    last, n_epochs = history.epochs[-1], len(history.epochs)
    steps = history.train_images // args.batch_size
    seconds = max(history.train_s, 1e-9)
    per_epoch = history.train_s / n_epochs
    lines = [
        f"{history.app}: {n_epochs} epoch{'s' * (n_epochs != 1)}, {steps} steps",
        f"  test accuracy  {100 * history.test_acc:.2f}%",
        f"  train loss     {last['train_loss']:.4f} (last epoch; validation accuracy "
        f"{100 * last['val_acc']:.2f}%)",
        f"  time           {per_epoch:.{1 if per_epoch >= 1 else 3}f} s per epoch, "
        f"{steps / seconds:.1f} steps/s, {history.train_images / seconds:.0f} images/s",
        f"  devices        {device_names(history.devices)}",
        f"  results        {args.json or 'not saved (--json PATH writes them)'}"]
    if history.settings:
        how = history.settings
        jitted = ", jitted step" if how.get("jit") else ""
        lines.insert(-2, f"  training       {how['optimizer']}, {how['backward']} backward"
                         f"{jitted}")
    lines += [f"  {name:<15}{path}" for name, path in
              (("plot", args.plot), ("trace", args.trace)) if path]
    return lines


def finish(args, history: History) -> None:
    """Write the JSON results and the plot (when asked), then print the summary."""
    if args.json:
        save_json(args.json, history.as_dict())
    if args.plot:
        save_plot(args.plot, history)
    print("\n".join(summary(args, history)), flush=True)
