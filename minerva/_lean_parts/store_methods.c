/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- the store's methods, in front of their Python twins ---------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the Python method it stands in front of */
    PyObject *kind;        /* the method's name: "free" or "alloc_array" (interned) */
} StoreMethod;

static PyObject *
store_method_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                        PyObject *kwnames)
{
    StoreMethod *self = (StoreMethod *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && n >= 1 && PooledType != NULL && Py_IS_TYPE(args[0], PooledType)) {
        if (self->kind == s_free && n == 2) {
            int done = pooled_free(args[0], args[1]);
            if (done != 0)
                return done < 0 ? NULL : Py_NewRef(Py_None);
        } else if (self->kind == s_alloc_array) {
            PyObject *pair = pooled_alloc_array(args[0], args + 1, n - 1);
            if (pair != Py_None)
                return pair;
            Py_DECREF(pair);
        }
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
store_method_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *python;
    const char *kind;
    static char *names[] = {"python", "kind", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Os", names, &python, &kind))
        return NULL;
    PyObject *method = strcmp(kind, "free") == 0 ? s_free :
                       strcmp(kind, "alloc_array") == 0 ? s_alloc_array : NULL;
    if (method == NULL) {
        PyErr_Format(PyExc_ValueError, "no C path for store method %s", kind);
        return NULL;
    }
    StoreMethod *self = (StoreMethod *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = store_method_vectorcall;
    self->python = Py_NewRef(python);
    self->kind = Py_NewRef(method);
    return (PyObject *)self;
}

static PyTypeObject StoreMethodType = WRAPPER_TYPE(
    "StoreMethod", "A pooled store's free or alloc_array with its O(1) path in C, in front "
    "of its Python twin.", StoreMethod, store_method_new);
