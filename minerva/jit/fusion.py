"""Element-wise fusion of a recorded step (``mv.jit(fn, fuse=...)``).

Consecutive element-wise steps of one device (a *run*) become **fused kernels**: each kernel
computes one value, the *root*, from the run's inputs through an expression tree
(``minerva.ops.fusable``) of the steps it absorbed, whose results are never materialised. A
step's result is a root (materialised) when something outside the run reads it (a later
step, another segment, the function's result), when steps of two kernels read it, when it
is read through a view, when it is an in-place write (``x += ...``), or when inlining it
would read an array after another root of the run overwrote it. A kernel holding one op
stays the plain step.

Levels: ``"none"`` (no fusion), ``"exact"`` (kernels give NumPy's bits: a transcendental
function fuses only where the backend computes it with NumPy's own kernel,
``backend.exact(out_spec)``), ``"all"`` (also where it does not: numexpr's and CUDA's
functions, within a documented bound).

A device's backend (``minerva.device.cpu.fused``: numexpr for tiny outputs, cache-blocked
NumPy kernels for large ones; ``minerva.device.gpu.fused``: a CUDA ``ElementwiseKernel``)
compiles a ``KernelSpec``, or refuses it (NotImplementedError): the steps then stay
unfused.
"""
from __future__ import annotations


from minerva.common.logging import get_logger
from minerva.jit.capture import Step
from minerva.ops import fusable as expr
from minerva.ops.registry import OpDef

log = get_logger("minerva.jit")
LEVELS = ("none", "exact", "all")
MAX_SIZE = 1024
"""A node whose tree written out (a shared subtree counted at each use) grows beyond this
many operations is materialised: the compilers expand trees before sharing them again."""
MAX_DEPTH = 256
"""A node whose tree is deeper than this is materialised (the compilers walk trees
recursively: numexpr's compiler stops near 350 levels at the top of a stack of Python's
default depth of 1000, and a kernel it cannot compile stays unfused; 256 levels leave
about 280 frames to the caller and hold a 200-op chain in one kernel)."""
MAX_LEAVES = 24
"""A node whose tree reads more inputs than this is materialised (NumPy's iterators take
at most 64 operands)."""


class Fused:
    """What fusion made of a plan's steps: ``steps`` (fused kernels in place of the runs they
    absorbed), ``n_fused`` (ops inside fused kernels) and ``kernels`` (each kernel's ops)."""

    def __init__(self, steps: list, kernels: list):
        self.steps = steps
        self.kernels = kernels
        self.n_fused = sum(len(ops) for ops in kernels)


def fuse(steps: list, values: list, returned: set, level: str, backends) -> Fused:
    """Fuse the runs of ``steps`` (``returned``: vids the function returns; ``backends``:
    device id -> a kernel compiler, or None)."""
    if level == "none":
        return Fused(list(steps), [])
    out, kernels, i = [], [], 0
    while i < len(steps):
        backend = backends(steps[i].device)
        j = i
        while j < len(steps) and backend is not None and steps[j].device == steps[i].device \
                and _builder(steps[j], values, level, backend) is not None:
            j += 1
        if j - i >= 2:
            later = _read_after(steps, j, returned)
            made = _fuse_run(steps[i:j], values, later, level, backend)
            out.extend(made)
            kernels.extend(s.op_def.fused_ops for s in made if isinstance(s.op_def, FusedOpDef))
            i = j
        else:
            out.append(steps[i])
            i += 1
    return Fused(out, kernels)


def _read_after(steps, j, returned) -> set:
    read = set(returned)
    for step in steps[j:]:
        read.update(vid for vid, _ in step.ins + step.outs)
    return read


# ---- which steps fuse, and as what tree -------------------------------------------------

def dtype_of(values, pair):
    """The dtype a ``(vid, view)`` is read as."""
    vid, view = pair
    read_as = None if view is None else getattr(view[1], "dtype", None)  # x.view(dtype)
    return values[vid].spec.dtype if read_as is None else read_as


def _builder(step, values, level, backend=None):
    """A function of the step's input trees giving its tree, or None: the step stays (at
    level "exact", a transcendental function the backend would not compute bitwise for
    this output stays too: ``backend.exact(out_spec)``)."""
    if len(step.outs) != 1 or step.outs[0][1] is not None or "seed" in step.attrs:
        return None
    if step.write and any(vid == step.outs[0][0] and view is not None
                          for vid, view in step.ins):
        return None
    name = step.op_def.name
    out_spec = values[step.outs[0][0]].spec
    build = expr.tree_builder(name, step.attrs, [dtype_of(values, p) for p in step.ins],
                              out_spec.dtype)
    if build is not None and level == "exact" and backend is not None \
            and name.removesuffix("_scalar") in expr.INEXACT_OPS \
            and not backend.exact(out_spec):
        return None
    return build


# ---- a run into kernels -----------------------------------------------------------------

def _fuse_run(run: list, values: list, later: set, level: str, backend) -> list:
    roots = _initial_roots(run, later)
    while True:
        before = len(roots)
        trees, kernel_of, leaves = _trees(run, values, roots, level)
        roots |= _hazards(run, roots, kernel_of, leaves)
        if len(roots) == before:
            break
    held = _held(run, roots, kernel_of)
    return [made for i in sorted(roots)
            for made in _kernel_steps(run, i, trees[i], held[i], values, backend, level)]


def _held(run, roots, kernel_of) -> dict:
    """Root index -> the indices of the steps its kernel holds."""
    held = {i: [] for i in roots}
    for i in range(len(run)):
        held[kernel_of[i]].append(i)
    return held


def _initial_roots(run, later) -> set:
    """Writes, values read after the run, read through a view, or never read."""
    uses: dict = {}
    for step in run:
        for vid, view in step.ins:
            uses[vid] = uses.get(vid, 0) + (1 if view is None else len(run) + 1)
    return {i for i, step in enumerate(run)
            if step.write or step.outs[0][0] in later
            or not 1 <= uses.get(step.outs[0][0], 0) <= len(run)}


def _trees(run, values, roots: set, level):
    """Each step's tree over its kernel's leaves; the kernel (root index) each step is in;
    per step, the leaves ``(vid, view, reading step)`` its tree reads. A step is made a
    root (added to ``roots``) when its tree would grow beyond ``MAX_SIZE`` operations
    written out, ``MAX_DEPTH`` levels or ``MAX_LEAVES`` inputs, and when steps of several
    kernels read it. A value read twice inside one kernel is computed once there (the
    backends share common subtrees)."""
    made: dict = {}      # vid -> the non-root step of the run that made it
    trees, leaves_of, distinct_of, consumers = {}, {}, {}, {}
    for i, step in enumerate(run):
        leaves, args, distinct = [], [], set()
        for vid, view in step.ins:
            j = made.get(vid) if view is None else None
            if j is not None:
                consumers.setdefault(j, set()).add(i)
                leaves.extend(leaves_of[j])
                args.append(trees[j])
                distinct |= distinct_of[j]
            else:
                leaves.append((vid, view, i))
                args.append(("leaf", vid, view))
                distinct.add((vid, view))
        tree = _builder(step, values, level)(_as_nodes(args, values))
        trees[i], leaves_of[i], distinct_of[i] = tree, leaves, distinct
        if i not in roots and (expr.size(tree) > MAX_SIZE or expr.depth(tree) > MAX_DEPTH
                               or len(distinct) > MAX_LEAVES):
            roots.add(i)
        if i in roots:
            made.pop(step.outs[0][0], None)
        else:
            made[step.outs[0][0]] = i
    kernel_of: dict = {}
    for i in reversed(range(len(run))):
        kernels = {kernel_of[c] for c in consumers.get(i, ())}
        if i not in roots and len(kernels) != 1:
            roots.add(i)
        kernel_of[i] = i if i in roots else kernels.pop()
    return trees, kernel_of, leaves_of


def _as_nodes(args, values):
    """Leaf markers as provisional leaves (numbered per kernel in ``_kernel_step``)."""
    return [expr.Leaf(("pending", a[1], a[2]), dtype_of(values, (a[1], a[2])))
            if isinstance(a, tuple) else a for a in args]


def _hazards(run, roots, kernel_of, leaves) -> set:
    """Steps whose inlined reads would see a value a root overwrites before their kernel
    runs (or, in their own kernel, through another view)."""
    writes = {i: run[i].outs[0][0] for i in roots if run[i].write}
    extra = set()
    for i in range(len(run)):
        if i in roots:
            continue
        k = kernel_of[i]
        for vid, view, reader in leaves[i]:
            if reader != i:
                continue
            if any(i < r < k and w == vid for r, w in writes.items()) or (
                    writes.get(k) == vid and view is not None):
                extra.add(i)
    return extra


def _distinct_leaves(tree) -> list:
    found: dict = {}

    def walk(node):
        if isinstance(node, expr.Leaf):
            found.setdefault(node.position, node)
        elif isinstance(node, expr.Node):
            for a in node.args:
                walk(a)
    walk(tree)
    return list(found.values())


def _kernel_steps(run, i, tree, held, values, backend, level) -> list:
    """Root ``i``'s kernel as steps: the steps it holds when there is one, or when the
    backend cannot compile it (NotImplementedError), else one fused kernel."""
    if len(held) < 2:
        return [run[i]]
    try:
        return [_kernel_step(run, i, tree, held, values, backend, level)]
    except NotImplementedError as exc:
        log.debug("jit_not_fused", ops=[run[j].op_def.name for j in held], why=str(exc))
        return [run[j] for j in sorted(held)]


def _kernel_step(run, i, tree, held, values, backend, level):
    """Root ``i``'s kernel as one fused Step reading its distinct leaves."""
    step = run[i]
    inputs = _distinct_leaves(tree)
    numbered = {leaf.position: k for k, leaf in enumerate(inputs)}
    ins = [(pos[1], pos[2]) for pos in numbered]
    held = sorted(held)
    spec = KernelSpec(_renumbered(tree, numbered, {}), [leaf.dtype for leaf in inputs],
                      values[step.outs[0][0]].spec, _program(run, held, numbered, values),
                      level)
    op_def = fused_op(spec, tuple(run[j].op_def.name for j in held), backend)
    return Step(op_def, {}, ins, list(step.outs), step.write, step.device, step.created_at)


def _program(run, held: list, numbered: dict, values) -> list:
    """The kernel's steps in order: ``(op_def, attrs, refs, spec)``, each ref
    ``("leaf", k)`` (input ``k``) or ``("tmp", j)`` (the result of program step ``j``)."""
    made, program = {}, []
    for j in held:
        step = run[j]
        refs = tuple(("tmp", made[vid]) if view is None and vid in made
                     else ("leaf", numbered[("pending", vid, view)])
                     for vid, view in step.ins)
        program.append((step.op_def, step.attrs, refs, values[step.outs[0][0]].spec))
        made[step.outs[0][0]] = len(program) - 1
    return program


class KernelSpec:
    """What a backend compiles: the ``tree`` over inputs of ``in_dtypes``, the output's
    ``out_spec``, the ``program`` of steps it replaces (``_program``), the fusion
    ``level`` ("exact": a backend must refuse a tree it would not compute bitwise)."""

    __slots__ = ("tree", "in_dtypes", "out_spec", "program", "level")

    def __init__(self, tree, in_dtypes, out_spec, program, level):
        self.tree, self.in_dtypes, self.out_spec = tree, in_dtypes, out_spec
        self.program, self.level = program, level

    @property
    def exact(self) -> bool:
        """Whether the tree uses only primitives every backend computes as NumPy does."""
        return not expr.functions(self.tree) & expr.INEXACT


def _renumbered(tree, numbered, memo):
    key = id(tree)
    if key in memo:
        return memo[key]
    if isinstance(tree, expr.Leaf):
        made = expr.Leaf(numbered[tree.position], tree.dtype)
    elif isinstance(tree, expr.Node):
        made = expr.Node(tree.fn, tuple(_renumbered(a, numbered, memo) for a in tree.args),
                         tree.dtype)
    else:
        made = tree
    memo[key] = made
    return made


def _never_inferred(*_specs, **_attrs):
    raise RuntimeError("internal: a fused kernel's output is planned, not inferred")


def fused_op(spec: KernelSpec, ops: tuple, backend) -> OpDef:
    """An OpDef (not registered) running the kernel ``backend`` makes of ``spec`` (it
    raises NotImplementedError when it makes none); its name lists the ops it holds
    (traces show it), ``fused_ops`` holds them. A kernel that may be cut into row ranges
    (``kernel.elementwise``) is an element-wise op: a CPU device splits it over its
    threads."""
    kernel = backend(spec)
    op_def = FusedOpDef(f"fused[{'+'.join(ops)}]", _never_inferred, kernel.impl,
                        elementwise=getattr(kernel, "elementwise", False))
    op_def.bind = kernel.bind
    op_def.fused_ops = ops
    op_def.kernel = kernel
    return op_def


class FusedOpDef(OpDef):
    """The OpDef of a fused kernel: ``fused_ops`` (the ops it holds, in order) and
    ``kernel`` (the backend's compiled kernel: ``impl``, ``bind``, ``source``)."""

    __slots__ = ("fused_ops", "kernel")
