"""Fixtures: a database recorded here with the build's cct-record.

CCT_BUILD_DIR names the build (meson's test sets it). Runs in the database,
oldest first: 1 and 2 the bundled example (tag v=base, then v=new), 3 the
thread-names test program (name "threads"): recorded once per test session.
"""

import json
import os
import subprocess

import pytest

BUILD = os.environ.get("CCT_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))


def tool(name):
    return os.path.join(BUILD, "tools", name)


def record(db, args, program):
    subprocess.run([tool("cct-record"), "-o", db, *args, "--", *program], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)


@pytest.fixture(scope="session")
def db_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("db")
    db = str(d / "cct.db")
    example = os.path.join(BUILD, "examples", "cct-example")
    record(db, ["--name", "example", "--tag", "v=base", "--freq", "997"], [example, "0.4"])
    record(db, ["--name", "example", "--tag", "v=new", "--freq", "997"], [example, "0.4"])
    threads = os.path.join(BUILD, "tests", "collector", "cct-test-thread-names")
    if not os.path.exists(threads):
        pytest.skip("the collector's test programs are not built (ninja -C build)")
    record(db, ["--name", "threads", "--freq", "997"], [threads])
    return db


def cct_query(db, *args):
    """cct-query's JSON output for the same request: the second opinion."""
    out = subprocess.run([tool("cct-query"), "-d", db, *args], check=True, capture_output=True, text=True,
                         timeout=60)
    return out.stdout


def cct_query_json(db, *args):
    return json.loads(cct_query(db, *args, "--format", "json"))


def cct_query_error(db, *args):
    """The one error line a failing cct-query prints, without 'cct-query: '."""
    out = subprocess.run([tool("cct-query"), "-d", db, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out
    line = out.stderr.strip().splitlines()[-1]
    assert line.startswith("cct-query: ")
    return line[len("cct-query: "):]


@pytest.fixture(scope="session")
def nvtx_db(tmp_path_factory):
    """Run 1: the NVTX test program cut into iterations by its ten "step"
    ranges (built only with the CUDA toolkit's NVTX headers)."""
    program = os.path.join(BUILD, "tests", "collector", "cct-test-nvtx-steps")
    if not os.path.exists(program):
        pytest.skip("cct-test-nvtx-steps is not built (no NVTX3 headers)")
    db = str(tmp_path_factory.mktemp("nvtx") / "nvtx.db")
    record(db, ["--name", "steps", "--iteration", "^step$"], [program])
    return db


@pytest.fixture(scope="session")
def trace_db(tmp_path_factory):
    """Run 1 ("traced"): the trace-phases test program recorded with
    --trace (main thread: phases A, B, a sleep, A again; a worker thread
    named "worker": C, a sleep, D; each phase inside an NVTX range named
    after it). Built only with the CUDA toolkit's NVTX headers."""
    program = os.path.join(BUILD, "tests", "collector", "cct-test-trace-phases")
    if not os.path.exists(program):
        pytest.skip("cct-test-trace-phases is not built (no NVTX3 headers)")
    db = str(tmp_path_factory.mktemp("trace") / "trace.db")
    record(db, ["--name", "traced", "--trace"], [program])
    return db
