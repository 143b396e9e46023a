/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- one element at once: x[i] ------------------------------------------------------ */

/* `x[i]` (or `x[i, j, ...]`, one int per axis) of a value computed on a CPU device with
 * no write pending — whole, or a plain view of it (`y = ys[k]; y[0]`: the element's place
 * in the whole buffer found from the view's strides and offset) —, while nothing records
 * at the seam and host reads are allowed: NumPy's own scalar, read under the engine lock
 * (`indexing.getitem` → `DirectPath.element_now`); NumPy's IndexError out of bounds of a
 * whole value (out of a view's bounds, the Python path raises it). Anything else goes to
 * the Python `__getitem__` it stands in front of. */

static PyObject *ElementNow;       /* DirectPath.element_now, which the C read stands for */
static PyObject *HostReads;        /* narray.HOST_READS (its `refuse`, per thread) */
static PyObject *CopiedScalars;    /* narray.COPIED_SCALARS: kinds read at once */
static PyObject *s_element_now, *s_refuse, *s_cpu;

/* Whether `key` picks one element of a value of `ndim` axes by ints alone. */
static int
element_key(PyObject *key, Py_ssize_t ndim)
{
    if (PyLong_CheckExact(key))
        return ndim == 1;
    if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != ndim || ndim == 0)
        return 0;
    for (Py_ssize_t i = 0; i < ndim; i++)
        if (!PyLong_CheckExact(PyTuple_GET_ITEM(key, i)))
            return 0;
    return 1;
}

/* Whether nothing stops a read at once: the seam is quiet, host reads are allowed and
 * the dtype's scalars are copies (1); 0 when something does; -1 on error. */
static int
element_allowed(PyObject *spec)
{
    int listened = seam_listened();
    if (listened != 0)
        return listened < 0 ? -1 : 0;
    if (!none_counted(HostRefusing)) {
        PyObject *refuse = PyObject_GetAttr(HostReads, s_refuse);
        if (refuse == NULL)
            return -1;
        Py_DECREF(refuse);
        if (refuse != Py_None)
            return 0;
    }
    PyObject *kind = dtype_kind(SLOT(spec, SpecOff[P_DTYPE]));
    int copied = kind == NULL ? -1 : PySequence_Contains(CopiedScalars, kind);
    Py_XDECREF(kind);
    return copied;
}

/* Whether `Parts` are those of the running system of `engine` (a live object): their
 * system still lives, so no other engine can sit at its engine's address. */
static inline int
parts_hold(PyObject *engine)
{
    return Parts.ref != NULL && PyWeakref_GET_OBJECT(Parts.ref) != Py_None &&
        engine == Parts.engine;
}

/* The ints of `key` (an int, or a tuple of ints, one per axis of `shape`) within
 * `shape`, negative ones counted from the end, into `at`; 0 when one is out of bounds
 * (the Python path raises NumPy's IndexError), -1 on error. */
static int
element_ints(PyObject *key, PyObject *shape, Py_ssize_t *at)
{
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    for (Py_ssize_t k = 0; k < ndim; k++) {
        PyObject *item = PyLong_CheckExact(key) ? key : PyTuple_GET_ITEM(key, k);
        Py_ssize_t i = PyLong_AsSsize_t(item), n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k));
        if ((i == -1 || n == -1) && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (i < 0)
            i += n;
        if (i < 0 || i >= n)
            return 0;
        at[k] = i;
    }
    return 1;
}

/* The key into the whole buffer (`base_shape`, C order) of the element `key` picks
 * through the plain view `(shape, strides, offset)` of items of `itemsize` bytes (new
 * reference); Py_None when the Python path must read it. */
static PyObject *
element_in_buffer(PyObject *view, PyObject *key, PyObject *base_shape, Py_ssize_t itemsize)
{
    Py_ssize_t at[SPEC_AXES];
    PyObject *shape = PyTuple_GET_ITEM(view, 0), *strides = PyTuple_GET_ITEM(view, 1);
    Py_ssize_t nb = PyTuple_GET_SIZE(base_shape);
    if (PyTuple_GET_SIZE(shape) > SPEC_AXES || nb == 0 || nb > SPEC_AXES || itemsize <= 0)
        Py_RETURN_NONE;
    int in = element_ints(key, shape, at);
    if (in <= 0)
        return in < 0 ? NULL : Py_NewRef(Py_None);
    Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(view, 2));
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(shape); k++)
        off += at[k] * PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, k));
    if (PyErr_Occurred() || off < 0 || off % itemsize) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_ssize_t flat = off / itemsize;
    PyObject *base_key = PyTuple_New(nb);
    if (base_key == NULL)
        return NULL;
    for (Py_ssize_t k = nb - 1; k >= 0; k--) {   /* unravelled in C order */
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(base_shape, k));
        PyObject *i = n <= 0 ? NULL : PyLong_FromSsize_t(flat % n);
        if (i == NULL) {
            Py_DECREF(base_key);
            if (n > 0)
                return NULL;
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        PyTuple_SET_ITEM(base_key, k, i);
        flat /= n;
    }
    return base_key;
}

/* Under the engine lock: the element, Py_None when the value is not readable at once;
 * through `view` (a plain view) where it is not Py_None. */
static PyObject *
element_locked(PyObject *engine, PyObject *storage, PyObject *key, PyObject *view,
               Py_ssize_t itemsize)
{
    PyObject *data = SLOT(storage, StorageOff[S_CURRENT]);
    PyObject *state = data == NULL ? NULL : SLOT(data, DataOff[D_STATE]);
    if (state == NULL || PyLong_AsLong(state) != Completed ||
            SLOT(data, DataOff[D_WRITER]) != Py_None)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    int closed = truth_of(ENGINE_ATTR(engine, E_CLOSED, s_closed));
    if (closed != 0)
        return closed < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *table;
    if (parts_hold(engine)) {
        table = Py_NewRef(Parts.table);
    } else {
        PyObject *devices = ENGINE_ATTR(engine, E_DEVICES, s_devices);
        table = devices == NULL ? NULL : PyObject_GetAttr(devices, s_table);
        Py_XDECREF(devices);
    }
    PyObject *device = table == NULL ? NULL :
        PyObject_GetItem(table, SLOT(data, DataOff[D_DEVICE_ID]));
    Py_XDECREF(table);
    if (device == NULL)
        return NULL;
    PyObject *kind = _PyType_Lookup(Py_TYPE(device), s_kind);   /* a class's, borrowed */
    kind = kind != NULL ? Py_NewRef(kind) : PyObject_GetAttr(device, s_kind);
    Py_DECREF(device);
    if (kind == NULL)
        return NULL;
    int cpu = PyUnicode_Check(kind) && PyUnicode_Compare(kind, s_cpu) == 0;
    Py_DECREF(kind);
    PyObject *array = SLOT(data, DataOff[D_ARRAY]);
    if (!cpu || array == NULL || array == Py_None)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    if (view == Py_None)
        return PyObject_GetItem(array, key);
    PyObject *base_shape = SLOT(SLOT(data, DataOff[D_SPEC]), SpecOff[P_SHAPE]);
    if (base_shape == NULL || !PyTuple_CheckExact(base_shape))
        Py_RETURN_NONE;
    PyObject *base_key = element_in_buffer(view, key, base_shape, itemsize);
    if (base_key == NULL || base_key == Py_None)
        return base_key;
    PyObject *element = PyObject_GetItem(array, base_key);
    Py_DECREF(base_key);
    return element;
}

static PyObject *element_read(PyObject *x, PyObject *key);

/* `x[key]` at once: the element (new reference), Py_None for the Python path, NULL on
 * error (NumPy's IndexError among them). */
static PyObject *
element_lean(PyObject *x, PyObject *key)
{
    PyObject *spec = SLOT(x, ArrayOff[A_SPEC]), *storage = SLOT(x, ArrayOff[A_STORAGE]);
    PyObject *view = SLOT(x, ArrayOff[A_VIEW]);
    if (view == NULL || (view != Py_None && !simple_view(view)) || spec == NULL ||
            !Py_IS_TYPE(spec, SpecType) || storage == NULL || !Py_IS_TYPE(storage, StorageType))
        Py_RETURN_NONE;   /* a whole value, or a plain view of one */
    PyObject *shape = SLOT(spec, SpecOff[P_SHAPE]);
    if (shape == NULL || !PyTuple_Check(shape) || !element_key(key, PyTuple_GET_SIZE(shape)))
        Py_RETURN_NONE;
    return element_read(x, key);
}

/* The element `key` picks of `x` (checked: whole or a plain view, ints one per axis),
 * read at once where nothing stops it (new reference), Py_None for the Python path. */
static PyObject *
element_read(PyObject *x, PyObject *key)
{
    PyObject *spec = SLOT(x, ArrayOff[A_SPEC]), *storage = SLOT(x, ArrayOff[A_STORAGE]);
    PyObject *view = SLOT(x, ArrayOff[A_VIEW]);
    int allowed = element_allowed(spec);
    if (allowed <= 0)
        return allowed < 0 ? NULL : Py_NewRef(Py_None);
    Py_ssize_t itemsize = 0;
    if (view != Py_None) {
        PyObject *kind;
        if (dtype_facts(SLOT(spec, SpecOff[P_DTYPE]), &kind, &itemsize) < 0)
            return NULL;
        Py_DECREF(kind);
    }
    PyObject *engine = SLOT(storage, StorageOff[S_ENGINE]);
    if (engine == NULL || _PyType_Lookup(Py_TYPE(engine), s_element_now) != ElementNow)
        Py_RETURN_NONE;
    PyObject *lock = parts_hold(engine) ? Py_NewRef(Parts.lock) :
        PyObject_GetAttr(engine, s_lock);
    PyObject *r = lock == NULL ? NULL : lock_acquire(lock);
    if (r == NULL) {
        Py_XDECREF(lock);
        return NULL;
    }
    Py_DECREF(r);
    PyObject *element = element_locked(engine, storage, key, view, itemsize);
    int released = lock_release(lock);
    Py_DECREF(lock);
    if (released < 0)
        Py_CLEAR(element);
    return element;
}

typedef Wrapper Element;   /* in front of the Python `__getitem__` */

static PyObject *
element_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                   PyObject *kwnames)
{
    Element *self = (Element *)callable;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL && NArrayType != NULL &&
            Py_IS_TYPE(args[0], NArrayType)) {
        PyObject *key = int_key(args[1]);
        if (key == NULL)
            return NULL;
        PyObject *element = element_lean(args[0], key);
        if (element != Py_None) {
            Py_DECREF(key);
            return element;
        }
        Py_DECREF(element);
        PyObject *view = view_lean(args[0], key);
        Py_DECREF(key);
        if (view != Py_None)
            return view;
        Py_DECREF(view);
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
element_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    return wrapper_new(type, args, kwargs, element_vectorcall);
}

static PyTypeObject ElementType = WRAPPER_TYPE(
    "Element", "NArray's __getitem__ reading one element at once in C, in front of its "
    "Python twin.", Element, element_new);
