/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- `builder.build` of one op at once --------------------------------------------- */

/* `build_op(op_def, inputs, attrs)`, which `builder.build` tries first for an op with no
 * `out=`: while nothing listens at the seam, the shape rule's answer from its memo
 * (`registry.memoized`: the key `memo_key` makes, made here alike) or from the rule
 * itself, then `run_op`'s steps (`any_op_run`) — the Python `build`'s own work of a
 * one-output numeric op, without its frames. The result handle; NotImplemented where
 * `run_op`'s steps declined the op (the Python `build` goes on to the engine without
 * asking `run_op` again); None for the Python `build` (nothing done: a listener, no
 * system yet, a rule that raises, several outputs, an element-wise op over a view). */

static PyObject *s_memo;
static PyTypeObject *NumpyDtypeType;   /* numpy.dtype: a dtype attribute keys by identity */

/* Whether `value`'s type is one of `registry._PLAIN`'s (keyed by type and value). */
static int
plain_value(PyObject *value)
{
    PyTypeObject *t = Py_TYPE(value);
    return t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type ||
           t == &PyComplex_Type || t == &PyUnicode_Type || t == &PyBytes_Type ||
           value == Py_None;
}

/* Whether `value` is an object compared and hashed by identity (its class overrides
 * neither `__eq__` nor `__hash__`: a sentinel such as `elementwise.ARRAY`). */
static int
identity_value(PyObject *value)
{
    PyTypeObject *t = Py_TYPE(value);
    return t->tp_richcompare == PyBaseObject_Type.tp_richcompare &&
           t->tp_hash == PyBaseObject_Type.tp_hash;
}

/* `registry._value_key(value)` for the values C keys (new reference): a plain value, a
 * NumPy dtype or an object keyed by identity, `(type, value)`; a tuple of ints,
 * `(tuple, value)`; a tuple of such values, `(tuple, their keys)`. NULL, no error set,
 * for any other (a slice, a NumPy scalar, a list). */
static PyObject *
value_key(PyObject *value)
{
    if (PyTuple_CheckExact(value)) {
        Py_ssize_t n = PyTuple_GET_SIZE(value), i = 0;
        while (i < n && PyLong_CheckExact(PyTuple_GET_ITEM(value, i)))
            i++;
        if (i == n)   /* axes, shapes: ints alone */
            return PyTuple_Pack(2, (PyObject *)&PyTuple_Type, value);
        PyObject *items = PyTuple_New(n);
        for (i = 0; items != NULL && i < n; i++) {
            PyObject *item = value_key(PyTuple_GET_ITEM(value, i));
            if (item == NULL)
                Py_CLEAR(items);
            else
                PyTuple_SET_ITEM(items, i, item);
        }
        PyObject *key = items == NULL ? NULL : PyTuple_Pack(2, (PyObject *)&PyTuple_Type, items);
        Py_XDECREF(items);
        return key;
    }
    if (!plain_value(value) && !PyObject_TypeCheck(value, NumpyDtypeType) &&
            !identity_value(value))
        return NULL;
    return PyTuple_Pack(2, (PyObject *)Py_TYPE(value), value);
}

/* `registry.memo_key(specs, attrs)` of `inputs`' specs (new reference); NULL, no error
 * set, where an attribute is a value C does not key. */
static PyObject *
memo_key(PyObject *const *inputs, Py_ssize_t n, PyObject *attrs)
{
    Py_ssize_t n_attrs = PyDict_GET_SIZE(attrs), pos = 0, i = 0;
    int all_plain = 1;
    PyObject *name, *value;
    while (PyDict_Next(attrs, &pos, &name, &value))
        all_plain = all_plain && plain_value(value);
    Py_ssize_t size = 2 * n + (n_attrs == 0 ? 0 : all_plain ? 3 : 2 * n_attrs);
    PyObject *key = PyTuple_New(size);
    if (key == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *spec = SLOT(inputs[i], ArrayOff[A_SPEC]);
        PyTuple_SET_ITEM(key, 2 * i, Py_NewRef(SLOT(spec, SpecOff[P_SHAPE])));
        PyTuple_SET_ITEM(key, 2 * i + 1, Py_NewRef(SLOT(spec, SpecOff[P_DTYPE])));
    }
    if (n_attrs == 0)
        return key;
    PyObject *parts[3] = {NULL, NULL, NULL};   /* all plain: names, values, their types */
    for (int k = 0; all_plain && k < 3; k++)
        if ((parts[k] = PyTuple_New(n_attrs)) == NULL)
            goto fail;
    pos = 0;
    Py_ssize_t j = 0;
    while (PyDict_Next(attrs, &pos, &name, &value)) {
        if (all_plain) {
            PyTuple_SET_ITEM(parts[0], j, Py_NewRef(name));
            PyTuple_SET_ITEM(parts[1], j, Py_NewRef(value));
            PyTuple_SET_ITEM(parts[2], j, Py_NewRef((PyObject *)Py_TYPE(value)));
        } else {
            PyObject *item = value_key(value);
            if (item == NULL)
                goto fail;
            PyTuple_SET_ITEM(key, 2 * n + 2 * j, Py_NewRef(name));
            PyTuple_SET_ITEM(key, 2 * n + 2 * j + 1, item);
        }
        j++;
    }
    for (int k = 0; all_plain && k < 3; k++)
        PyTuple_SET_ITEM(key, 2 * n + k, parts[k]);
    return key;
fail:
    for (int k = 0; k < 3; k++)
        Py_XDECREF(parts[k]);
    Py_DECREF(key);
    return NULL;
}

/* The op's output specs (new reference) as `op.infer(*specs, **attrs)` answers: from the
 * rule's memo when it keeps one and knows the call, else by the rule. NULL, no error
 * set, where the Python `build` must ask (the rule raised: it raises again there, with
 * its note). */
static PyObject *
build_specs(PyObject *op, PyObject *const *inputs, Py_ssize_t n, PyObject *attrs)
{
    PyObject *rule = op_attr(op, O_INFER, s_infer);
    if (rule == NULL)
        return NULL;
    PyObject *memo = PyFunction_Check(rule) ? PyObject_GetAttr(rule, s_memo) : NULL;
    PyObject *found = NULL;
    if (memo != NULL && PyDict_CheckExact(memo)) {
        PyObject *key = memo_key(inputs, n, attrs);
        found = key == NULL ? NULL : PyDict_GetItemWithError(memo, key);
        Py_XINCREF(found);
        Py_XDECREF(key);
    }
    Py_XDECREF(memo);
    PyErr_Clear();
    if (found == NULL) {
        PyObject *specs[LEAN_INPUTS];
        for (Py_ssize_t i = 0; i < n; i++)
            specs[i] = SLOT(inputs[i], ArrayOff[A_SPEC]);
        found = PyObject_VectorcallDict(rule, specs, n, PyDict_GET_SIZE(attrs) ? attrs : NULL);
        if (found == NULL)
            PyErr_Clear();
    }
    Py_DECREF(rule);
    return found;
}

/* Whether `inputs` are NArrays of specs the lean path reads, and none a view where the
 * op is element-wise (`build` keeps such an op's order by its own path). */
static int
build_inputs(PyObject *op, PyObject *const *inputs, Py_ssize_t n)
{
    if (n < 1 || n > LEAN_INPUTS)
        return 0;
    int elementwise = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = inputs[i];
        if (!Py_IS_TYPE(x, NArrayType) || SLOT(x, ArrayOff[A_SPEC]) == NULL ||
                !Py_IS_TYPE(SLOT(x, ArrayOff[A_SPEC]), SpecType))
            return 0;
        if (SLOT(x, ArrayOff[A_VIEW]) != Py_None) {
            if (elementwise < 0 && (elementwise = op_true(op, O_ELEMENTWISE, s_elementwise)) < 0)
                return -1;
            if (elementwise)
                return 0;
        }
    }
    return 1;
}

static PyObject *
build_op(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || NArrayType == NULL || !PyDict_CheckExact(args[2]) ||
            PyDict_GET_SIZE(args[2]) > LEAN_KW ||
            !(PyList_CheckExact(args[1]) || PyTuple_CheckExact(args[1])))
        Py_RETURN_NONE;
    PyObject *op = args[0], *attrs = args[2];
    PyObject *const *inputs = PySequence_Fast_ITEMS(args[1]);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args[1]);
    PyObject *system;
    int quiet = quiet_seam(&system);
    if (quiet <= 0)
        return quiet < 0 ? NULL : Py_NewRef(Py_None);
    Py_DECREF(system);
    int readable = build_inputs(op, inputs, n);
    if (readable <= 0)
        return readable < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *specs = build_specs(op, inputs, n, attrs);
    if (specs == NULL)
        Py_RETURN_NONE;
    PyObject *result = Py_None, *spec = PyTuple_CheckExact(specs) && PyTuple_GET_SIZE(specs) == 1 ?
        PyTuple_GET_ITEM(specs, 0) : NULL;
    if (spec != NULL && Py_IS_TYPE(spec, SpecType)) {
        PyObject *kind = dtype_kind(SLOT(spec, SpecOff[P_DTYPE]));
        int numeric = kind == NULL ? -1 : PySequence_Contains(NumericKinds, kind);
        Py_XDECREF(kind);
        result = numeric < 0 ? NULL : numeric ? any_op_run(op, attrs, inputs, n, spec, NULL) :
            Py_NewRef(Py_None);
        if (result == Py_None && numeric) {   /* `run_op` declined: not to be asked again */
            Py_DECREF(result);
            result = Py_NewRef(Py_NotImplemented);
        }
    } else {
        Py_INCREF(result);
    }
    Py_DECREF(specs);
    return result;
}
