/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- any op `builder.build` builds: its lean path in C ------------------------------ */

/* `run_op(op_def, attrs, inputs, spec)`: `DirectPath.run_lean` of one op of minerva's
 * own over NArrays `inputs` (at most LEAN_INPUTS, whole or plain views; views only for
 * an op that is not element-wise, as `build` takes them) with attributes `attrs` (at
 * most LEAN_KW) and output `spec` (the shape rule's, which `build` ran): the kernel
 * `op_def.impl(numpy, *arrays, out=target, **attrs)` on the calling thread under one
 * round of the engine lock. The result handle, or None for the Python path (nothing
 * done). */

static PyObject *s_impl, *s_elementwise, *s_out;

/* Whether `view` is `(shape, strides, offset)` of Python ints with no empty axis (no
 * `ReadAs`): a view `view_array` makes as `Device.view` does. */
static int
simple_view(PyObject *view)
{
    if (!PyTuple_CheckExact(view) || PyTuple_GET_SIZE(view) != 3 ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(view, 2)))
        return 0;
    PyObject *shape = PyTuple_GET_ITEM(view, 0), *strides = PyTuple_GET_ITEM(view, 1);
    if (!PyTuple_CheckExact(shape) || !PyTuple_CheckExact(strides) ||
            PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(strides))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        PyObject *n = PyTuple_GET_ITEM(shape, i);
        if (!PyLong_CheckExact(n) || !PyLong_CheckExact(PyTuple_GET_ITEM(strides, i)) ||
                PyObject_Not(n))
            return 0;
    }
    return 1;
}

/* The inputs into `L` (storages, views, specs); 1, or 0 for the Python path. */
static int
any_inputs(LeanOp *L, PyObject *const *inputs, Py_ssize_t n, int elementwise)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = inputs[i];
        if (!Py_IS_TYPE(x, NArrayType))
            return 0;
        PyObject *spec = SLOT(x, ArrayOff[A_SPEC]), *view = SLOT(x, ArrayOff[A_VIEW]);
        PyObject *storage = SLOT(x, ArrayOff[A_STORAGE]);
        if (spec == NULL || view == NULL || !Py_IS_TYPE(spec, SpecType) ||
                storage == NULL || !Py_IS_TYPE(storage, StorageType))
            return 0;
        if (view != Py_None && (elementwise || !simple_view(view)))
            return 0;
        L->views[i] = view == Py_None ? NULL : view;
        L->specs[i] = spec;
        L->inputs[i] = storage;
    }
    L->n_inputs = (int)n;
    return 1;
}

/* The attributes as the kernel's keywords into `L` (`kwnames` new, with "out" last);
 * 0, or -1 on error. */
static int
any_keywords(LeanOp *L, PyObject *attrs)
{
    Py_ssize_t n = PyDict_GET_SIZE(attrs), pos = 0, i = 0;
    L->kwnames = PyTuple_New(n + 1);
    if (L->kwnames == NULL)
        return -1;
    PyObject *key, *value;
    while (PyDict_Next(attrs, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) {
            PyErr_SetString(PyExc_TypeError, "an op's attribute names are strings");
            return -1;
        }
        PyTuple_SET_ITEM(L->kwnames, i, Py_NewRef(key));
        L->kw[i++] = value;
    }
    PyTuple_SET_ITEM(L->kwnames, n, Py_NewRef(s_out));
    L->n_kw = (int)n;
    return 0;
}

/* The lean path of `op` over the NArrays `inputs[:n_inputs]` with `attrs` and output
 * `spec` — into NArray `out` when it is not NULL (a write: `spec` its storage's value's,
 * its inputs already unaliased by `builder._write_one`) —: the result handle (`out`),
 * Py_None for the Python path, NULL on error. */
static PyObject *
any_op_run(PyObject *op, PyObject *attrs, PyObject *const *inputs, Py_ssize_t n_inputs,
           PyObject *spec, PyObject *out)
{
    if (n_inputs > LEAN_INPUTS || PyDict_GET_SIZE(attrs) > LEAN_KW)
        Py_RETURN_NONE;
    LeanOp L = {0};
    L.spec = spec;
    L.op = op;
    if ((L.nbytes = spec_nbytes(L.spec)) < 0)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    /* a write: its target gives the order */
    int elementwise = out == NULL ? op_true(op, O_ELEMENTWISE, s_elementwise) : 0;
    if (elementwise < 0)
        return NULL;
    if (!any_inputs(&L, inputs, n_inputs, elementwise))
        Py_RETURN_NONE;
    if (out != NULL) {
        PyObject *view = SLOT(out, ArrayOff[A_VIEW]);
        if (view == NULL || (view != Py_None && !simple_view(view)))
            Py_RETURN_NONE;
        L.written = SLOT(out, ArrayOff[A_STORAGE]);
        L.target_handle = out;
        L.write_view = view == Py_None ? NULL : view;
    }
    PyObject *system = PyObject_GetAttr(Runtime, s_system), *result = NULL;
    if (system == NULL)
        return NULL;
    int prepared = system == Py_None ? 0 : lean_prepare(&L, system);
    Py_DECREF(system);
    if (prepared > 0 && any_keywords(&L, attrs) == 0 &&
            (L.name = op_attr(op, O_NAME, s_name)) != NULL &&
            (L.ufunc = op_attr(op, O_IMPL, s_impl)) != NULL) {
        PyObject *operands[LEAN_OPERANDS] = {Numpy};   /* xp, then the inputs' arrays */
        result = lean_run(&L, operands, 1 + L.n_inputs);
    } else if (prepared == 0) {
        result = Py_NewRef(Py_None);
    }
    Py_XDECREF(L.name);
    Py_XDECREF(L.ufunc);
    Py_XDECREF(L.kwnames);
    lean_clear(&L);
    return result;
}

/* `(op_def, attrs, inputs, last)` as `run_op` and `run_write` take them: an exact dict of
 * attributes and a list or tuple of inputs, the NArray type known. */
static int
lean_call_args(PyObject *const *args, Py_ssize_t n)
{
    return n == 4 && NArrayType != NULL && PyDict_CheckExact(args[1]) &&
           (PyList_CheckExact(args[2]) || PyTuple_CheckExact(args[2]));
}

static PyObject *
run_op(PyObject *module, PyObject *const *args, Py_ssize_t n)
{
    if (!lean_call_args(args, n) || !Py_IS_TYPE(args[3], SpecType))
        Py_RETURN_NONE;
    return any_op_run(args[0], args[1], PySequence_Fast_ITEMS(args[2]),
                      PySequence_Fast_GET_SIZE(args[2]), args[3], NULL);
}

/* `run_write(op_def, attrs, inputs, out)`: `run_op` of an op written into NArray `out`
 * (`builder._write_one`): `out` when written, None for the Python path. */
static PyObject *
run_write(PyObject *module, PyObject *const *args, Py_ssize_t n)
{
    if (!lean_call_args(args, n) || !Py_IS_TYPE(args[3], NArrayType))
        Py_RETURN_NONE;
    PyObject *out = args[3], *storage = SLOT(out, ArrayOff[A_STORAGE]);
    if (storage == NULL || !Py_IS_TYPE(storage, StorageType) ||
            SLOT(out, ArrayOff[A_READONLY]) != Py_False)
        Py_RETURN_NONE;
    PyObject *current = SLOT(storage, StorageOff[S_CURRENT]);
    if (current == NULL || !Py_IS_TYPE(current, DataNodeType))
        Py_RETURN_NONE;
    PyObject *spec = SLOT(current, DataOff[D_SPEC]);
    if (spec == NULL || !Py_IS_TYPE(spec, SpecType))
        Py_RETURN_NONE;
    return any_op_run(args[0], args[1], PySequence_Fast_ITEMS(args[2]),
                      PySequence_Fast_GET_SIZE(args[2]), spec, out);
}
