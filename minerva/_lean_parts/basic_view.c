/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- a view at once: x[2], x[1:3], x[i, :k] ------------------------------------------ */

/* `x[key]` for a basic key of exact ints, slices and None (at most one int or slice per
 * axis, not one int per axis alone: that is an element) while nothing records at the seam: the view handle made
 * here as `indexing.getitem` → `views.basic_index` → `manipulation.view_of` make it (the
 * same view, normalized to None when it is the whole buffer, the same base link). An int
 * out of bounds, a slice of other objects and everything else go to the Python path,
 * which raises NumPy's errors. */

#define MAX_AXES 64   /* NumPy's NPY_MAXDIMS */

static PyTypeObject *BaseLinkType;   /* narray.BaseLink */
enum { L_REF, L_HELD, L_VIEW, L_SPEC, L_READONLY, L_N };
static const char *LinkSlots[L_N] = {"_ref", "_held", "_view", "_spec", "_readonly"};
static Py_ssize_t LinkOff[L_N];

typedef struct {
    Py_ssize_t ndim, shape[MAX_AXES], strides[MAX_AXES], offset;
} Layout;

/* C-order byte strides of `shape` (all 0 without elements, as `views.c_strides`). */
static void
c_order(Layout *v, Py_ssize_t itemsize)
{
    Py_ssize_t step = itemsize;
    int empty = 0;
    for (Py_ssize_t i = 0; i < v->ndim; i++)
        empty |= v->shape[i] == 0;
    for (Py_ssize_t i = v->ndim - 1; i >= 0; i--) {
        v->strides[i] = empty ? 0 : step;
        step *= v->shape[i] > 1 ? v->shape[i] : 1;
    }
}

/* The ints of tuple `t` into `out` (at most MAX_AXES); 0, or -1 (no error) otherwise. */
static int
tuple_ints(PyObject *t, Py_ssize_t *out, Py_ssize_t *n)
{
    if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) > MAX_AXES)
        return -1;
    *n = PyTuple_GET_SIZE(t);
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *item = PyTuple_GET_ITEM(t, i);
        if (!PyLong_CheckExact(item))
            return -1;
        out[i] = PyLong_AsSsize_t(item);
        if (out[i] == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
    }
    return 0;
}

/* `x`'s view made explicit (`views.of`) from its spec's shape and its `_view`; 0, or -1
 * (no error) for a view read as another dtype or of other objects. */
static int
explicit_layout(PyObject *shape, PyObject *view, Py_ssize_t itemsize, Layout *v)
{
    if (view == Py_None) {
        if (tuple_ints(shape, v->shape, &v->ndim) < 0)
            return -1;
        c_order(v, itemsize);
        v->offset = 0;
        return 0;
    }
    Py_ssize_t n;
    if (!PyTuple_CheckExact(view) || PyTuple_GET_SIZE(view) != 3 ||
            tuple_ints(PyTuple_GET_ITEM(view, 0), v->shape, &v->ndim) < 0 ||
            tuple_ints(PyTuple_GET_ITEM(view, 1), v->strides, &n) < 0 || n != v->ndim ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(view, 2)))
        return -1;
    v->offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(view, 2));
    if (v->offset == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

/* `views.basic_index` of `v` by `items`: the new layout into `v`; 1 for a view, 0 (no
 * error) when the Python path must take it (an element, an int out of bounds, another
 * kind of item). */
static int
index_layout(Layout *v, PyObject *const *items, Py_ssize_t n_items)
{
    Py_ssize_t n_new = 0;   /* None (numpy.newaxis): a new axis of 1, no axis used */
    for (Py_ssize_t k = 0; k < n_items; k++)
        n_new += items[k] == Py_None;
    if (n_items - n_new > v->ndim || v->ndim + n_new > MAX_AXES)
        return 0;
    Layout out = {.ndim = 0, .offset = v->offset};
    Py_ssize_t n_ints = 0, dim = 0;
    for (Py_ssize_t k = 0; k < n_items; k++, dim++) {
        PyObject *item = items[k];
        if (item == Py_None) {
            out.shape[out.ndim] = 1;
            out.strides[out.ndim++] = 0;
            dim--;
            continue;
        }
        Py_ssize_t n = v->shape[dim], stride = v->strides[dim];
        if (PyLong_CheckExact(item)) {
            Py_ssize_t i = PyLong_AsSsize_t(item);
            if (i == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
            if (i < -n || i >= n)
                return 0;
            out.offset += (i < 0 ? i + n : i) * stride;
            n_ints++;
        } else if (PySlice_Check(item)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(item, &start, &stop, &step) < 0) {
                PyErr_Clear();
                return 0;
            }
            Py_ssize_t length = PySlice_AdjustIndices(n, &start, &stop, step);
            if (length)
                out.offset += start * stride;
            out.shape[out.ndim] = length;
            out.strides[out.ndim++] = stride * step;
        } else {
            return 0;
        }
    }
    if (n_ints == v->ndim && !n_new)
        return 0;
    for (; dim < v->ndim; dim++) {
        out.shape[out.ndim] = v->shape[dim];
        out.strides[out.ndim++] = v->strides[dim];
    }
    *v = out;
    return 1;
}

static PyObject *
ints_tuple(const Py_ssize_t *values, Py_ssize_t n)
{
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t != NULL && i < n; i++) {
        PyObject *value = PyLong_FromSsize_t(values[i]);
        if (value == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, value);
    }
    return t;
}

/* The view `v` as `NArray._view` holds it: None when it is the whole buffer of
 * `buffer_spec` in C order (`views.normalized`), else (shape, strides, offset). */
static PyObject *
normalized_view(Layout *v, PyObject *buffer_spec, Py_ssize_t itemsize, PyObject **shape)
{
    *shape = ints_tuple(v->shape, v->ndim);
    if (*shape == NULL)
        return NULL;
    Layout whole;
    if (v->offset == 0 && buffer_spec != NULL && Py_IS_TYPE(buffer_spec, SpecType) &&
            tuple_ints(SLOT(buffer_spec, SpecOff[P_SHAPE]), whole.shape, &whole.ndim) == 0 &&
            whole.ndim == v->ndim) {
        c_order(&whole, itemsize);
        int same = 1;
        for (Py_ssize_t i = 0; i < v->ndim; i++)
            same &= whole.shape[i] == v->shape[i] && whole.strides[i] == v->strides[i];
        if (same)
            return Py_NewRef(Py_None);
    }
    PyObject *strides = ints_tuple(v->strides, v->ndim);
    PyObject *offset = strides == NULL ? NULL : PyLong_FromSsize_t(v->offset);
    PyObject *view = offset == NULL ? NULL : PyTuple_Pack(3, *shape, strides, offset);
    Py_XDECREF(strides);
    Py_XDECREF(offset);
    return view;
}

/* A new ArraySpec of `shape` and `dtype`, `nbytes` given. */
static PyObject *
new_spec(PyObject *shape, PyObject *dtype, Py_ssize_t nbytes)
{
    PyObject *n = PyLong_FromSsize_t(nbytes);
    PyObject *spec = n == NULL ? NULL : SpecType->tp_alloc(SpecType, 0);
    if (spec == NULL) {
        Py_XDECREF(n);
        return NULL;
    }
    set_slot(spec, SpecOff[P_SHAPE], shape);
    set_slot(spec, SpecOff[P_DTYPE], dtype);
    SLOT(spec, SpecOff[P_NBYTES]) = n;
    return spec;
}

/* The spec of a view of `v`'s shape and `dtype` (new reference): the canonical one of
 * that shape and dtype (cache.c's table), so that the rule caches keyed by a spec's
 * identity find the views of a loop (`x[i] += 1` over rows) as they find whole values. */
static PyObject *
view_spec(Layout *v, PyObject *shape, PyObject *dtype, Py_ssize_t nbytes)
{
    PyObject **slot = canonical_slot(dtype, v->shape, v->ndim);
    PyObject *known = *slot;
    if (known != NULL && SLOT(known, SpecOff[P_DTYPE]) == dtype) {
        PyObject *kshape = SLOT(known, SpecOff[P_SHAPE]);
        Layout k;
        if (tuple_ints(kshape, k.shape, &k.ndim) == 0 && k.ndim == v->ndim) {
            int same = 1;
            for (Py_ssize_t i = 0; i < v->ndim; i++)
                same &= k.shape[i] == v->shape[i];
            if (same)
                return Py_NewRef(known);
        }
    }
    PyObject *spec = new_spec(shape, dtype, nbytes);
    if (spec != NULL)
        Py_XSETREF(*slot, Py_NewRef(spec));
    return spec;
}

/* `x._base` when it has one, else a new `BaseLink(x)`. */
static PyObject *
base_link(PyObject *x)
{
    PyObject *base = SLOT(x, ArrayOff[A_BASE]);
    if (base != NULL && base != Py_None)
        return Py_NewRef(base);
    PyObject *ref = PyWeakref_NewRef(x, NULL);
    PyObject *link = ref == NULL ? NULL : BaseLinkType->tp_alloc(BaseLinkType, 0);
    if (link == NULL) {
        Py_XDECREF(ref);
        return NULL;
    }
    SLOT(link, LinkOff[L_REF]) = ref;
    set_slot(link, LinkOff[L_HELD], Py_None);
    set_slot(link, LinkOff[L_VIEW], SLOT(x, ArrayOff[A_VIEW]));
    set_slot(link, LinkOff[L_SPEC], SLOT(x, ArrayOff[A_SPEC]));
    set_slot(link, LinkOff[L_READONLY], SLOT(x, ArrayOff[A_READONLY]));
    return link;
}

/* The view handle of `x` seeing `v`: new reference, NULL on error. */
static PyObject *
view_handle(PyObject *x, PyObject *storage, PyObject *dtype, Py_ssize_t itemsize, Layout *v)
{
    PyObject *current = SLOT(storage, StorageOff[S_CURRENT]);
    PyObject *buffer_spec = current == NULL ? NULL : SLOT(current, DataOff[D_SPEC]);
    PyObject *shape = NULL;
    PyObject *view = normalized_view(v, buffer_spec, itemsize, &shape);
    Py_ssize_t nbytes = itemsize;
    for (Py_ssize_t i = 0; i < v->ndim; i++)
        nbytes *= v->shape[i];
    PyObject *spec = view == NULL ? NULL : view_spec(v, shape, dtype, nbytes);
    PyObject *base = spec == NULL ? NULL : base_link(x);
    PyObject *result = base == NULL ? NULL : NArrayType->tp_alloc(NArrayType, 0);
    if (result != NULL) {
        PyObject *values[A_N] = {storage, view, spec, Py_None,
                                 SLOT(x, ArrayOff[A_READONLY]), Py_False, Py_False, base};
        for (int i = 0; i < A_N; i++)
            set_slot(result, ArrayOff[i], values[i]);
    }
    Py_XDECREF(shape);
    Py_XDECREF(view);
    Py_XDECREF(spec);
    Py_XDECREF(base);
    return result;
}

/* `x`'s layout into `v` where a view of it may be made in C: its spec, storage and
 * `_view` of the kinds the runtime makes; 1, or 0 (no error) for the Python path. */
static int
view_source(PyObject *x, Layout *v, Py_ssize_t *itemsize)
{
    PyObject *spec = SLOT(x, ArrayOff[A_SPEC]), *storage = SLOT(x, ArrayOff[A_STORAGE]);
    if (BaseLinkType == NULL || spec == NULL || !Py_IS_TYPE(spec, SpecType) ||
            storage == NULL || !Py_IS_TYPE(storage, StorageType))
        return 0;
    PyObject *kind;
    if (dtype_facts(SLOT(spec, SpecOff[P_DTYPE]), &kind, itemsize) < 0)
        return -1;
    Py_DECREF(kind);
    return explicit_layout(SLOT(spec, SpecOff[P_SHAPE]), SLOT(x, ArrayOff[A_VIEW]),
                           *itemsize, v) == 0;
}

/* The handle of `x` seeing `v` where nothing records at the seam (a recorder hears of
 * every view: the Python path tells it); Py_None for the Python path, NULL on error. */
static PyObject *
quiet_view(PyObject *x, Py_ssize_t itemsize, Layout *v)
{
    int listened = seam_listened();
    if (listened != 0)
        return listened < 0 ? NULL : Py_NewRef(Py_None);
    return view_handle(x, SLOT(x, ArrayOff[A_STORAGE]),
                       SLOT(SLOT(x, ArrayOff[A_SPEC]), SpecOff[P_DTYPE]), itemsize, v);
}

/* `x[key]` as a view at once: the handle (new reference), Py_None for the Python path,
 * NULL on error. */
static PyObject *
view_lean(PyObject *x, PyObject *key)
{
    PyObject *const *items = &key;
    Py_ssize_t n_items = 1, itemsize;
    if (PyTuple_CheckExact(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        n_items = PyTuple_GET_SIZE(key);
    }
    Layout v;
    int got = view_source(x, &v, &itemsize);
    if (got <= 0 || !index_layout(&v, items, n_items))
        return got < 0 ? NULL : Py_NewRef(Py_None);
    return quiet_view(x, itemsize, &v);
}

/* `x.T` at once: the axes reversed (`manipulation.transpose`); as `view_lean` returns. */
static PyObject *
transpose_lean(PyObject *x)
{
    Py_ssize_t itemsize;
    Layout v;
    int got = view_source(x, &v, &itemsize);
    if (got <= 0)
        return got < 0 ? NULL : Py_NewRef(Py_None);
    for (Py_ssize_t i = 0, j = v.ndim - 1; i < j; i++, j--) {
        Py_ssize_t n = v.shape[i], stride = v.strides[i];
        v.shape[i] = v.shape[j], v.strides[i] = v.strides[j];
        v.shape[j] = n, v.strides[j] = stride;
    }
    return quiet_view(x, itemsize, &v);
}

typedef Wrapper Transposed;   /* in front of the Python `T` property's getter */

static PyObject *
transposed_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                      PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL && NArrayType != NULL &&
            Py_IS_TYPE(args[0], NArrayType)) {
        PyObject *view = transpose_lean(args[0]);
        if (view != Py_None)
            return view;
        Py_DECREF(view);
    }
    return PyObject_Vectorcall(((Transposed *)callable)->python, args, nargsf, kwnames);
}

static PyObject *
transposed_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    return wrapper_new(type, args, kwargs, transposed_vectorcall);
}

static PyTypeObject TransposedType = WRAPPER_TYPE(
    "Transposed", "NArray's `T` getter making the view in C, in front of its Python twin.",
    Transposed, transposed_new);
