/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- the operator type -------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the Python operator it stands in front of */
    PyObject *op;          /* the array-array op */
    PyObject *scalar_op;   /* the array-scalar op */
    PyObject *ufunc;       /* NumPy's ufunc for both */
    PyObject *names[2];    /* the two ops' names (a trace record's): op, scalar_op */
    int elides;            /* whether Python may elide a temporary operand */
    int reverse;           /* a reflected operator (`1.0 - x`): scalars only, on the left */
    int unary;             /* a one-operand op (`-x`, `np.exp(x)`): `op` alone */
    int in_place;          /* an in-place operator (`x += y`): written into `x` */
    int compares;          /* a comparison (`x < y`): numeric operands only, as in Python */
    int swaps;             /* a function `f(x1, x2)`: a scalar first, an array second, is
                              the reflected op over the array (`np.multiply(2.0, x)`) */
    int product;           /* a matrix product of two arrays: PRODUCT_MATMUL (`x @ y`), or
                              PRODUCT_DOT (`x.dot(y)`: matmul where y has at most 2 axes) */
} Operator;

enum { PRODUCT_NONE, PRODUCT_MATMUL, PRODUCT_DOT };

/* Whether an operand's `view` (Py_None: whole) is one the C path reads: `(shape,
 * strides, offset)` with plain int strides (no `ReadAs`), no empty axis, and — for an
 * operand of the result's shape — its strides largest first, so that NumPy's
 * `order='K'` result is C-ordered as the C path makes it (`builder._keep_order`). */
static int
plain_view(PyObject *view, PyObject *spec, PyObject *out)
{
    if (view == Py_None)
        return 1;
    if (!PyTuple_CheckExact(view) || PyTuple_GET_SIZE(view) != 3)
        return 0;
    PyObject *shape = PyTuple_GET_ITEM(view, 0), *strides = PyTuple_GET_ITEM(view, 1);
    if (!PyTuple_CheckExact(shape) || !PyTuple_CheckExact(strides) ||
            PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(strides) ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(view, 2)))
        return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(shape);
    long previous = -1;
    int full = PyObject_RichCompareBool(shape, SLOT(out, SpecOff[P_SHAPE]), Py_EQ);
    if (full < 0) {
        PyErr_Clear();
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *extent = PyTuple_GET_ITEM(shape, i), *stride = PyTuple_GET_ITEM(strides, i);
        if (!PyLong_CheckExact(extent) || !PyLong_CheckExact(stride) ||
                PyLong_AsLong(extent) == 0) {
            PyErr_Clear();
            return 0;
        }
        long size = labs(PyLong_AsLong(stride));
        if (full && previous >= 0 && size > previous)
            return 0;
        previous = size;
    }
    if (PyErr_Occurred()) {   /* a stride past a C long: the Python path */
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* Whether `b` is a scalar operand the C path takes: a Python float or int, or a NumPy
 * float or complex scalar (whose value never matters to a shape rule). */
static inline int
scalar_operand(PyObject *b)
{
    if (PyFloat_CheckExact(b) || PyLong_CheckExact(b))
        return 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(FloatScalars); i++)
        if ((PyObject *)Py_TYPE(b) == PyTuple_GET_ITEM(FloatScalars, i))
            return 1;
    return 0;
}

/* Whether Python int `value` lies in the range of an integer dtype of `kind` ("i" or
 * "u") and `itemsize` bytes (`comparisons.fits`): 1, 0, or -1 on error. */
static int
int_fits(PyObject *value, int is_unsigned, Py_ssize_t itemsize)
{
    int overflow;
    long long k = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (k == -1 && PyErr_Occurred())
        return -1;
    if (overflow || itemsize > 8)
        return 0;   /* past 64 bits: the Python path */
    if (is_unsigned)
        return k >= 0 && (itemsize == 8 || k < (1LL << (8 * itemsize)));
    long long top = itemsize == 8 ? LLONG_MAX : (1LL << (8 * itemsize - 1)) - 1;
    return k <= top && k >= -top - 1;
}

/* Whether a comparison of an array of `spec` with `scalar` (or an array: NULL) is one
 * `comparison_method` builds: a numeric array, and a Python int within the dtype's range
 * (any int against a float or complex array). */
static int
compared(PyObject *spec, PyObject *scalar)
{
    PyObject *dtype = SLOT(spec, SpecOff[P_DTYPE]);
    PyObject *kind;
    Py_ssize_t itemsize;
    if (dtype_facts(dtype, &kind, &itemsize) < 0)
        return -1;
    int numeric = PySequence_Contains(NumericKinds, kind);
    int is_signed = PyUnicode_CompareWithASCIIString(kind, "i") == 0;
    int is_unsigned = PyUnicode_CompareWithASCIIString(kind, "u") == 0;
    Py_DECREF(kind);
    if (numeric > 0 && scalar != NULL && PyLong_CheckExact(scalar) && (is_signed || is_unsigned))
        numeric = int_fits(scalar, is_unsigned, itemsize);
    return numeric;
}

/* The running system (`*system`, a new reference) when nothing listens at the
 * op-building seam: 1; 0 when the op must take the Python path (no system yet, or a
 * listener), -1 on error. */
static int
quiet_seam(PyObject **system)
{
    /* `Runtime.system`, a class attribute: read off the class's dict */
    *system = PyDict_GetItemWithError(((PyTypeObject *)Runtime)->tp_dict, s_system);
    if (*system == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (*system == Py_None) {
        *system = NULL;
        return 0;
    }
    int listened = seam_listened();
    if (listened == 0) {
        Py_INCREF(*system);
        return 1;
    }
    *system = NULL;
    return listened < 0 ? -1 : 0;
}

/* `a <op> b` on the lean path: a new handle, Py_None for the Python path, NULL on error. */
static PyObject *
operator_lean(Operator *self, PyObject *a, PyObject *b, int reverse)
{
    int scalar;
    if (self->product && (b == NULL || !Py_IS_TYPE(b, NArrayType)))
        Py_RETURN_NONE;   /* a product's operands are arrays */
    if (b == NULL)   /* a one-operand op */
        scalar = 0;
    else if (scalar_operand(b))
        scalar = 1;
    else if (Py_IS_TYPE(b, NArrayType) && !reverse)
        scalar = 0;
    else
        Py_RETURN_NONE;
    int binary = b != NULL && !scalar;
    PyObject *view_a = SLOT(a, ArrayOff[A_VIEW]), *view_b = binary ? SLOT(b, ArrayOff[A_VIEW]) :
        Py_None;
    if (view_a == NULL || view_b == NULL || (self->in_place && binary &&
            (view_a != Py_None || view_b != Py_None) &&
            SLOT(b, ArrayOff[A_STORAGE]) == SLOT(a, ArrayOff[A_STORAGE])))
        Py_RETURN_NONE;   /* a write of a view into its own storage: Python's */
    if (self->in_place && (SLOT(a, ArrayOff[A_READONLY]) != Py_False ||
                           SLOT(a, ArrayOff[A_SCALAR]) != Py_False))
        Py_RETURN_NONE;   /* read-only, or a NumPy scalar (rebound): the Python path */
    PyObject *spec = SLOT(a, ArrayOff[A_SPEC]);
    PyObject *other = b == NULL ? NULL : scalar ? b : SLOT(b, ArrayOff[A_SPEC]);
    if (spec == NULL || (b != NULL && other == NULL) || !Py_IS_TYPE(spec, SpecType))
        Py_RETURN_NONE;
    if (self->product == PRODUCT_DOT) {   /* a deeper y: `dot` sums another axis */
        PyObject *shape = SLOT(other, SpecOff[P_SHAPE]);
        if (shape == NULL || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > 2)
            Py_RETURN_NONE;
    }
    if (self->compares) {   /* `comparison_method`'s own cases: else NumPy's loops decide */
        int numeric = compared(spec, scalar ? b : NULL);
        if (numeric > 0 && binary)
            numeric = numeric_spec(other);
        if (numeric <= 0)
            return numeric < 0 ? NULL : Py_NewRef(Py_None);
    }
    if (self->elides && (spec_nbytes(spec) >= ElideBytes ||
                         (binary && spec_nbytes(other) >= ElideBytes)))
        Py_RETURN_NONE;   /* a temporary may be elided: Python's `_dying` decides */
    PyObject *system;
    int quiet = quiet_seam(&system);
    if (quiet <= 0)
        return quiet < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *op = scalar ? self->scalar_op : self->op;
    PyObject *result = Py_None;
    LeanOp L = {0};
    L.op = op;
    L.name = self->names[scalar];
    L.ufunc = self->ufunc;
    L.spec = out_spec(op, spec, other, scalar, reverse, self->compares);
    if (L.spec == NULL) {
        Py_DECREF(system);
        Py_RETURN_NONE;
    }
    if (!plain_view(view_a, spec, L.spec) ||
            (binary && !plain_view(view_b, other, L.spec))) {
        Py_DECREF(system);
        Py_DECREF(L.spec);
        Py_RETURN_NONE;   /* a view C does not read, or a result NumPy lays out otherwise */
    }
    L.views[0] = view_a == Py_None ? NULL : view_a;
    L.specs[0] = spec;
    if (binary) {
        L.views[1] = view_b == Py_None ? NULL : view_b;
        L.specs[1] = other;
    }
    if (self->in_place) {   /* written only where the result is the target's spec */
        if (L.spec != spec && !same_spec(L.spec, spec)) {
            Py_DECREF(system);
            Py_DECREF(L.spec);
            Py_RETURN_NONE;
        }
        Py_SETREF(L.spec, Py_NewRef(spec));   /* the canonical one's twin: the target's */
        L.written = SLOT(a, ArrayOff[A_STORAGE]);
        L.target_handle = a;
        L.write_view = L.views[0];   /* through `x`'s view: the elements it sees */
    }
    L.nbytes = spec_nbytes(L.spec);
    if (L.nbytes < 0) {
        Py_DECREF(system);
        Py_DECREF(L.spec);
        Py_RETURN_NONE;
    }
    L.inputs[0] = SLOT(a, ArrayOff[A_STORAGE]);
    if (binary)
        L.inputs[1] = SLOT(b, ArrayOff[A_STORAGE]);
    L.n_inputs = binary ? 2 : 1;
    int ok = 1;
    for (int i = 0; i < L.n_inputs; i++)
        ok &= L.inputs[i] != NULL && Py_IS_TYPE(L.inputs[i], StorageType);
    int prepared = ok ? lean_prepare(&L, system) : 0;
    Py_DECREF(system);
    if (prepared > 0) {
        PyObject *operands[2] = {NULL, scalar ? b : NULL};
        if (reverse) {
            operands[0] = b;
            operands[1] = NULL;
        }
        result = lean_run(&L, operands, b == NULL ? 1 : 2);
    } else if (prepared == 0) {
        Py_INCREF(Py_None);
    } else {
        result = NULL;
    }
    lean_clear(&L);
    Py_DECREF(L.spec);
    return result;
}

static PyObject *
operator_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                    PyObject *kwnames)
{
    Operator *self = (Operator *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n == 2 - self->unary && kwnames == NULL) {
        PyObject *result = NULL;
        if (Py_IS_TYPE(args[0], NArrayType))
            result = operator_lean(self, args[0], self->unary ? NULL : args[1], self->reverse);
        else if (self->swaps && Py_IS_TYPE(args[1], NArrayType) && scalar_operand(args[0]))
            result = operator_lean(self, args[1], args[0], 1);
        else
            result = Py_NewRef(Py_None);
        if (result != Py_None)
            return result;
        Py_DECREF(result);
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
operator_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *python, *op, *scalar_op, *ufunc;
    int elides, reverse = 0, unary = 0, in_place = 0, compares = 0, swaps = 0, product = 0;
    static char *names[] = {"python", "op", "scalar_op", "ufunc", "elides", "reverse",
                            "unary", "in_place", "compares", "swaps", "product", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOp|pppppi", names, &python, &op,
                                     &scalar_op, &ufunc, &elides, &reverse, &unary,
                                     &in_place, &compares, &swaps, &product))
        return NULL;
    if (product < PRODUCT_NONE || product > PRODUCT_DOT) {
        PyErr_SetString(PyExc_ValueError, "Operator: product is 0, 1 (matmul) or 2 (dot)");
        return NULL;
    }
    Operator *self = (Operator *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = operator_vectorcall;
    self->python = Py_NewRef(python);
    self->op = Py_NewRef(op);
    self->scalar_op = Py_NewRef(scalar_op);
    self->ufunc = Py_NewRef(ufunc);
    self->names[0] = PyObject_GetAttr(op, s_name);
    self->names[1] = PyObject_GetAttr(scalar_op, s_name);
    if (self->names[0] == NULL || self->names[1] == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->elides = elides;
    self->reverse = reverse;
    self->unary = unary;
    self->in_place = in_place;
    self->compares = compares;
    self->swaps = swaps;
    self->product = product;
    return (PyObject *)self;
}

static int
operator_traverse(Operator *self, visitproc visit, void *arg)
{
    Py_VISIT(self->python); Py_VISIT(self->op); Py_VISIT(self->scalar_op);
    Py_VISIT(self->ufunc); Py_VISIT(self->names[0]); Py_VISIT(self->names[1]);
    return 0;
}

static int
operator_clear(Operator *self)
{
    Py_CLEAR(self->python); Py_CLEAR(self->op); Py_CLEAR(self->scalar_op);
    Py_CLEAR(self->ufunc); Py_CLEAR(self->names[0]); Py_CLEAR(self->names[1]);
    return 0;
}

static void
operator_dealloc(Operator *self)
{
    PyObject_GC_UnTrack(self);
    operator_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject OperatorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minerva._lean.Operator",
    .tp_doc = "An NArray operator whose lean path runs in C, in front of its Python twin.",
    .tp_basicsize = sizeof(Operator),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = operator_new,
    .tp_traverse = (traverseproc)operator_traverse,
    .tp_clear = (inquiry)operator_clear,
    .tp_dealloc = (destructor)operator_dealloc,
    .tp_descr_get = wrapper_get,
    .tp_getattro = wrapper_getattro,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Operator, vectorcall),
    .tp_members = wrapper_members,
};
