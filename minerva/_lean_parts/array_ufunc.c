/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- NumPy's scalar first: np.float64(h) * x --------------------------------------- */

/* `NArray.__array_ufunc__(ufunc, "__call__", s, x)` of a NumPy scalar `s` and an NArray
 * `x`, no keywords (NumPy hands `np.float64(h) * x` to `x` so): minerva's call of that
 * ufunc (`interop.FAST_UFUNC_CALLS`, filled when the namespace is installed: the C
 * operator of each Ufunc) called with `(s, x)`, as `interop.array_ufunc`'s first branch
 * does; anything else goes to the Python method. */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* interop.array_ufunc */
    PyObject *calls;       /* NumPy ufunc -> minerva's call of it (a dict) */
    PyObject *scalars;     /* the NumPy scalar types taken first (a frozenset) */
} ArrayUfunc;

static PyObject *s___call__;

static PyObject *
array_ufunc_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                       PyObject *kwnames)
{
    ArrayUfunc *self = (ArrayUfunc *)callable;
    if (PyVectorcall_NARGS(nargsf) == 5 && kwnames == NULL && PyUnicode_Check(args[2]) &&
            Py_IS_TYPE(args[4], NArrayType) &&
            PyUnicode_Compare(args[2], s___call__) == 0) {
        int first = PySet_Contains(self->scalars, (PyObject *)Py_TYPE(args[3]));
        if (first < 0)
            return NULL;
        PyObject *call = first ? PyDict_GetItemWithError(self->calls, args[1]) : NULL;
        if (call != NULL)
            return PyObject_Vectorcall(call, args + 3, 2, NULL);
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
array_ufunc_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *python, *calls, *scalars;
    static char *names[] = {"python", "calls", "scalars", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O!", names, &python, &PyDict_Type,
                                     &calls, &PyFrozenSet_Type, &scalars))
        return NULL;
    ArrayUfunc *self = (ArrayUfunc *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = array_ufunc_vectorcall;
    self->python = Py_NewRef(python);
    self->calls = Py_NewRef(calls);
    self->scalars = Py_NewRef(scalars);
    return (PyObject *)self;
}

static PyTypeObject ArrayUfuncType = WRAPPER_TYPE(
    "ArrayUfunc", "NArray's __array_ufunc__ taking NumPy's scalar-first call in C, in front of its "
    "Python twin.", ArrayUfunc, array_ufunc_new);
