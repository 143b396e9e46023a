"""Files: NumPy's ``save``, ``savez``, ``savez_compressed`` and ``savetxt`` of NArrays
write what they write of NumPy arrays; ``mv.save``/``mv.savez``/``mv.savetxt`` write the
same bytes; ``mv.load`` and ``mv.loadtxt`` read them back as NArrays, and ``mv.load``
never unpickles."""
from __future__ import annotations

import io

import numpy as np
import pytest

import minerva as mv


def values():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 4)), np.arange(5, dtype=np.int32)


def saved_bytes(save, path, *arrays, **named) -> bytes:
    save(path, *arrays, **named)
    with open(path, "rb") as stream:
        return stream.read()


@pytest.mark.parametrize("save", [np.save, mv.save])
def test_save_writes_numpys_file(engine, tmp_path, save):
    X, _ = values()
    expected = saved_bytes(np.save, tmp_path / "numpy.npy", X)
    assert saved_bytes(save, tmp_path / "narray.npy", mv.array(X)) == expected


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed, mv.savez,
                                  mv.savez_compressed])
def test_savez_archives_read_as_numpys(engine, tmp_path, save):
    X, k = values()
    save(tmp_path / "a.npz", mv.array(X), k=mv.array(k))
    with np.load(tmp_path / "a.npz") as archive:
        assert archive.files == ["k", "arr_0"]
        assert np.array_equal(archive["arr_0"], X) and archive["k"].dtype == np.int32
        assert np.array_equal(archive["k"], k)


@pytest.mark.parametrize("save", [np.savetxt, mv.savetxt])
def test_savetxt_writes_numpys_text(engine, tmp_path, save):
    X, _ = values()
    expected = saved_bytes(lambda p, a: np.savetxt(p, a, fmt="%.6e"), tmp_path / "n.txt", X)
    assert saved_bytes(lambda p, a: save(p, a, fmt="%.6e"), tmp_path / "m.txt",
                       mv.array(X)) == expected
    loaded = mv.loadtxt(tmp_path / "m.txt")
    assert isinstance(loaded, mv.NArray)
    assert np.array_equal(loaded.to_numpy(), np.loadtxt(tmp_path / "n.txt"))


def test_load_gives_narrays(engine, tmp_path):
    X, k = values()
    np.save(tmp_path / "x.npy", X)
    loaded = mv.load(tmp_path / "x.npy")
    assert isinstance(loaded, mv.NArray) and loaded.dtype == X.dtype
    assert np.array_equal(loaded.to_numpy(), X)
    mapped = mv.load(tmp_path / "x.npy", mmap_mode="r")
    assert isinstance(mapped, mv.NArray) and np.array_equal(mapped.to_numpy(), X)
    buffer = io.BytesIO()
    np.save(buffer, k)
    buffer.seek(0)
    assert np.array_equal(mv.load(buffer).to_numpy(), k)


def test_load_of_an_archive_gives_narrays_by_name(engine, tmp_path):
    X, k = values()
    np.savez(tmp_path / "a.npz", X=X, k=k)
    with mv.load(tmp_path / "a.npz") as archive, np.load(tmp_path / "a.npz") as numpys:
        assert archive.files == numpys.files and list(archive) == list(numpys)
        assert len(archive) == 2 and "k" in archive
        for name in numpys.files:
            assert isinstance(archive[name], mv.NArray)
            assert archive[name].dtype == numpys[name].dtype
            assert np.array_equal(archive[name].to_numpy(), numpys[name])


def test_load_never_unpickles(engine, tmp_path):
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle=False"):
        mv.load(tmp_path / "objects.npy")
    with pytest.raises(ValueError, match="never unpickles"):
        mv.load(tmp_path / "objects.npy", allow_pickle=True)
    np.savez(tmp_path / "objects.npz", o=np.array([None], dtype=object))
    with mv.load(tmp_path / "objects.npz") as archive, pytest.raises(ValueError):
        archive["o"]
