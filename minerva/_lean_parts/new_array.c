/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- `np.array([a, b, c])` of plain numbers ------------------------------------------ */

/* `array(obj)` with no other argument, `obj` a list or tuple of at most NEW_ITEMS Python
 * floats, ints or NumPy float and complex scalars (no bool), or of such lists up to
 * NEW_DEPTH levels deep (`[[a, b], [c, d]]`): NumPy's `asarray(obj)` of a numeric
 * dtype, copied into a new value on the lean path of
 * `from_host` (`creation.array` → `builder.upload` → `Engine.run_new` make the same
 * array). Anything else — another argument, other items, a dtype NumPy infers as not
 * numeric, an error — goes to the Python `array` it stands in front of. */

#define NEW_ITEMS 64
#define NEW_DEPTH 3

static PyObject *FromHost;     /* the `from_host` op */
static PyObject *Asarray;      /* numpy.asarray */
static PyObject *s_shape, *s_nbytes;

/* Whether every item of `obj` is a plain number NumPy reads as one, or (up to
 * NEW_DEPTH levels) a list or tuple of them, at most NEW_ITEMS items in all (`count`).
 * A ragged nesting is NumPy's to refuse: `asarray` raises, the Python path raises it. */
static int
plain_numbers(PyObject *obj, int depth, Py_ssize_t *count)
{
    if (!PyList_CheckExact(obj) && !PyTuple_CheckExact(obj))
        return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    *count += n;
    if (n == 0 || *count > NEW_ITEMS)
        return 0;
    PyObject **items = PySequence_Fast_ITEMS(obj);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = items[i];
        if (PyFloat_CheckExact(item) || PyLong_CheckExact(item))
            continue;
        if (PyList_CheckExact(item) || PyTuple_CheckExact(item)) {
            if (depth + 1 < NEW_DEPTH && plain_numbers(item, depth + 1, count))
                continue;
            return 0;
        }
        int scalar = 0;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(FloatScalars) && !scalar; k++)
            scalar = (PyObject *)Py_TYPE(item) == PyTuple_GET_ITEM(FloatScalars, k);
        if (!scalar)
            return 0;
    }
    return 1;
}

/* The new array of `obj` (new reference), Py_None for the Python path, NULL on error. */
static PyObject *
new_array_lean(PyObject *obj)
{
    Py_ssize_t count = 0;
    if (FromHost == NULL || !plain_numbers(obj, 0, &count))
        Py_RETURN_NONE;
    PyObject *data = PyObject_CallOneArg(Asarray, obj);
    if (data == NULL) {   /* NumPy refuses it: the Python path raises what it raises */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *dtype = PyObject_GetAttr(data, s_dtype);
    PyObject *kind = dtype == NULL ? NULL : dtype_kind(dtype);
    int numeric = kind == NULL ? -1 : PySequence_Contains(NumericKinds, kind);
    Py_XDECREF(kind);
    PyObject *shape = numeric > 0 ? PyObject_GetAttr(data, s_shape) : NULL;
    Py_ssize_t nbytes = -1;
    if (shape != NULL && attr_ssize(data, s_nbytes, &nbytes) < 0)
        nbytes = -1;
    PyObject *spec = nbytes >= 0 ? new_spec(shape, dtype, nbytes) : NULL;
    PyObject *attrs = spec == NULL ? NULL : PyDict_New();
    PyObject *result = numeric == 0 ? Py_NewRef(Py_None) : NULL;
    if (attrs != NULL && PyDict_SetItem(attrs, s_data, data) == 0)
        result = any_op_run(FromHost, attrs, NULL, 0, spec, NULL);
    Py_XDECREF(attrs);
    Py_XDECREF(spec);
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    Py_DECREF(data);
    return result;
}

/* `copy_into(xp, *, out, data)`: the kernel of `from_host` for `NewArray` (configure
 * hands over the op's twin with it): `out[...] = data`, as the Python kernel's
 * `out[...] = numpy.asarray(data)` of a NumPy array `data`, less its Python frame. */
static PyObject *
copy_into(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *out = NULL, *data = NULL;
    Py_ssize_t n = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_Compare(name, s_out) == 0)
            out = args[nargs + i];
        else if (PyUnicode_Compare(name, s_data) == 0)
            data = args[nargs + i];
    }
    if (nargs != 1 || n != 2 || out == NULL || data == NULL) {
        PyErr_SetString(PyExc_TypeError, "copy_into(xp, *, out, data)");
        return NULL;
    }
    if (PyObject_SetItem(out, Py_Ellipsis, data) < 0)
        return NULL;
    Py_RETURN_NONE;
}

typedef Wrapper NewArray;   /* in front of the Python `array` */

static PyObject *
new_array_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                     PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL && NArrayType != NULL) {
        PyObject *result = new_array_lean(args[0]);
        if (result != Py_None)
            return result;
        Py_DECREF(result);
    }
    return PyObject_Vectorcall(((NewArray *)callable)->python, args, nargsf, kwnames);
}

static PyObject *
new_array_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    return wrapper_new(type, args, kwargs, new_array_vectorcall);
}

static PyTypeObject NewArrayType = WRAPPER_TYPE(
    "NewArray", "`array(obj)` of a list of plain numbers made in C, in front of its "
    "Python twin.", NewArray, new_array_new);
