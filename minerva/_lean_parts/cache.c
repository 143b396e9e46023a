/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- the shape rule's cache ------------------------------------------------------ */

/* Direct-mapped: (op, input spec, second spec or scalar type) -> output spec. Entries
 * hold their keys, so an identity can not be reused while it is cached. */
#define CACHE_SIZE 512
typedef struct {
    PyObject *op, *spec, *other, *out;
    int reverse;
} CacheEntry;
static CacheEntry Cache[CACHE_SIZE];

static inline Py_ssize_t
cache_slot(PyObject *op, PyObject *spec, PyObject *other)
{
    size_t h = ((size_t)op >> 4) * 31u + ((size_t)spec >> 4) * 17u + ((size_t)other >> 4);
    return (Py_ssize_t)(h % CACHE_SIZE);
}

static void
cache_put(Py_ssize_t i, PyObject *op, PyObject *spec, PyObject *other, PyObject *out,
          int reverse)
{
    CacheEntry *e = &Cache[i];
    e->reverse = reverse;
    Py_INCREF(op); Py_INCREF(spec); Py_INCREF(other); Py_INCREF(out);
    Py_XSETREF(e->op, op);
    Py_XSETREF(e->spec, spec);
    Py_XSETREF(e->other, other);
    Py_XSETREF(e->out, out);
}


/* The canonical spec of `spec`'s shape and dtype (new reference): the first of them
 * met, kept in a small direct-mapped table, or `spec` itself when none is kept. The
 * cache above is keyed by a spec's identity: an array made anew each step (`np.array
 * ([...])` in a loop, a shape rule's fresh answer) finds the rules its twins met, and
 * the results made from it share their specs in turn. */
#define CANONICAL_SPECS 1024
static PyObject *CanonicalSpecs[CANONICAL_SPECS];

static int
same_spec(PyObject *a, PyObject *b)
{
    if (SLOT(a, SpecOff[P_DTYPE]) != SLOT(b, SpecOff[P_DTYPE]))
        return 0;
    PyObject *sa = SLOT(a, SpecOff[P_SHAPE]), *sb = SLOT(b, SpecOff[P_SHAPE]);
    if (sa == NULL || sb == NULL || !PyTuple_CheckExact(sa) || !PyTuple_CheckExact(sb))
        return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(sa);
    if (PyTuple_GET_SIZE(sb) != n)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(sa, i), *y = PyTuple_GET_ITEM(sb, i);
        if (x != y && (!PyLong_CheckExact(x) || !PyLong_CheckExact(y) ||
                       PyLong_AsSsize_t(x) != PyLong_AsSsize_t(y)))
            return 0;
    }
    return 1;
}

/* The table's slot for a spec of `dtype` and shape `dims[:ndim]` (also the views' specs
 * of basic_view.c: one canonical spec per shape and dtype). */
static PyObject **
canonical_slot(PyObject *dtype, const Py_ssize_t *dims, Py_ssize_t ndim)
{
    size_t h = (size_t)dtype >> 4;
    for (Py_ssize_t i = 0; i < ndim; i++)
        h = h * 1000003u + (size_t)dims[i];
    return &CanonicalSpecs[(h + (size_t)ndim) % CANONICAL_SPECS];
}

#define SPEC_AXES 64   /* NumPy's NPY_MAXDIMS */

static PyObject *
canonical_spec(PyObject *spec)
{
    PyObject *shape = SLOT(spec, SpecOff[P_SHAPE]);
    if (shape == NULL || !PyTuple_CheckExact(shape) || SLOT(spec, SpecOff[P_DTYPE]) == NULL ||
            PyTuple_GET_SIZE(shape) > SPEC_AXES)
        return Py_NewRef(spec);
    Py_ssize_t dims[SPEC_AXES], ndim = PyTuple_GET_SIZE(shape);
    for (Py_ssize_t i = 0; i < ndim; i++) {
        PyObject *n = PyTuple_GET_ITEM(shape, i);
        if (!PyLong_CheckExact(n))
            return Py_NewRef(spec);
        dims[i] = PyLong_AsSsize_t(n);
    }
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return Py_NewRef(spec);
    }
    PyObject **slot = canonical_slot(SLOT(spec, SpecOff[P_DTYPE]), dims, ndim);
    if (*slot != NULL && (*slot == spec || same_spec(*slot, spec)))
        return Py_NewRef(*slot);
    Py_XSETREF(*slot, Py_NewRef(spec));
    return Py_NewRef(spec);
}

static PyObject *
cache_clear(PyObject *module, PyObject *unused)
{
    for (int i = 0; i < CACHE_SIZE; i++) {
        Py_CLEAR(Cache[i].op); Py_CLEAR(Cache[i].spec);
        Py_CLEAR(Cache[i].other); Py_CLEAR(Cache[i].out);
    }
    for (int i = 0; i < CANONICAL_SPECS; i++)
        Py_CLEAR(CanonicalSpecs[i]);
    Py_RETURN_NONE;
}

/* Whether a spec's dtype is one every device holds. */
static int
numeric_spec(PyObject *spec)
{
    PyObject *kind = dtype_kind(SLOT(spec, SpecOff[P_DTYPE]));
    if (kind == NULL)
        return -1;
    int found = PySequence_Contains(NumericKinds, kind);
    Py_DECREF(kind);
    return found;
}

/* The output spec of `op` over `spec` and `other` (a second spec, a Python scalar, on
 * the left when `reverse`, or NULL for a one-operand op; with `any_int` a rule whose
 * answer is the same for every Python int the caller lets through: a comparison's);
 * new reference, NULL without an error set when the op must take the Python path (the
 * shape rule raises there, at the user's line), or an output that is not one numeric
 * array. */
static PyObject *
out_spec(PyObject *op, PyObject *spec, PyObject *other, int scalar, int reverse,
         int any_int)
{
    /* other NULL: a one-operand op, keyed by None */
    PyObject *key = other == NULL ? Py_None : scalar ? (PyObject *)Py_TYPE(other) : other;
    Py_ssize_t i = (cache_slot(op, spec, key) + reverse) % CACHE_SIZE;
    CacheEntry *e = &Cache[i];
    if (e->op == op && e->spec == spec && e->other == key && e->reverse == reverse) {
        Py_INCREF(e->out);
        return e->out;
    }
    /* a miss: keyed again by the canonical specs of the operands */
    PyObject *canon = canonical_spec(spec), *canon_key = NULL, *infer = NULL, *specs = NULL;
    canon_key = other == NULL || scalar ? Py_NewRef(key) : canonical_spec(other);
    if (canon != spec || canon_key != key) {
        i = (cache_slot(op, canon, canon_key) + reverse) % CACHE_SIZE;
        e = &Cache[i];
        if (e->op == op && e->spec == canon && e->other == canon_key &&
                e->reverse == reverse) {
            Py_DECREF(canon);
            Py_DECREF(canon_key);
            Py_INCREF(e->out);
            return e->out;
        }
    }
    spec = canon;   /* borrowed from here on: released at the end */
    if (other != NULL && !scalar)
        other = canon_key;
    key = canon_key;
    infer = PyObject_GetAttr(op, s_infer);
    if (infer == NULL)
        goto python_path;
    if (scalar) {
        PyObject *kwargs = Py_BuildValue("{OOOO}", s_scalar, other, s_reverse,
                                         reverse ? Py_True : Py_False);
        PyObject *args = PyTuple_Pack(1, spec);
        if (kwargs != NULL && args != NULL)
            specs = PyObject_Call(infer, args, kwargs);
        Py_XDECREF(kwargs);
        Py_XDECREF(args);
    } else {
        specs = PyObject_CallFunctionObjArgs(infer, spec, other, NULL);   /* other NULL: one */
    }
    Py_DECREF(infer);
    if (specs == NULL || !PyTuple_CheckExact(specs) || PyTuple_GET_SIZE(specs) != 1)
        goto python_path;
    PyObject *out = PyTuple_GET_ITEM(specs, 0);
    if (!Py_IS_TYPE(out, SpecType))
        goto python_path;
    PyObject *shape = SLOT(out, SpecOff[P_SHAPE]);
    if (shape == NULL || !PyTuple_Check(shape))
        goto python_path;
    int numeric = numeric_spec(out);
    if (numeric <= 0)
        goto python_path;
    /* a scalar's value matters to the rule for integer arrays (it must fit; no negative
     * integer powers): those results are not cached */
    int cacheable = 1;
    if (scalar && PyLong_CheckExact(other) && !any_int) {
        PyObject *kind = dtype_kind(SLOT(spec, SpecOff[P_DTYPE]));
        if (kind == NULL)
            goto python_path;
        cacheable = PyUnicode_CompareWithASCIIString(kind, "f") == 0 ||
                    PyUnicode_CompareWithASCIIString(kind, "c") == 0;
        Py_DECREF(kind);
    }
    out = canonical_spec(out);
    if (cacheable)
        cache_put(i, op, spec, key, out, reverse);
    Py_DECREF(specs);
    Py_DECREF(canon);
    Py_DECREF(canon_key);
    return out;
python_path:
    Py_XDECREF(specs);
    Py_DECREF(canon);
    Py_DECREF(canon_key);
    PyErr_Clear();
    return NULL;
}
