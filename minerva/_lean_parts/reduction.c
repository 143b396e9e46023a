/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- reductions: `x.sum()`, `np.mean(x, axis=0)`, `x.max(1, keepdims=True)` -------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the Python function it stands in front of */
    PyObject *op;          /* the reduction's op */
    PyObject *kernel;      /* NumPy's function its kernel calls: kernel(x, axis=, keepdims=,
                              out=) (`ops.reductions.numpy_kernel`) */
    PyObject *name;        /* the op's name (a trace record's) */
} Reduction;

/* The reduction's arguments, `(x[, axis], axis=, keepdims=)`, as the op's attributes:
 * `*axes` (None, or a one-axis tuple, a new reference) and `*keepdims`; 1, or 0 for the
 * Python path (any other argument, or one Python checks: an axis out of range). */
static int
reduction_args(PyObject *const *args, Py_ssize_t n, PyObject *kwnames, PyObject **axes,
               PyObject **keepdims)
{
    PyObject *axis = n == 2 ? args[1] : NULL;
    *keepdims = Py_False;
    Py_ssize_t n_kw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < n_kw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i), *value = args[n + i];
        if (PyUnicode_CompareWithASCIIString(key, "axis") == 0 && axis == NULL)
            axis = value;
        else if (PyUnicode_CompareWithASCIIString(key, "keepdims") == 0 && PyBool_Check(value))
            *keepdims = value;
        else
            return 0;
    }
    if (axis == NULL || axis == Py_None) {
        *axes = Py_NewRef(Py_None);
        return 1;
    }
    if (!PyLong_CheckExact(axis))
        return 0;
    PyObject *shape = SLOT(args[0], ArrayOff[A_SPEC]);
    shape = shape == NULL ? NULL : SLOT(shape, SpecOff[P_SHAPE]);
    long ndim = shape == NULL ? 0 : (long)PyTuple_GET_SIZE(shape), k = PyLong_AsLong(axis);
    if (k == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (k < -ndim || k >= ndim)
        return 0;   /* NumPy's AxisError, raised by the Python path */
    PyObject *index = PyLong_FromLong(k < 0 ? k + ndim : k);
    *axes = index == NULL ? NULL : PyTuple_Pack(1, index);
    Py_XDECREF(index);
    return *axes == NULL ? -1 : 1;
}

/* The output spec of a reduction over `spec` (the shape rule's, cached by (op, spec,
 * axes, keepdims)); a new reference, or NULL without an error set for the Python path. */
static PyObject *
reduction_spec(PyObject *op, PyObject *spec, PyObject *axes, PyObject *keepdims)
{
    long axis = axes == Py_None ? -1 : PyLong_AsLong(PyTuple_GET_ITEM(axes, 0));
    PyObject *key = PyLong_FromLong((axis + 1) * 2 + (keepdims == Py_True));   /* small int */
    if (key == NULL)
        return NULL;
    Py_ssize_t i = (cache_slot(op, spec, key) + 2) % CACHE_SIZE;
    CacheEntry *e = &Cache[i];
    PyObject *out = NULL, *canon = NULL;
    if (!(e->op == op && e->spec == spec && e->other == key && e->reverse == 2)) {
        canon = canonical_spec(spec);   /* a miss: keyed again by the canonical spec */
        spec = canon;
        i = (cache_slot(op, spec, key) + 2) % CACHE_SIZE;
        e = &Cache[i];
    }
    if (e->op == op && e->spec == spec && e->other == key && e->reverse == 2) {
        out = Py_NewRef(e->out);
    } else {
        PyObject *infer = PyObject_GetAttr(op, s_infer);
        PyObject *kwargs = infer == NULL ? NULL :
            Py_BuildValue("{sOsO}", "axis", axes, "keepdims", keepdims);
        PyObject *args = kwargs == NULL ? NULL : PyTuple_Pack(1, spec);
        PyObject *specs = args == NULL ? NULL : PyObject_Call(infer, args, kwargs);
        Py_XDECREF(infer); Py_XDECREF(kwargs); Py_XDECREF(args);
        if (specs != NULL && PyTuple_CheckExact(specs) && PyTuple_GET_SIZE(specs) == 1 &&
                Py_IS_TYPE(PyTuple_GET_ITEM(specs, 0), SpecType) &&
                numeric_spec(PyTuple_GET_ITEM(specs, 0)) > 0) {
            out = canonical_spec(PyTuple_GET_ITEM(specs, 0));
            cache_put(i, op, spec, key, out, 2);
        }
        Py_XDECREF(specs);
        PyErr_Clear();   /* a rule that raises: the Python path raises it at the user's line */
    }
    Py_XDECREF(canon);
    Py_DECREF(key);
    return out;
}

/* `x.<reduction>(...)` on the lean path: a new handle, Py_None for the Python path. */
static PyObject *
reduction_lean(Reduction *self, PyObject *const *args, Py_ssize_t n, PyObject *kwnames)
{
    PyObject *x = args[0], *axes, *keepdims;
    PyObject *spec = SLOT(x, ArrayOff[A_SPEC]), *view = SLOT(x, ArrayOff[A_VIEW]);
    PyObject *storage = SLOT(x, ArrayOff[A_STORAGE]);
    if (spec == NULL || view == NULL || !Py_IS_TYPE(spec, SpecType) || storage == NULL ||
            !Py_IS_TYPE(storage, StorageType))
        Py_RETURN_NONE;
    int parsed = reduction_args(args, n, kwnames, &axes, &keepdims);
    if (parsed <= 0)
        return parsed < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *system, *result = NULL;
    int quiet = quiet_seam(&system);
    LeanOp L = {0};
    L.spec = quiet > 0 ? reduction_spec(self->op, spec, axes, keepdims) : NULL;
    if (L.spec == NULL || !plain_view(view, spec, L.spec) ||
            (L.nbytes = spec_nbytes(L.spec)) < 0) {
        Py_XDECREF(system);
        Py_XDECREF(L.spec);
        Py_DECREF(axes);
        return quiet < 0 ? NULL : Py_NewRef(Py_None);
    }
    L.op = self->op;
    L.name = self->name;
    L.ufunc = self->kernel;
    L.views[0] = view == Py_None ? NULL : view;
    L.specs[0] = spec;
    L.inputs[0] = storage;
    L.n_inputs = 1;
    L.kw[0] = axes;
    L.kw[1] = keepdims;
    L.n_kw = 2;
    L.kwnames = KwReduce;
    int prepared = lean_prepare(&L, system);
    Py_DECREF(system);
    if (prepared > 0) {
        PyObject *operands[1] = {NULL};
        result = lean_run(&L, operands, 1);
    } else {
        result = prepared == 0 ? Py_NewRef(Py_None) : NULL;
    }
    lean_clear(&L);
    Py_DECREF(L.spec);
    Py_DECREF(axes);
    return result;
}

static PyObject *
reduction_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                     PyObject *kwnames)
{
    Reduction *self = (Reduction *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if ((n == 1 || n == 2) && Py_IS_TYPE(args[0], NArrayType)) {
        PyObject *result = reduction_lean(self, args, n, kwnames);
        if (result != Py_None)
            return result;
        Py_DECREF(result);
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
reduction_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *python, *op, *kernel;
    static char *names[] = {"python", "op", "kernel", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO", names, &python, &op, &kernel))
        return NULL;
    Reduction *self = (Reduction *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = reduction_vectorcall;
    self->python = Py_NewRef(python);
    self->op = Py_NewRef(op);
    self->kernel = Py_NewRef(kernel);
    self->name = PyObject_GetAttr(op, s_name);
    if (self->name == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyTypeObject ReductionType = WRAPPER_TYPE(
    "Reduction", "A reduction whose lean path runs in C, in front of its Python twin.",
    Reduction, reduction_new);
