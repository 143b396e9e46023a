/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- a basic-index write: x[i] = v, x[1:-1, j] = y -------------------------------- */

/* `x[key] = value` where `key` is ints and slices (at most one per axis, ints in bounds)
 * and `value` a float (or an int, or a NumPy float scalar) into a float or complex array,
 * a complex into a complex one (`fill`), or an NArray that broadcasts to the elements
 * written (`assign`: copied with unsafe casting), while nothing listens at the seam: the
 * write into the current value's own buffer when `state.writable_now` holds, the next
 * version made as `settled_write` makes it — the Python path `indexing.setitem` →
 * `assign` → `build(..., out=)` → `run_lean(written=, out_view=)` takes, step for step.
 * Anything else goes to the Python `__setitem__` it stands in front of. */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the Python `__setitem__` */
    PyObject *fill_op, *assign_op;     /* the ops of a scalar and of an array value */
    PyObject *fill, *copyto;           /* numpy.ndarray.fill, numpy.copyto: their kernels */
    PyObject *names[2];                /* the two ops' names */
} SetItem;

static PyObject *KwCasting, *Unsafe;   /* ("casting",), "unsafe" */
#define N_REAL_SCALARS 4               /* lean.FLOAT_SCALARS: its real types come first */
#define WRITTEN Py_True                /* what lean_run gives back for a write done here */

/* Whether `key` is ints and slices, at most `ndim`, every int in bounds of `shape`: the
 * key with an Ellipsis after it (a view of any basic index, never a NumPy scalar) as a
 * new reference, Py_None for the Python path. */
static PyObject *
write_key(PyObject *key, PyObject *shape)
{
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    PyObject *items = PyTuple_CheckExact(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int plain = n <= ndim;
    for (Py_ssize_t i = 0; plain && i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        if (PySlice_Check(item))
            continue;
        if (!PyLong_CheckExact(item)) {
            plain = 0;
            break;
        }
        long long k = PyLong_AsLongLong(item), extent = PyLong_AsLongLong(
            PyTuple_GET_ITEM(shape, i));
        plain = !PyErr_Occurred() && -extent <= k && k < extent;
        PyErr_Clear();
    }
    PyObject *result = Py_None;
    if (plain) {
        result = PyTuple_New(n + 1);
        if (result != NULL) {
            for (Py_ssize_t i = 0; i < n; i++)
                PyTuple_SET_ITEM(result, i, Py_NewRef(PyTuple_GET_ITEM(items, i)));
            PyTuple_SET_ITEM(result, n, Py_NewRef(Py_Ellipsis));
        }
    } else {
        Py_INCREF(result);
    }
    Py_DECREF(items);
    return result;
}

/* Whether a scalar `value` is one `fill` takes in C into an array of `kind`: a float,
 * an int within 2**53, or a NumPy float scalar into "f" or "c"; a complex into "c". */
static int
fill_value(PyObject *value, PyObject *kind)
{
    int floating = PyUnicode_CompareWithASCIIString(kind, "f") == 0;
    int complex = PyUnicode_CompareWithASCIIString(kind, "c") == 0;
    if (!floating && !complex)
        return 0;
    if (PyFloat_CheckExact(value))
        return 1;
    if (PyLong_CheckExact(value)) {
        long long k = PyLong_AsLongLong(value);
        int exact = !PyErr_Occurred() && k <= (1LL << 53) && k >= -(1LL << 53);
        PyErr_Clear();
        return exact;
    }
    if (PyComplex_CheckExact(value))
        return complex;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(FloatScalars); i++)   /* floats first */
        if ((PyObject *)Py_TYPE(value) == PyTuple_GET_ITEM(FloatScalars, i))
            return complex || i < N_REAL_SCALARS;
    return 0;
}

/* Whether an array of `shape` broadcasts, as `assign` takes it, to the elements that a
 * write of `key` into an array of `target` shape reaches (not more axes than they have). */
static int
assign_fits(PyObject *shape, PyObject *target, PyObject *key)
{
    /* the written elements' shape: ints drop their axes, slices keep a length */
    Py_ssize_t ndim = PyTuple_GET_SIZE(target), n = PyTuple_GET_SIZE(key) - 1, m = 0;
    Py_ssize_t dims[64];
    if (ndim > 64)
        return 0;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        Py_ssize_t extent = PyLong_AsSsize_t(PyTuple_GET_ITEM(target, i));
        PyObject *item = i < n ? PyTuple_GET_ITEM(key, i) : NULL;
        if (item != NULL && PyLong_CheckExact(item))
            continue;
        if (item != NULL) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(item, &start, &stop, &step) < 0) {
                PyErr_Clear();
                return 0;
            }
            extent = PySlice_AdjustIndices(extent, &start, &stop, step);
        }
        dims[m++] = extent;
    }
    Py_ssize_t k = PyTuple_GET_SIZE(shape);
    if (k > m)
        return 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        Py_ssize_t own = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k - 1 - i));
        if (own != 1 && own != dims[m - 1 - i])
            return 0;
    }
    return !PyErr_Occurred();
}

/* Whether `value` sees the very elements `x[key]` sees (`dy[k] -= 1` writes the view
 * back into `x`: a write that changes nothing, `builder.same_buffer`); 1, else 0. */
static int
writes_itself(PyObject *x, PyObject *key, PyObject *value)
{
    if (SLOT(value, ArrayOff[A_STORAGE]) != SLOT(x, ArrayOff[A_STORAGE]))
        return 0;
    PyObject *vspec = SLOT(value, ArrayOff[A_SPEC]), *spec = SLOT(x, ArrayOff[A_SPEC]);
    if (vspec == NULL || !Py_IS_TYPE(vspec, SpecType) ||
            SLOT(vspec, SpecOff[P_DTYPE]) != SLOT(spec, SpecOff[P_DTYPE]))
        return 0;
    PyObject *const *items = &key;
    Py_ssize_t n_items = 1, itemsize;
    if (PyTuple_CheckExact(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        n_items = PyTuple_GET_SIZE(key);
    }
    Layout target, seen;
    int got = view_source(x, &target, &itemsize);
    if (got <= 0 || !index_layout(&target, items, n_items) ||
            explicit_layout(SLOT(vspec, SpecOff[P_SHAPE]), SLOT(value, ArrayOff[A_VIEW]),
                            itemsize, &seen) < 0 || seen.ndim != target.ndim ||
            seen.offset != target.offset) {
        PyErr_Clear();
        return 0;
    }
    for (Py_ssize_t i = 0; i < target.ndim; i++)
        if (seen.shape[i] != target.shape[i] || seen.strides[i] != target.strides[i])
            return 0;
    return 1;
}

/* `x[key] = value` on the lean path: Py_None when written, NotImplemented for the
 * Python path (nothing done), NULL on error. */
static PyObject *
setitem_lean(SetItem *self, PyObject *x, PyObject *key, PyObject *value)
{
    PyObject *spec = SLOT(x, ArrayOff[A_SPEC]), *view = SLOT(x, ArrayOff[A_VIEW]);
    PyObject *storage = SLOT(x, ArrayOff[A_STORAGE]);
    if (spec == NULL || view == NULL || !Py_IS_TYPE(spec, SpecType) || storage == NULL ||
            !Py_IS_TYPE(storage, StorageType) || SLOT(x, ArrayOff[A_READONLY]) != Py_False ||
            SLOT(x, ArrayOff[A_SCALAR]) != Py_False || !plain_view(view, spec, spec))
        Py_RETURN_NOTIMPLEMENTED;
    int array = Py_IS_TYPE(value, NArrayType);
    if (array && writes_itself(x, key, value)) {   /* nothing to write, if nobody listens */
        PyObject *system = NULL;
        int quiet = quiet_seam(&system);
        Py_XDECREF(system);
        return quiet < 0 ? NULL : Py_NewRef(quiet ? Py_None : Py_NotImplemented);
    }
    PyObject *kind = dtype_kind(SLOT(spec, SpecOff[P_DTYPE]));
    if (kind == NULL)
        return NULL;
    int numeric = PySequence_Contains(NumericKinds, kind);
    int takes = numeric > 0 && (array || fill_value(value, kind));
    Py_DECREF(kind);
    if (numeric < 0)
        return NULL;
    PyObject *vspec = array ? SLOT(value, ArrayOff[A_SPEC]) : NULL;
    PyObject *vview = array ? SLOT(value, ArrayOff[A_VIEW]) : NULL;
    PyObject *vstorage = array ? SLOT(value, ArrayOff[A_STORAGE]) : NULL;
    if (takes && array)
        takes = vspec != NULL && Py_IS_TYPE(vspec, SpecType) && vview != NULL &&
                vstorage != NULL && Py_IS_TYPE(vstorage, StorageType) &&
                vstorage != storage && numeric_spec(vspec) > 0 &&
                plain_view(vview, vspec, vspec);
    PyObject *shape = SLOT(spec, SpecOff[P_SHAPE]);
    PyObject *index = takes ? write_key(key, shape) : Py_NewRef(Py_None);
    if (index == NULL)
        return NULL;
    if (index != Py_None && array && !assign_fits(SLOT(vspec, SpecOff[P_SHAPE]), shape, index))
        Py_SETREF(index, Py_NewRef(Py_None));
    PyObject *system = NULL;
    int quiet = index == Py_None ? 0 : quiet_seam(&system);
    if (quiet <= 0) {
        Py_DECREF(index);
        return quiet < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    }
    LeanOp L = {0};
    L.op = array ? self->assign_op : self->fill_op;
    L.name = self->names[array];
    L.ufunc = array ? self->copyto : self->fill;
    L.spec = spec;
    L.nbytes = spec_nbytes(spec);   /* the whole value's bytes: a bound of the write's */
    L.written = storage;
    L.target_handle = WRITTEN;
    L.out_first = 1;
    L.write_view = view == Py_None ? NULL : view;
    L.write_key = index;
    if (array) {
        L.inputs[0] = vstorage;
        L.views[0] = vview == Py_None ? NULL : vview;
        L.specs[0] = vspec;
        L.n_inputs = 1;
        L.kw[0] = Unsafe;
        L.n_kw = 1;
        L.kwnames = KwCasting;
    }
    int prepared = L.nbytes < 0 ? 0 : lean_prepare(&L, system);
    Py_DECREF(system);
    PyObject *result;
    if (prepared > 0) {
        PyObject *operands[1] = {array ? NULL : value};
        result = lean_run(&L, operands, 1);
    } else {
        result = prepared == 0 ? Py_NewRef(Py_None) : NULL;
    }
    lean_clear(&L);
    if (result == WRITTEN) {   /* `__setitem__` gives None */
        Py_DECREF(result);
        return Py_NewRef(Py_None);
    }
    if (result == Py_None) {
        Py_DECREF(result);
        return Py_NewRef(Py_NotImplemented);
    }
    return result;
}

static PyObject *
setitem_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                   PyObject *kwnames)
{
    SetItem *self = (SetItem *)callable;
    if (PyVectorcall_NARGS(nargsf) == 3 && kwnames == NULL && Py_IS_TYPE(args[0], NArrayType)) {
        PyObject *key = int_key(args[1]);
        if (key == NULL)
            return NULL;
        PyObject *result = setitem_lean(self, args[0], key, args[2]);
        Py_DECREF(key);
        if (result != Py_NotImplemented)
            return result;
        Py_DECREF(result);
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
setitem_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *python, *fill_op, *assign_op, *fill, *copyto;
    static char *names[] = {"python", "fill_op", "assign_op", "fill", "copyto", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO", names, &python, &fill_op,
                                     &assign_op, &fill, &copyto))
        return NULL;
    SetItem *self = (SetItem *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = setitem_vectorcall;
    self->python = Py_NewRef(python);
    self->fill_op = Py_NewRef(fill_op);
    self->assign_op = Py_NewRef(assign_op);
    self->fill = Py_NewRef(fill);
    self->copyto = Py_NewRef(copyto);
    self->names[0] = PyObject_GetAttr(fill_op, s_name);
    self->names[1] = PyObject_GetAttr(assign_op, s_name);
    if (self->names[0] == NULL || self->names[1] == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyTypeObject SetItemType = WRAPPER_TYPE(
    "SetItem", "NArray's __setitem__ writing a basic index in C, in front of its Python twin.", SetItem, setitem_new);
