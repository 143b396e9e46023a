"""``mv.jit(fn)``: record a function once per signature, then replay its plan.

A call's **signature** is the shape, dtype, device and layout of each NArray argument (a
view's strides, not its offset) and how the arguments alias one another, plus the values
of the other arguments (hashable): see ``minerva.jit.signature``. The first call of a
signature runs ``fn`` eagerly while the op-building seam captures it (reading values on
the host is refused meanwhile: a replay cannot repeat host control flow), and plans it
(``plan.segments_of``). Later calls replay the plan: one op per segment, asynchronous like
any op, reading the current values of arguments and captured arrays and writing into them.
The plans live in a bounded cache (``minerva.jit.cache``), least recently used evicted.
"""
from __future__ import annotations

import functools
import gc
import weakref

import numpy as np

from minerva import seeding
from minerva.common import fp_errors
from minerva.builder import SEAM, build
from minerva.common.callsite import format_callsite, user_callsite
from minerva.common.errors import JitError
from minerva.common.logging import get_logger
from minerva.current import get_system
from minerva.jit.cache import MAX_PLANS, PlanCache
from minerva.jit.capture import ARG, TMP, Capture
from minerva.jit.fusion import LEVELS, fuse
from minerva.jit.now import NOT_NOW, NowReplay, arena_of
from minerva.jit.plan import segments_of
from minerva.jit.segment import SegmentCall, SegmentRun
from minerva.jit.signature import moved, offset_of, offsets, relative, signature
from minerva.narray import HOST_READS, NArray
from minerva.ops import registry
from minerva.ops.jit_op import JIT_REPLAY

log = get_logger("minerva.jit")
_COPY, _ASSIGN = registry.get("copy"), registry.get("assign")
JIT_REPLAY.tiny_inline = False  # several outputs: small replays take run_nested_now


class Plan:
    """A recorded signature: its values, segments (runnable) and what ``fn`` returned.

    ``movable`` maps the vid of a view argument's storage to the argument whose offset
    places its views at a replay; ``pinned`` holds the offsets the plan is kept for when
    it used such a storage through another handle (None: any offsets)."""

    def __init__(self, capture: Capture, result, results: list, args, level: str = "all"):
        self.values = capture.values
        self.seeds = capture.seeds
        self.n_ops = len(capture.steps)
        self.movable = {vid: capture.values[vid].index for vid in capture.movable}
        self.pinned = offsets(args) if capture.untracked else None
        results = _made_relative(capture, results)
        self._steps = capture.steps
        self._returned = [r for r, _ in results]
        self.main = Variant(self, level)
        self._exact = self.main if level == "none" else None
        self.result = _rebuild(result, iter(lambda: RESULT, None))  # its shape, no arrays
        self.results = results
        for value in self.values:  # tmps are remade by each replay: drop the recorded ones
            if value.kind != "capture":
                value.storage = None
        self.arg_vids = [(v.vid, v.index) for v in self.values if v.kind == ARG]
        self.held = {v.vid: v.storage for v in self.values  # the captures, by identity
                     if v.kind not in (ARG, TMP) and v.storage is not None}
        self.single = results[0] if isinstance(result, NArray) else None

    @property
    def segments(self) -> list:
        """The SegmentRuns of the plan's fused variant."""
        return self.main.segments

    def variant(self, errstate=None) -> "Variant":
        """The variant a call replays: the unfused one while the NumPy error state in force
        (``errstate``, the caller's decoded, when given) raises on some floating-point
        error (fused kernels report none), else the main."""
        if self.main.level == "none" or not (
                _raises_now() if errstate is None else "raise" in errstate.modes.values()):
            return self.main
        if self._exact is None:
            self._exact = Variant(self, "none")
        return self._exact

    @property
    def plan_bytes(self) -> int:
        """Bytes of the arenas (the tmps' persistent buffers)."""
        return sum(s.plan.arena_bytes for v in self._variants() for s in v.segments)

    @property
    def kept_bytes(self) -> int:
        """Bytes of the results kept for reuse that no handle holds (``minerva.jit.now``)."""
        return sum(v.now.kept_bytes() for v in self._variants() if v.now)

    def _variants(self) -> list:
        return list({id(v): v for v in (self.main, self._exact) if v is not None}.values())


class Variant:
    """A plan's steps fused at ``level`` (``minerva.jit.fusion``), cut into runnable
    segments, with their arenas (made at the first replay)."""

    def __init__(self, plan: "Plan", level: str):
        self.level = level
        returned = {vid for vid, _ in plan._returned}
        self.fused = fuse(plan._steps, plan.values, returned, level, _backend)
        plans = segments_of(self.fused.steps, plan.values, plan._returned)
        specs = [value.spec for value in plan.values]
        self.segments = [SegmentRun(p, specs) for p in plans]
        self.arenas = [None] * len(self.segments)
        self.now = None   # its NowReplay, made at its first replay (False: none fits)

    def now_replay(self, plan: "Plan"):
        """The NowReplay of this variant of ``plan``, or False where none fits."""
        now = self.now
        if now is None:
            now = self.now = NowReplay(plan, self, _rebuild) if NowReplay.fits(plan, self) \
                else False
        return now


def _backend(device_id):
    """The fused-kernel compiler of device ``device_id`` (None: it fuses nothing)."""
    return get_system().devices.get(device_id).fusion_backend()


_RAISING: dict = {}


def _raises_now() -> bool:
    """Whether the calling thread's NumPy error state raises on some error."""
    captured = fp_errors.capture()
    known = _RAISING.get(captured)
    if known is None:
        if len(_RAISING) > 64:
            _RAISING.clear()
        known = _RAISING[captured] = "raise" in np.geterr().values()
    return known


def _made_relative(capture: Capture, results: list) -> list:
    """The views on the view arguments' storages, in the steps and in ``results``, made
    relative to the arguments' offsets: a replay moves them to its call's offsets."""
    base = capture.movable
    for step in capture.steps:
        step.ins, step.outs = relative(step.ins, base), relative(step.outs, base)
    return [(relative([ref], base)[0], spec) for ref, spec in results]


class JitFunction:
    """A function made jitted: ``__call__`` records or replays; ``stats()`` counts.
    ``max_plans``: how many plans (signatures) it keeps, least recently used evicted."""

    def __init__(self, fn, check: bool = False, max_plans: int = MAX_PLANS,
                 fuse: bool | str = True):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.check = check
        self.fuse = _level(fuse, check)
        self._plans = PlanCache(max_plans, getattr(fn, "__qualname__", repr(fn)))
        self.max_plans = self._plans.max_plans
        self._engine = None  # the runtime the plans were recorded in
        self._counts = {"n_records": 0, "n_replays": 0, "n_checks": 0, "n_eager": 0}
        self._last = (0, 0, None)  # n_ops, n_segments, Fused of the last recorded plan
        self._hot = None  # (key, plan) of the last call, when its plan is kept for any offsets

    def __call__(self, *args):
        if SEAM.hooks:  # autograd records around the call, or an outer jit captures it:
            self._counts["n_eager"] += 1  # they must see the ops, which a replay hides
            return self.fn(*args)
        system = get_system()
        engine = system.engine
        if engine is not self._engine:  # a new runtime: the plans' arrays are gone
            self._plans.clear()
            self._engine, self._last, self._hot = engine, (0, 0, None), None
        key = signature(args, system.current_device())
        hot = self._hot   # the most recently used plan: no look-up, already last in order
        if hot is not None and hot[0] == key:
            plan = hot[1]
        else:
            key, plan = self._lookup(key, args)
            if plan is None:
                return self._record(key, args)
        self._counts["n_replays"] += 1
        if self.check:
            return self._checked(plan, args)
        now = plan.main.now
        if now and not now.seeded:   # one segment on the caller, in one step (jit/now.py)
            errstate = fp_errors.caller_state()
            if plan.variant(errstate) is plan.main:
                result = now(engine, args, None, None, errstate)
                if result is not NOT_NOW:
                    return result
                return replay(plan, args, engine=engine, tried=True)
        return replay(plan, args, engine=engine)

    def _lookup(self, key, args):
        """``(key, plan)``: the key of the plan for ``args`` of signature ``key`` and that
        plan (None: none yet); the plan becomes the hot one where it is kept for any
        offsets."""
        plan = self._plans.get(key)
        if plan is not None and plan.pinned is not None:
            if plan.pinned != offsets(args):
                key = (key, offsets(args))  # a plan kept for other offsets: one for these
                plan = self._plans.get(key)
            self._hot = None
        elif plan is not None:
            self._hot = (key, plan)
        return key, plan

    def stats(self) -> dict:
        """``n_records``, ``n_replays``, ``n_checks``, ``n_eager`` (calls run eagerly
        because autograd recorded around them or an outer jit captured them),
        ``n_signatures`` (plans held), ``n_evictions`` (plans evicted to keep at most
        ``max_plans``), ``n_ops`` (of the last recorded plan), ``n_segments``, ``n_fused``
        (its ops inside fused kernels), ``n_fused_kernels`` (its fused kernels),
        ``plan_bytes`` (of the plans held), ``kept_bytes`` (of their results kept for
        reuse that no handle holds)."""
        plans = self._plans.values()
        n_ops, n_segments, fused = self._last
        return dict(self._counts, n_signatures=len(plans),
                    n_evictions=self._plans.n_evictions, n_ops=n_ops,
                    n_segments=n_segments, n_fused=fused.n_fused if fused else 0,
                    n_fused_kernels=len(fused.kernels) if fused else 0,
                    plan_bytes=sum(p.plan_bytes for p in plans),
                    kept_bytes=sum(p.kept_bytes for p in plans))

    def fused_kernels(self) -> list:
        """The fused kernels of the last recorded plan: for each, the ops it holds."""
        fused = self._last[2]
        return [] if fused is None else list(fused.kernels)

    def _record(self, key, args):
        arrays = [x if isinstance(x, NArray) else None for x in args]
        capture = Capture(arrays)
        with HOST_READS.refused(_host_read_error), capture.listening():
            result = self.fn(*args)
        results = [(capture.ref(x), x._spec) for x in _arrays_in(result)]
        watched = _tmp_refs(capture, {vid for (vid, _), _ in results})
        plan = Plan(capture, result, results, args, self.fuse)
        _check_nothing_kept(capture, watched)
        self._hot = None
        self._plans.put(key, plan)
        self._last = (plan.n_ops, len(plan.segments), plan.main.fused)
        self._counts["n_records"] += 1
        return result

    def _checked(self, plan, args):
        """Run ``fn`` eagerly and replay the plan from the same state with the same seeds;
        JitError unless results and written arrays are bitwise equal."""
        self._counts["n_checks"] += 1
        written = _written(plan, args)
        before = [build(_COPY, [NArray(s, None, s.current.spec)]) for s in written]
        capture = Capture([x if isinstance(x, NArray) else None for x in args])
        with capture.listening():
            eager = self.fn(*args)
        after = [build(_COPY, [NArray(s, None, s.current.spec)]) for s in written]
        for storage, value in zip(written, before):
            build(_ASSIGN, [value], {"dtype": value.dtype},
                  out=NArray(storage, None, storage.current.spec))
        seeds = dict(zip(plan.seeds, capture.seeds))
        replayed = replay(plan, args, user_callsite(), seeds)
        _compare(_arrays_in(eager), _arrays_in(replayed), "result")
        _compare(after, [NArray(s, None, s.current.spec) for s in written], "written array")
        return replayed


def replay(plan: Plan, args, created_at=None, seeds=None, engine=None, tried=False):
    """Run or submit one replay of ``plan`` with ``args``; the function's result, rebuilt.
    ``created_at``: the user's line (None: found only where needed); ``seeds`` maps the
    recorded random seeds to this replay's (fresh ones by default); ``engine``: the
    runtime's (None: the current one); ``tried``: the main variant's NowReplay could not
    run now (its segment is submitted)."""
    if engine is None:
        engine = get_system().engine
    if seeds is None:
        seeds = {seed: seeding.next_seed() for seed in plan.seeds} if plan.seeds else None
    variant = plan.variant()
    now = variant.now_replay(plan)
    if now and not tried:
        result = now(engine, args, created_at, seeds)
        if result is not NOT_NOW:
            return result
    storages = _inputs(plan, args)
    places = {vid: offset_of(args[index]) for vid, index in plan.movable.items()} \
        if plan.movable else None
    for k, run in enumerate(variant.segments):
        segment = SegmentCall(run, places) if places else run
        _replay_segment(engine, variant, k, segment, storages, seeds, created_at,
                        not now or k > 0)
    if plan.single is not None:
        (vid, view), spec = plan.single
        return NArray(storages[vid], moved(view, places[vid]) if places and vid in places
                      else view, spec)
    made = iter(NArray(storages[vid], moved(view, places[vid]) if places and vid in places
                       else view, spec) for (vid, view), spec in plan.results)
    return _rebuild(plan.result, made)


def _inputs(plan, args) -> dict:
    """vid -> the storage a replay with ``args`` reads or writes: the captures, held by
    identity, and the arguments'."""
    storages = dict(plan.held)
    for vid, index in plan.arg_vids:
        storages[vid] = args[index]._storage
    return storages


def _replay_segment(engine, variant, k, segment, storages, seeds, created_at,
                    now=True) -> None:
    """Run segment ``k`` at once on the calling thread where it may (``now``, and
    ``SegmentRun.runs_now``, ``Engine.run_nested_now``), else submit it as one op."""
    run = variant.segments[k]
    p = run.plan
    reads = [storages[vid] for vid in p.reads]
    writes = [storages[vid] for vid in p.writes]
    arena = arena_of(variant.arenas, k, p) if p.arena_bytes else None
    attrs = {"segment": segment, "seeds": seeds}
    outs = None
    device = engine.devices.table[p.device]
    if now and run.runs_now(device):
        outs = engine.run_nested_now(JIT_REPLAY, dict(attrs, device=device), reads,
                                     run.fresh_specs, writes, p.device, arena, created_at)
    if outs is None:
        if arena is not None:
            writes.append(arena)
        outs = engine.submit(JIT_REPLAY, attrs, reads, run.out_specs, p.device, created_at,
                             None, [None] * len(p.exports) + writes)
    for vid, storage in zip(p.exports, outs):
        storages[vid] = storage


def _tmp_refs(capture, returned: set) -> dict:
    """Weak references to the storages of tmps the function did not return."""
    return {v.vid: weakref.ref(v.storage) for v in capture.values
            if v.kind == TMP and v.vid not in returned and v.storage is not None}


def _check_nothing_kept(capture, watched: dict) -> None:
    """Warn when Python still holds an array the recording made and did not return
    (optimizer state made on the first step, a cache): a replay makes a new one each call
    and never updates the one kept — often a silent divergence (``check=True`` proves it),
    sometimes harmless (an array kept for inspection)."""
    kept = [vid for vid, ref in watched.items() if ref() is not None]
    if kept:
        gc.collect()
        kept = [vid for vid in kept if watched[vid]() is not None]
    if not kept:
        return
    where = next((step.created_at for step in capture.steps
                  if not step.write and any(vid == kept[0] for vid, _ in step.outs)), None)
    log.warning("jit_kept_array", made_at=format_callsite(where), n_kept=len(kept),
                hint="the function keeps an array it made while being recorded in Python "
                     "state: replays make a new one each call and never update the kept "
                     "one; make it before the first call (optimizer state), or return it")


def _written(plan, args) -> list:
    """The storages of arguments and captures some segment writes (in place)."""
    storages = _inputs(plan, args)
    vids = {vid for run in plan.segments for vid in run.plan.writes}
    return [storages[vid] for vid in sorted(vids) if vid in storages]


def _compare(expected: list, got: list, what: str) -> None:
    for i, (want, have) in enumerate(zip(expected, got)):
        a, b = want.to_numpy(), have.to_numpy()
        if a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            raise JitError(f"jit check: {what} {i} of the replay differs from the eager run "
                           f"(max difference {_difference(a, b)}); the function does "
                           "something a replay cannot repeat (host control flow, Python "
                           "state, an array rebound instead of updated in place)")


def _difference(a, b):
    try:
        return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    except (ValueError, TypeError):
        return "shapes differ"


def _level(fuse, check: bool) -> str:
    """The fusion level of ``mv.jit(fn, fuse=...)``: True is "all" ("exact" under
    ``check=True``, whose comparison is bitwise), False is "none"."""
    if fuse is True:
        return "exact" if check else "all"
    if fuse is False:
        return "none"
    if fuse in LEVELS:
        return fuse
    raise ValueError(f"jit: fuse must be True, False or one of {LEVELS}, not {fuse!r}")


def _host_read_error(what: str) -> JitError:
    return JitError(f"{what} inside a jitted function while it is being recorded, at "
                    f"{format_callsite(user_callsite())}: a replay cannot repeat host "
                    "control flow; read the value after the call, or pass it in as an "
                    "argument")


def _arrays_in(result) -> list:
    if isinstance(result, NArray):
        return [result]
    if isinstance(result, (tuple, list)):
        return [x for item in result for x in _arrays_in(item)]
    if isinstance(result, dict):
        return [x for item in result.values() for x in _arrays_in(item)]
    return []


RESULT = object()
"""Where a recorded result held an array (a plan keeps its shape, not the arrays)."""


def _rebuild(result, made):
    if isinstance(result, NArray) or result is RESULT:
        return next(made)
    if isinstance(result, (tuple, list)):
        items = [_rebuild(item, made) for item in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    if isinstance(result, dict):
        return {k: _rebuild(v, made) for k, v in result.items()}
    return result
