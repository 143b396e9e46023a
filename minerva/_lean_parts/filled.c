/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- np.zeros(shape), np.ones(shape), np.empty(shape) at once ------------------------ */

/* In front of `creation.zeros`, `ones` and `empty` (each behind `placed`): a shape of
 * plain ints (an int, or a tuple of at most MAX_AXES) and a numeric dtype (None: the
 * system's default float dtype; a NumPy dtype; a type NumPy makes a dtype of), given
 * positionally or as `dtype=`, make the new value by `run_op`'s steps of the fill (or
 * `empty`) op with `_filled`'s attributes and a canonical spec. Anything else — another
 * keyword (`order=`, `like=`, `device=`), a shape of NumPy ints, a string dtype, a
 * listener, a big array — goes to the Python function, which checks and raises. */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;   /* the Python function */
    PyObject *op;       /* creation's fill op, or its empty op */
    PyObject *value;    /* the fill value (0 or 1), or Py_None for `empty` */
} Filled;

static PyObject *s_config, *s_default_dtype, *s_value;

/* The dtypes of the type objects met (`np.float32`, `float`, `bool`), by identity. */
#define N_DTYPES_OF 16
static struct { PyObject *type, *dtype; } DtypesOf[N_DTYPES_OF];
static int NDtypesOf;

/* `dtype` as a NumPy dtype of numeric kind (new reference; None: `system`'s default
 * float dtype), or NULL with no error set where the Python function must decide. */
static PyObject *
filled_dtype(PyObject *dtype, PyObject *system)
{
    if (dtype == Py_None) {   /* the running system's default float dtype */
        PyObject *config = PyObject_GetAttr(system, s_config);
        dtype = config == NULL ? NULL : PyObject_GetAttr(config, s_default_dtype);
        Py_XDECREF(config);
    } else if (PyObject_TypeCheck(dtype, NumpyDtypeType)) {
        Py_INCREF(dtype);
    } else if (PyType_Check(dtype)) {
        PyObject *found = NULL;
        for (int i = 0; i < NDtypesOf && found == NULL; i++)
            if (DtypesOf[i].type == dtype)
                found = DtypesOf[i].dtype;
        if (found == NULL && NDtypesOf < N_DTYPES_OF) {
            found = PyObject_CallOneArg((PyObject *)NumpyDtypeType, dtype);
            if (found != NULL) {   /* held by the table */
                DtypesOf[NDtypesOf].type = Py_NewRef(dtype);
                DtypesOf[NDtypesOf++].dtype = found;
            }
        }
        dtype = Py_XNewRef(found);
    } else {
        return NULL;
    }
    if (dtype == NULL || !PyObject_TypeCheck(dtype, NumpyDtypeType)) {
        PyErr_Clear();
        Py_XDECREF(dtype);
        return NULL;
    }
    PyObject *kind = dtype_kind(dtype);
    int numeric = kind == NULL ? -1 : PySequence_Contains(NumericKinds, kind);
    Py_XDECREF(kind);
    if (numeric <= 0) {
        PyErr_Clear();
        Py_DECREF(dtype);
        return NULL;
    }
    return dtype;
}

/* `shape` (an int or a tuple of ints >= 0) into `v` and as a tuple (new reference);
 * NULL, no error set, for any other. */
static PyObject *
filled_shape(PyObject *shape, Layout *v)
{
    PyObject *dims = PyLong_CheckExact(shape) ? PyTuple_Pack(1, shape) :
        PyTuple_CheckExact(shape) ? Py_NewRef(shape) : NULL;
    if (dims == NULL || PyTuple_GET_SIZE(dims) > MAX_AXES) {
        Py_XDECREF(dims);
        return NULL;
    }
    v->ndim = PyTuple_GET_SIZE(dims);
    for (Py_ssize_t i = 0; i < v->ndim; i++) {
        PyObject *n = PyTuple_GET_ITEM(dims, i);
        v->shape[i] = PyLong_CheckExact(n) ? PyLong_AsSsize_t(n) : -1;
        if (v->shape[i] < 0 || v->shape[i] >= (Py_ssize_t)1 << 40) {
            PyErr_Clear();
            Py_DECREF(dims);
            return NULL;
        }
    }
    return dims;
}

/* The new value (new reference), Py_None for the Python function. */
static PyObject *
filled_lean(Filled *self, PyObject *shape_arg, PyObject *dtype_arg)
{
    PyObject *system;
    int quiet = quiet_seam(&system);
    if (quiet <= 0)
        return quiet < 0 ? NULL : Py_NewRef(Py_None);
    Layout v;
    PyObject *shape = filled_shape(shape_arg, &v);
    PyObject *dtype = shape == NULL ? NULL : filled_dtype(dtype_arg, system);
    Py_DECREF(system);
    PyObject *kind = NULL, *spec = NULL, *attrs = NULL, *result = NULL;
    Py_ssize_t itemsize, nbytes = 1;
    if (dtype != NULL && dtype_facts(dtype, &kind, &itemsize) == 0) {
        for (Py_ssize_t i = 0; i < v.ndim; i++)
            nbytes *= v.shape[i];
        spec = view_spec(&v, shape, dtype, nbytes * itemsize);
        attrs = spec == NULL ? NULL : Py_BuildValue("{sOsO}", "shape", shape, "dtype", dtype);
        if (attrs != NULL && self->value != Py_None &&
                PyDict_SetItem(attrs, s_value, self->value) < 0)
            Py_CLEAR(attrs);
        if (attrs != NULL)
            result = any_op_run(self->op, attrs, NULL, 0, spec, NULL);
    }
    if (result == NULL && !PyErr_Occurred())
        result = Py_NewRef(Py_None);
    Py_XDECREF(shape); Py_XDECREF(dtype); Py_XDECREF(kind); Py_XDECREF(spec);
    Py_XDECREF(attrs);
    return result;
}

static PyObject *
filled_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                  PyObject *kwnames)
{
    Filled *self = (Filled *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), n_kw = kwnames == NULL ? 0 :
        PyTuple_GET_SIZE(kwnames);
    int plain = NArrayType != NULL && (((n == 1 || n == 2) && n_kw == 0) || (n == 1 && n_kw == 1 &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "dtype") == 0));
    if (plain) {
        PyObject *result = filled_lean(self, args[0], n + n_kw == 2 ? args[1] : Py_None);
        if (result != Py_None)
            return result;
        Py_DECREF(result);
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
filled_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *python, *op, *value;
    static char *names[] = {"python", "op", "value", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO", names, &python, &op, &value))
        return NULL;
    Filled *self = (Filled *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = filled_vectorcall;
    self->python = Py_NewRef(python);
    self->op = Py_NewRef(op);
    self->value = Py_NewRef(value);
    return (PyObject *)self;
}

static PyTypeObject FilledType = WRAPPER_TYPE(
    "Filled", "creation's zeros, ones or empty of a plain shape and numeric dtype in C, in "
    "front of its Python twin.", Filled, filled_new);
