"""``CupyLayer``, the real CUDA layer, against a model of what it uses of CuPy 14.2, in CI
without a GPU; and the test double (``fake_cuda.py``) held to the same behaviour.

A mock answers whatever it is asked; the model instead behaves as CuPy 14.2's source does:

- ``runtime.eventQuery``/``streamQuery`` return the CUDA status unchecked (``Event.done``
  is only ``eventQuery(...) == 0``); ``runtime.check_status`` raises ``CUDARuntimeError``
  for any status but success; on a lost context every call returns the context's error;
- a thread's current device is 0 and its current stream the null stream (``device_id``
  -1) until set; ``Device.__enter__`` reads the device (``getDevice``) and sets it when it
  differs, ``__exit__`` sets the previous one back (``setDevice``); ``Stream.__enter__``
  refuses a stream of another device than the current one and pushes it on the thread's
  stack for that device; ``__exit__`` pops it and makes the previous one current, which
  for the null stream reads the current device (``getDevice``) — so on a lost context
  leaving either raises;
- ``Memory`` is freed (``cudaFree``) when the object dies; ``MemoryPointer``,
  ``UnownedMemory`` (through its owner) and ``ndarray`` keep what they are over alive.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import types

import numpy as np
import pytest

from tests.support.fake_cuda import FakeCublasError, FakeCuda, FakeCudaError
from minerva.device import gpu
from minerva.device.gpu import cupy_layer
from minerva.device.gpu.memory import DeviceAllocator

SUCCESS, NOT_READY, ILLEGAL_ADDRESS = 0, 600, 700


class CUDARuntimeError(RuntimeError):
    def __init__(self, status):
        super().__init__(f"CUDA error {status}")
        self.status = status


class CupyModel:
    """``cupy`` as far as CupyLayer uses it (see the module docstring); ``poison`` loses the
    context, ``complete`` finishes the work before an event."""

    def __init__(self, n_devices=2):
        self.n_devices = n_devices
        self.sticky = None
        self.done: dict[int, bool] = {}
        self.freed: list[int] = []
        self.launched: list = []
        self._ptrs = itertools.count(0x1000, 0x1000)
        self._local = threading.local()
        self.cuda = types.SimpleNamespace(
            runtime=self._runtime(), Device=self._device_class(), Stream=self._stream_class(),
            Event=self._event_class(), using_allocator=self._using_allocator,
            get_current_stream=self._current_stream, Memory=self._memory_class(),
            MemoryPointer=MemoryPointer, UnownedMemory=UnownedMemory)
        self.cuda.Stream.null = self.cuda.Stream(null=True)
        self.ndarray = ModelArray

    # ---- the runtime ----------------------------------------------------------------------

    def _runtime(self):
        def checked(function):
            def call(*args):
                if self.sticky is not None:
                    raise CUDARuntimeError(self.sticky)
                return function(*args)
            return call

        def set_device(ordinal):
            self._state().device = ordinal

        def query(ptr):
            if self.sticky is not None:
                return self.sticky
            return SUCCESS if self.done.get(ptr, True) else NOT_READY

        def check_status(status):
            if status != SUCCESS:
                raise CUDARuntimeError(status)
        return types.SimpleNamespace(
            CUDARuntimeError=CUDARuntimeError, check_status=check_status,
            getDevice=checked(lambda: self._state().device), setDevice=checked(set_device),
            getDeviceCount=lambda: self.n_devices, eventQuery=query,
            streamQuery=lambda ptr: query(None),
            eventRecord=checked(lambda event, stream: self.done.__setitem__(event, False)))

    def _state(self):
        state = self._local
        if not hasattr(state, "device"):
            state.device, state.devices = 0, []
            state.streams = {i: [self.cuda.Stream.null] for i in range(self.n_devices)}
        return state

    def poison(self, status=ILLEGAL_ADDRESS):
        self.sticky = status

    def complete(self, event):
        self.done[event.ptr] = True

    # ---- devices, streams, events -----------------------------------------------------------

    def _device_class(model):
        class Device:
            def __init__(self, ordinal):
                self.id = ordinal

            def __enter__(self):
                current = model.cuda.runtime.getDevice()
                model._state().devices.append(current)
                if current != self.id:
                    model.cuda.runtime.setDevice(self.id)
                return self

            def __exit__(self, *exc):
                model.cuda.runtime.setDevice(model._state().devices.pop())
        return Device

    def _stream_class(model):
        class Stream:
            def __init__(self, null=False, non_blocking=False):
                self.ptr = 0 if null else next(model._ptrs)
                self.device_id = -1 if null else model.cuda.runtime.getDevice()

            def __enter__(self):
                current = model.cuda.runtime.getDevice()
                if self.device_id not in (-1, current):
                    raise RuntimeError(f"The device that the stream is created on "
                                       f"({self.device_id}) does not match with the "
                                       f"current device ({current})")
                model._state().streams[current].append(self)
                model._state().pushed = getattr(model._state(), "pushed", []) + [current]
                return self

            def __exit__(self, *exc):
                state = model._state()
                ordinal = state.pushed.pop()
                state.streams[ordinal].pop()
                if state.streams[ordinal][-1].device_id == -1:
                    model.cuda.runtime.getDevice()
        return Stream

    def _current_stream(self):
        return self._state().streams[self.cuda.runtime.getDevice()][-1]

    def _event_class(model):
        class Event:
            def __init__(self, block=False, disable_timing=False):
                self.ptr = next(model._ptrs)

            @property
            def done(self):
                return model.cuda.runtime.eventQuery(self.ptr) == SUCCESS

            def record(self, stream=None):
                model.cuda.runtime.eventRecord(self.ptr, stream.ptr)
        return Event

    @contextlib.contextmanager
    def _using_allocator(self, allocator):
        previous = getattr(self._local, "allocator", None)
        self._local.allocator = allocator
        try:
            yield
        finally:
            self._local.allocator = previous

    # ---- memory ----------------------------------------------------------------------------

    def _memory_class(model):
        class Memory:
            def __init__(self, size):
                self.ptr, self.size = next(model._ptrs), size
                self.device_id = model.cuda.runtime.getDevice()

            def __del__(self):
                model.freed.append(self.ptr)
        return Memory


class MemoryPointer:
    def __init__(self, memory, offset):
        self.mem, self.ptr = memory, memory.ptr + offset


class UnownedMemory:
    def __init__(self, ptr, size, owner, device_id=-1):
        self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id


class ModelArray:
    def __init__(self, shape, dtype, memptr=None):
        self.shape, self.dtype, self.data = shape, dtype, memptr


# ---- the two layers, side by side ------------------------------------------------------------

class Side:
    """One layer under test, with the means to drive it."""

    def __init__(self, name):
        self.name = name
        if name == "cupy":
            self.model = CupyModel()
            self.layer = cupy_layer.CupyLayer(self.model)
            self.error = CUDARuntimeError
        else:
            self.layer = FakeCuda(n_devices=2)
            self.error = FakeCudaError

    def poison(self):
        if self.name == "cupy":
            self.model.poison()
        else:
            self.layer.poison(0)

    def complete(self, event, stream):
        if self.name == "cupy":
            self.model.complete(event)
        else:
            self.layer.complete(stream)

    def run(self, stream):
        """Run what is queued on ``stream`` (CuPy's kernels are the GPU's business)."""
        if self.name == "fake":
            done = self.layer.new_event(stream.device_id)
            self.layer.record(done, stream)
            self.layer.synchronize(done)

    def current_stream(self):
        if self.name == "cupy":
            return self.model.cuda.get_current_stream()
        return self.layer.current_stream()


@pytest.fixture(params=["cupy", "fake"])
def side(request):
    side = Side(request.param)
    yield side
    if side.name == "fake":
        side.layer.close()


def test_query_says_done_or_not_ready_and_raises_the_error_of_a_lost_context(side):
    layer = side.layer
    stream, event = layer.new_stream(0), layer.new_event(0)
    layer.record(event, stream)
    assert layer.query(event) is False
    side.complete(event, stream)
    assert layer.query(event) is True
    side.poison()
    with pytest.raises(side.error) as info:
        layer.query(event)  # not "not done" for ever: the context's error
    assert info.value.status == ILLEGAL_ADDRESS


def test_launch_runs_the_kernel_on_the_stream_it_is_given(side):
    layer = side.layer
    bound, other = layer.new_stream(0), layer.new_stream(0)
    seen = []
    with layer.bind(0, bound, allocator=None):
        layer.launch(other, lambda: seen.append(side.current_stream()))
        current_after = side.current_stream()
        side.run(other)  # the double runs a kernel when its stream does
    assert seen == [other] and current_after is bound


def test_launch_refuses_a_stream_of_another_gpu_than_the_current_one(side):
    layer = side.layer
    stream1 = layer.new_stream(1)
    with pytest.raises(RuntimeError, match=r"created on \(1\) does not match"):
        layer.launch(stream1, lambda: None)  # the thread is on GPU 0


def test_leaving_a_binding_on_a_lost_context_raises_its_error(side):
    layer = side.layer
    stream = layer.new_stream(0)
    with pytest.raises(side.error) as info:
        with layer.bind(0, stream, allocator=None):
            side.poison()
    assert info.value.status == ILLEGAL_ADDRESS


def test_a_cublas_error_is_sticky_only_on_a_lost_context(side):
    layer = side.layer
    cublas = FakeCublasError(13)  # CUBLAS_STATUS_EXECUTION_FAILED, as CuPy's CUBLASError
    assert layer.sticky_error(cublas, 0) is None and layer.sticky_error(ValueError(), 0) is None
    side.poison()
    lost = layer.sticky_error(cublas, 0)
    assert isinstance(lost, side.error) and lost.status == ILLEGAL_ADDRESS
    itself = side.error(ILLEGAL_ADDRESS) if side.name == "cupy" else lost
    assert layer.sticky_error(itself, 0) is itself


def test_a_slab_is_counted_freed_only_once_its_memory_is_gone():
    model = CupyModel()
    allocator = DeviceAllocator(cupy_layer.CupyLayer(model), 0)
    chunk = allocator.malloc(1000)
    view = allocator.view(chunk, 0, 1000, (1000,), np.uint8)
    allocator.free(chunk)
    del chunk
    assert allocator.trim() > 0 and allocator.stats()["n_slabs"] == 0
    assert allocator.n_slabs_freed == 0 and model.freed == []  # an array over it is alive
    del view
    assert allocator.n_slabs_freed == 1 and len(model.freed) == 1
    assert allocator.stats()["n_slabs_freed"] == 1
