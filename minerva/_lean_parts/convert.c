/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- float(x), int(x), bool(x), operator.index(x) at once ---------------------------- */

/* In front of `NArray.__float__`, `__int__`, `__bool__` and `__index__`: a 0-d array (for
 * `bool`, any array of one element), whole, computed on a CPU device with no write
 * pending (what `x[i]` reads at once, `element_read`), gives its element — NumPy's
 * scalar, as `NArray._scalar` reads it — converted as Python converts that scalar
 * (`float(s)`, `int(s)`, `bool(s)`; `operator.index(s)` of an integer one). Anything
 * else — an array with axes for the others, a view, a pending value, a recording, a
 * complex 0-d array that is not a NumPy scalar, another dtype for `__index__` — goes to
 * the Python method, which waits, raises NumPy's errors, or reads it its own way. */

enum { TO_FLOAT, TO_INT, TO_BOOL, TO_INDEX };

/* Whether `x`'s one element converts as `x` does (1; 0 where not, -1 on error): a
 * number, and a NumPy scalar where it is complex (a complex 0-d array refuses `float`,
 * its scalar warns and gives the real part). */
static int
converts_as_scalar(PyObject *x)
{
    PyObject *kind = dtype_kind(SLOT(SLOT(x, ArrayOff[A_SPEC]), SpecOff[P_DTYPE]));
    if (kind == NULL)
        return -1;
    int numeric = PySequence_Contains(NumericKinds, kind);
    int complex = PyUnicode_CompareWithASCIIString(kind, "c") == 0;
    Py_DECREF(kind);
    return numeric <= 0 ? numeric : !complex || SLOT(x, ArrayOff[A_SCALAR]) == Py_True;
}

/* The one element of `x` (new reference) for the conversion `to`, Py_None for the
 * Python path. */
static PyObject *
only_element(PyObject *x, int to)
{
    PyObject *spec = SLOT(x, ArrayOff[A_SPEC]), *storage = SLOT(x, ArrayOff[A_STORAGE]);
    if (SLOT(x, ArrayOff[A_VIEW]) != Py_None || spec == NULL || !Py_IS_TYPE(spec, SpecType) ||
            storage == NULL || !Py_IS_TYPE(storage, StorageType))
        Py_RETURN_NONE;
    PyObject *shape = SLOT(spec, SpecOff[P_SHAPE]);
    if (shape == NULL || !PyTuple_CheckExact(shape))
        Py_RETURN_NONE;
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim > 0 && to != TO_BOOL)   /* an array with axes: the Python method's */
        Py_RETURN_NONE;
    PyObject *key = PyTuple_New(ndim);   /* (0, ..., 0): every axis of length 1 */
    for (Py_ssize_t i = 0; key != NULL && i < ndim; i++) {
        PyObject *n = PyTuple_GET_ITEM(shape, i);
        if (!PyLong_CheckExact(n) || PyLong_AsSsize_t(n) != 1) {
            PyErr_Clear();
            Py_DECREF(key);
            Py_RETURN_NONE;
        }
        PyTuple_SET_ITEM(key, i, Py_NewRef(Zero));
    }
    if (key == NULL)
        return NULL;
    PyObject *element = element_read(x, key);
    Py_DECREF(key);
    return element;
}

/* The conversion `to` of `args[0]` at once, else by the Python method of `callable`. */
static PyObject *
convert(int to, PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *python = ((Wrapper *)callable)->python;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL || NArrayType == NULL ||
            !Py_IS_TYPE(args[0], NArrayType))
        return PyObject_Vectorcall(python, args, nargsf, kwnames);
    PyObject *element = only_element(args[0], to);
    if (element == NULL)
        return NULL;
    int plain = element == Py_None ? 0 : converts_as_scalar(args[0]);
    if (plain < 0) {
        Py_DECREF(element);
        return NULL;
    }
    if (element == Py_None || !plain || (to == TO_INDEX && !int_scalar(element))) {
        Py_XDECREF(element);   /* the Python method reads it, or raises NumPy's words */
        return PyObject_Vectorcall(python, args, nargsf, kwnames);
    }
    PyObject *result;
    if (to == TO_BOOL) {
        int truth = PyObject_IsTrue(element);
        result = truth < 0 ? NULL : PyBool_FromLong(truth);
    } else {
        result = to == TO_FLOAT ? PyNumber_Float(element) :
                 to == TO_INT ? PyNumber_Long(element) : PyNumber_Index(element);
    }
    Py_DECREF(element);
    return result;
}

#define CONVERT_TYPE(C_NAME, NAME, TO, DOC)                                              \
static PyObject *                                                                        \
C_NAME##_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,            \
                    PyObject *kwnames)                                                   \
{                                                                                        \
    return convert(TO, callable, args, nargsf, kwnames);                                 \
}                                                                                        \
static PyObject *                                                                        \
C_NAME##_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)                       \
{                                                                                        \
    return wrapper_new(type, args, kwargs, C_NAME##_vectorcall);                         \
}                                                                                        \
static PyTypeObject C_NAME##Type = WRAPPER_TYPE(NAME, DOC, Wrapper, C_NAME##_new);

CONVERT_TYPE(ToFloat, "ToFloat", TO_FLOAT, "NArray.__float__ in C, in front of its twin.")
CONVERT_TYPE(ToInt, "ToInt", TO_INT, "NArray.__int__ in C, in front of its twin.")
CONVERT_TYPE(ToBool, "ToBool", TO_BOOL, "NArray.__bool__ in C, in front of its twin.")
CONVERT_TYPE(ToIndex, "ToIndex", TO_INDEX, "NArray.__index__ in C, in front of its twin.")
