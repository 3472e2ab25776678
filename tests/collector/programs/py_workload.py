# The Python-frame tests' workload (tests/collector/python_test.cc).
#   py_workload.py split    alpha 0.6 s, beta 0.3 s on a threading.Thread,
#                           gamma recursing 30 deep, native_work (0.4 s in
#                           the C extension); prints "MEASURED NAME NS" from
#                           time.thread_time(), as the native programs do
#   py_workload.py pure     alpha, beta and gamma only (no extension)
#   py_workload.py shapes   a generator, a coroutine, an exception through
#                           50 frames, with SIGALRM from signal.setitimer
#   py_workload.py threads  1,000 short threading.Threads
#   py_workload.py names    threads named by threading (given, default,
#                           renamed while running, started by a thread,
#                           a pool's, a daemon still running at exit);
#                           prints "THREAD NAME<tab>FUNCTION" for each, the
#                           name Python gives the thread as the function ends
#   py_workload.py finalize two daemon threads hashing (without the GIL)
#                           while the interpreter finalizes, and an object
#                           whose __del__ burns 0.3 s then (finalizing_burn,
#                           printed as MEASURED)
#   py_workload.py broken   spin_broken_state 0.3 s (the C extension, this
#                           thread's frame chunks unmapped meanwhile), then
#                           after_broken 0.2 s of Python; both MEASURED
#   py_workload.py nvtx     NVTX ranges pushed from Python (C extension)
#   py_workload.py nvtx_native  a range pushed by a C function that then
#                           spins 0.2 s natively before Python goes on in it
#   py_workload.py pool     a multiprocessing pool started and terminated
#                           (its workers get SIGTERM as they exit)
#   py_workload.py gpu LIB  kernels launched from Python through the tests'
#                           fake CUDA (libcct-test-fakegpu.so, by ctypes)
import asyncio
import os
import signal
import sys
import threading
import time

# The C extension (built for the system's python3); `pure` and `gpu` need none, so
# that any CPython can run it.
if sys.argv[1] not in ("pure", "gpu", "pool", "names", "daemons", "finalize"):
    import cct_test_ext as ext


def measured(name, seconds):
    print(f"MEASURED {name} {int(seconds * 1e9)}", flush=True)


def alpha():
    t0 = time.thread_time()
    s = 0
    while time.thread_time() - t0 < 0.6:
        s += 1
    measured("alpha", time.thread_time() - t0)


def beta():
    t0 = time.thread_time()
    s = 0
    while time.thread_time() - t0 < 0.3:
        s += 1
    measured("beta", time.thread_time() - t0)


def gamma(n):
    if n == 0:
        t0 = time.thread_time()
        while time.thread_time() - t0 < 0.2:
            pass
        return
    gamma(n - 1)


def native_work():
    t0 = time.thread_time()
    ext.spin(0.4)
    measured("native_work", time.thread_time() - t0)


def burn(seconds):
    t0 = time.thread_time()
    while time.thread_time() - t0 < seconds:
        pass


def pure():
    th = threading.Thread(target=beta, name="beta-thread")
    th.start()
    alpha()
    th.join()
    t0 = time.thread_time()
    gamma(30)
    measured("gamma", time.thread_time() - t0)


def split():
    pure()
    native_work()
    # A Python function called back from C: a second C-level eval call.
    t0 = time.thread_time()
    ext.call(called_from_c)
    measured("called_from_c", time.thread_time() - t0)


def called_from_c():
    burn(0.2)


def generator():
    for _ in range(4):
        burn(0.05)
        yield 1


async def coroutine():
    await asyncio.sleep(0)
    burn(0.15)


def raiser(n):
    if n == 0:
        burn(0.1)
        raise ValueError("deep")
    raiser(n - 1)


def shapes():
    alarms = [0]

    def on_alarm(signum, frame):
        alarms[0] += 1

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
    total = sum(generator())
    asyncio.run(coroutine())
    try:
        raiser(49)  # 50 raiser frames
    except ValueError:
        pass
    signal.setitimer(signal.ITIMER_REAL, 0)
    print(f"GENERATED {total}", flush=True)
    print(f"ALARMS {alarms[0]}", flush=True)


def short():
    burn(0.0005)


def threads():
    for batch in range(10):
        ts = [threading.Thread(target=short) for _ in range(100)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    print("THREADS 1000", flush=True)


print_lock = threading.Lock()


def ran(function):
    with print_lock:  # print writes the line and its end separately
        print(f"THREAD {threading.current_thread().name}\t{function}", flush=True)


def named_worker():
    burn(0.2)
    ran("named_worker")


def default_worker():
    burn(0.2)
    ran("default_worker")


def renamed_worker():
    burn(0.3)  # named by its first name first
    threading.current_thread().name = "renamed while running"
    burn(0.9)
    ran("renamed_worker")


def brief_worker():
    burn(0.01)  # ends before the collector's thread asks for names (3.12+: named at start)
    ran("brief_worker")


def inner_starter():
    # Started by a thread while the main one waits in join(): its name must
    # not wait for the main thread to run Python code.
    t = threading.Thread(target=inner_worker, name="started by a thread")
    t.start()
    t.join()


def inner_worker():
    burn(0.2)
    ran("inner_worker")


def pool_task():
    burn(0.1)
    ran("pool_task")


daemon_ran = threading.Event()


def daemon_spin():
    burn(0.2)
    ran("daemon_spin")
    daemon_ran.set()
    while True:  # still running as the interpreter finalizes
        burn(0.01)


def spin():
    while True:
        pass


def daemons():
    for i in range(3):
        threading.Thread(target=spin, name=f"daemon {i}", daemon=True).start()
    time.sleep(float(sys.argv[2]))


def names():
    from concurrent.futures import ThreadPoolExecutor
    threading.Thread(target=daemon_spin, name="daemon at exit", daemon=True).start()
    ts = [threading.Thread(target=named_worker, name="wörker ✓"), threading.Thread(target=default_worker),
          threading.Thread(target=renamed_worker), threading.Thread(target=inner_starter, name="starter"),
          threading.Thread(target=brief_worker, name="brief")]
    for t in ts:
        t.start()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="pool") as ex:
        for f in [ex.submit(pool_task) for _ in range(4)]:
            f.result()
    for t in ts:
        t.join()
    daemon_ran.wait()


def hash_forever(block, started):
    import hashlib
    hashlib.sha256(block).digest()
    started.release()
    while True:  # still hashing as the interpreter frees this thread's state
        hashlib.sha256(block).digest()


def after_broken():
    t0 = time.thread_time()
    burn(0.2)
    measured("after_broken", time.thread_time() - t0)


def broken():
    t0 = time.thread_time()
    ext.spin_broken_state(0.3)
    measured("cct_ext_spin_broken_state", time.thread_time() - t0)
    after_broken()


def finalizing_burn(clock=time.thread_time, write=os.write):
    # Runs from __del__ as the module's globals are cleared: what it uses is
    # bound here, and sys.stdout may be gone.
    t0 = clock()
    while clock() - t0 < 0.3:
        pass
    write(1, f"MEASURED finalizing_burn {int((clock() - t0) * 1e9)}\n".encode())


class BurnsAtExit:
    def __del__(self, burn=finalizing_burn):
        burn()


def finalize():
    import types
    block = bytes(32 << 20)  # hashlib lets go of the GIL for the whole block
    started = threading.Semaphore(0)
    for i in range(2):
        threading.Thread(target=hash_forever, args=(block, started), name=f"hasher {i}", daemon=True).start()
    for i in range(2):
        started.acquire()
    # Held by a module of its own: __main__'s globals outlive finalization,
    # the daemon threads' frames still refer to them.
    holder = types.ModuleType("burns_at_exit")
    holder.burner = BurnsAtExit()
    sys.modules["burns_at_exit"] = holder


def inside_range():
    burn(0.2)


def with_range():
    ext.push("py-range")
    inside_range()
    ext.pop()


def with_native_range():
    ext.push_spin("py-native-range", 0.2)
    inside_range()
    ext.pop()


def timed_pusher(pusher):
    """Runs `pusher`, printing whether NVTX is built in and its CPU time."""
    print(f"NVTX available {ext.HAVE_NVTX}", flush=True)
    t0 = time.thread_time()
    pusher()
    measured(pusher.__name__, time.thread_time() - t0)


def square(n):
    return n * n


def pool():
    import multiprocessing
    t0 = time.monotonic()
    with multiprocessing.get_context("fork").Pool(2) as p:
        total = sum(p.map(square, range(8)))
    print(f"POOL {total} {time.monotonic() - t0:.3f}", flush=True)


class Model:
    def __init__(self, cuda):
        self.cuda = cuda

    def forward(self):
        # scale_kernel(float*, int, float), 1 ms of GPU time, 3 launches
        for _ in range(3):
            self.cuda.fakecuda_launch(b"_Z12scale_kernelPfif", 64, 256, 32, 1000000)


def step(model):
    model.forward()


def gpu():
    import ctypes
    cuda = ctypes.CDLL(sys.argv[2])
    cuda.fakecuda_init()
    cuda.fakecuda_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint16,
                                     ctypes.c_uint64]
    cuda.fakecuda_sync.argtypes = [ctypes.c_uint64]
    step(Model(cuda))
    cuda.fakecuda_sync(1000000)
    burn(0.05)


if __name__ == "__main__":
    {"pure": pure, "split": split, "shapes": shapes, "threads": threads, "nvtx": lambda: timed_pusher(with_range),
     "nvtx_native": lambda: timed_pusher(with_native_range), "gpu": gpu,
     "pool": pool, "names": names, "daemons": daemons, "finalize": finalize,
     "broken": broken}[sys.argv[1]]()
