// cct_test_ext: a CPython extension for the Python-frame tests
// (tests/collector/python_test.cc): native work called from Python, a
// Python callable called from C (a second C-level eval call), and NVTX
// ranges pushed from Python through the NVTX3 headers.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <time.h>
#ifdef CCT_TEST_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

static double ThreadSeconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// Not static and not inlined: the test looks for this frame by name.
extern "C" __attribute__((noinline)) double cct_ext_spin_native(double seconds) {
  const double t0 = ThreadSeconds();
  volatile double x = 0;
  while (ThreadSeconds() - t0 < seconds)
    for (int i = 0; i < 1000; ++i) x = x + i * 0.5;
  return x;
}

static PyObject* Spin(PyObject* self, PyObject* args) {
  (void)self;
  double seconds = 0;
  if (!PyArg_ParseTuple(args, "d", &seconds)) return NULL;
  return PyFloat_FromDouble(cct_ext_spin_native(seconds));
}

// Named as the test looks for it (C linkage: no C++ signature in the name).
extern "C" PyObject* cct_ext_call(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* fn = NULL;
  if (!PyArg_ParseTuple(args, "O", &fn)) return NULL;
  return PyObject_CallNoArgs(fn);
}

static PyObject* Push(PyObject* self, PyObject* args) {
  (void)self;
  const char* name = NULL;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
#ifdef CCT_TEST_NVTX
  nvtxRangePushA(name);
#endif
  Py_RETURN_NONE;
}

// Pushes NAME, then spins SECONDS natively before returning: samples taken
// after the push inside the C function that made it (the push call's own
// frames, briefly, in every push; here for long enough to be sampled).
static PyObject* PushSpin(PyObject* self, PyObject* args) {
  (void)self;
  const char* name = NULL;
  double seconds = 0;
  if (!PyArg_ParseTuple(args, "sd", &name, &seconds)) return NULL;
#ifdef CCT_TEST_NVTX
  nvtxRangePushA(name);
#endif
  return PyFloat_FromDouble(cct_ext_spin_native(seconds));
}

static PyObject* Pop(PyObject* self, PyObject* args) {
  (void)self;
  (void)args;
#ifdef CCT_TEST_NVTX
  nvtxRangePop();
#endif
  Py_RETURN_NONE;
}

// Spins SECONDS natively with this thread's data-stack chunk pointer aimed
// at unmapped memory: what a sampler reading the thread's frames finds when
// the interpreter frees the thread's state in the middle of the read. The
// interpreter itself does not look meanwhile (no Python frame is pushed or
// popped); the pointer is put back before returning. 3.11+ (3.10 has no
// chunks): returns None elsewhere.
extern "C" __attribute__((noinline)) double cct_ext_spin_broken_state(double seconds) {
#if PY_VERSION_HEX >= 0x030B0000
  PyThreadState* ts = PyThreadState_Get();
  _PyStackChunk* const chunk = ts->datastack_chunk;
  *static_cast<_PyStackChunk* volatile*>(&ts->datastack_chunk) = reinterpret_cast<_PyStackChunk*>(16);
  const double x = cct_ext_spin_native(seconds);
  *static_cast<_PyStackChunk* volatile*>(&ts->datastack_chunk) = chunk;
  return x;
#else
  return cct_ext_spin_native(seconds);
#endif
}

static PyObject* SpinBrokenState(PyObject* self, PyObject* args) {
  (void)self;
  double seconds = 0;
  if (!PyArg_ParseTuple(args, "d", &seconds)) return NULL;
  return PyFloat_FromDouble(cct_ext_spin_broken_state(seconds));
}

static PyMethodDef kMethods[] = {
    {"spin_broken_state", SpinBrokenState, METH_VARARGS,
     "burn SECONDS natively with this thread's frame chunks pointing at unmapped memory"},
    {"spin", Spin, METH_VARARGS, "burn SECONDS of thread CPU time in native code"},
    {"call", cct_ext_call, METH_VARARGS, "call a Python callable from C"},
    {"push", Push, METH_VARARGS, "nvtxRangePushA(NAME)"},
    {"push_spin", PushSpin, METH_VARARGS, "nvtxRangePushA(NAME), then spin SECONDS natively"},
    {"pop", Pop, METH_NOARGS, "nvtxRangePop()"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "cct_test_ext", NULL, -1, kMethods,
                                     NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_cct_test_ext(void) {
  PyObject* m = PyModule_Create(&kModule);
#ifdef CCT_TEST_NVTX
  if (m != NULL) PyModule_AddIntConstant(m, "HAVE_NVTX", 1);
#else
  if (m != NULL) PyModule_AddIntConstant(m, "HAVE_NVTX", 0);
#endif
  return m;
}
