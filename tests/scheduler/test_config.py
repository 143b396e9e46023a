"""Configuration from MINERVA_* variables: parsing, defaults, clear errors."""
from __future__ import annotations

import pytest

import minerva as mv
from minerva.common.config import Config, parse_size


def test_defaults():
    config = Config.from_env({})
    assert (config.engine, config.dispatchers, config.mem_pool, config.mem_limit,
            config.dispatch, config.virtual_gpus, config.trace) == (
        "dag", 2, "pooled", None, "inline", 0, None)
    assert config.max_pending > 0


def test_every_variable_is_read():
    env = {"MINERVA_ENGINE": "naive", "MINERVA_DISPATCHERS": "3", "MINERVA_MEM_POOL": "round",
           "MINERVA_MEM_LIMIT": "512M", "MINERVA_MAX_PENDING": "64",
           "MINERVA_VIRTUAL_GPUS": "2", "MINERVA_TRACE": "/tmp/t.json", "MINERVA_LOG": "json",
           "MINERVA_DISPATCH": "queued"}
    config = Config.from_env(env)
    assert (config.engine, config.dispatchers, config.mem_pool, config.mem_limit,
            config.max_pending, config.virtual_gpus, config.trace, config.log,
            config.dispatch) == ("naive", 3, "round", 512 << 20, 64, 2, "/tmp/t.json", "json",
                                 "queued")


@pytest.mark.parametrize("text, size", [("512M", 512 << 20), ("8G", 8 << 30), ("100", 100),
                                        ("1.5K", 1536), ("64kb", 64 << 10), (4096, 4096),
                                        ("2 GiB", 2 << 30)])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("env, message", [
    ({"MINERVA_ENGINE": "fast"}, "MINERVA_ENGINE"),
    ({"MINERVA_MEM_POOL": "huge"}, "MINERVA_MEM_POOL"),
    ({"MINERVA_MEM_LIMIT": "lots"}, "MINERVA_MEM_LIMIT"),
    ({"MINERVA_DISPATCHERS": "0"}, "MINERVA_DISPATCHERS"),
    ({"MINERVA_DISPATCHERS": "two"}, "MINERVA_DISPATCHERS"),
    ({"MINERVA_MAX_PENDING": "-1"}, "MINERVA_MAX_PENDING"),
    ({"MINERVA_DISPATCH": "eager"}, "MINERVA_DISPATCH"),
])
def test_bad_values_name_the_variable(env, message):
    with pytest.raises(ValueError, match=message):
        Config.from_env(env)


def test_environment_is_read_at_start(monkeypatch):
    monkeypatch.setenv("MINERVA_ENGINE", "naive")
    monkeypatch.setenv("MINERVA_DISPATCHERS", "1")
    from minerva.scheduler.naive import NaiveEngine
    from minerva.system import get_system
    assert isinstance(get_system().engine, NaiveEngine)
    mv.shutdown()
    monkeypatch.setenv("MINERVA_ENGINE", "dag")
    assert get_system().config.engine == "dag" and get_system().config.dispatchers == 1


def test_init_overrides_the_environment(monkeypatch):
    monkeypatch.setenv("MINERVA_ENGINE", "naive")
    mv.init(engine="dag", max_pending=9)
    from minerva.system import get_system
    assert get_system().config.engine == "dag" and get_system().engine.max_pending == 9


def test_init_takes_sizes_as_text():
    mv.init(mem_limit="64K")
    assert mv.memory_stats(mv.create_cpu_device())["limit_bytes"] == 64 << 10


def test_cpu_devices_share_the_cores_unless_told(monkeypatch):
    from minerva.device.cpu.blas import usable_cores
    mv.init()
    first = mv.create_cpu_device()
    assert mv.device_info(first)["blas_threads"] == usable_cores()
    second = mv.create_cpu_device()
    share = max(1, usable_cores() // 2)
    assert [mv.device_info(d)["blas_threads"] for d in (first, second)] == [share, share]
    fixed = mv.create_cpu_device(threads=3)
    assert mv.device_info(fixed)["blas_threads"] == 3
    with pytest.raises(ValueError):
        mv.create_cpu_device(threads=0)


def test_minerva_cpu_threads_fixes_the_count(monkeypatch):
    monkeypatch.setenv("MINERVA_CPU_THREADS", "1")
    assert all(mv.device_info(mv.create_cpu_device())["blas_threads"] == 1 for _ in range(2))
