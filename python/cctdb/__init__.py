"""cctdb databases in pandas, Jupyter, Hatchet and Thicket.

    import cctdb
    db = cctdb.open("cct.db")
    db.runs()                       # one row per run, tags as columns
    run = db.run("latest")          # any cct-query selector
    run.tree(metrics=["cputime"])   # one row per node
    run.top(by="function")
    cctdb.diff(db.run("tag:v=base"), db.run("tag:v=new"))

Everything is read through the project's C++ libraries (the extension
_cctdb): the same selectors, reports and units as cct-query and cct-diff.
Failures raise cctdb.Error with the tools' one-line message. See
docs/python.md.
"""

import pkgutil as _pkgutil

# In a build tree the extension lies in build/python/cctdb/, beside (not in)
# this directory: PYTHONPATH=build/python:python finds both halves.
__path__ = _pkgutil.extend_path(__path__, __name__)

from . import _cctdb  # noqa: E402
from ._cctdb import Error  # noqa: E402
from . import _frames, _html, _hatchet  # noqa: E402

__all__ = ["open", "diff", "to_thicket", "Database", "Run", "Error"]

_GROUP_BY = ("function", "kernel", "nvtx", "line", "module")
_TIMELINE_BY = ("function", "range", "nvtx", "node")


def open(path=None):  # noqa: A001 - the package's entry point, as in the issue
    """Opens a database file (default: $CCT_DB, else ./cct.db); cctdb.Error
    when it is missing, not a database, damaged where opening reads, or from
    a newer format version. Run records are read by the calls that need
    them (a damaged one is their cctdb.Error)."""
    db = Database(_cctdb.default_db(path or ""))
    db._check()
    return db


class Database:
    """A cctdb database file. Holds only its path: every call opens the file
    read-only for its own duration, so a Database is safe to share between
    threads and sees runs recorded meanwhile."""

    def __init__(self, path):
        self.path = path

    def _check(self):
        _cctdb.check_opens(self.path)

    def __repr__(self):
        return "cctdb.Database(%r)" % self.path

    def runs(self, selector=None):
        """The runs (a selector's, when given) as a DataFrame, oldest first."""
        import json

        return _frames.runs_frame(json.loads(_cctdb.runs(self.path, selector or "")))

    def run(self, selector="latest"):
        """The run, group (tag:K=V), invocation (SEL/all) or iteration
        (SEL@iter=K) a cct-query selector names; cctdb.Error when it names
        none or does not parse."""
        ids = _cctdb.select(str(selector), self.path)
        return Run(self, str(selector), ids)

    def _repr_html_(self):
        return _html.frame_html(self.runs(), caption=self.path)


class Run:
    """What a selector names in a database: one run, a group of runs
    (averaged), an invocation (totalled) or iterations. `ids` are the runs'
    ids, resolved when the Run was made; the reports re-read the selector,
    as cct-query does."""

    def __init__(self, db, selector, ids):
        self.db = db
        self.selector = selector
        self.ids = list(ids)

    def __repr__(self):
        return "cctdb.Run(%r, %r, runs=%r)" % (self.db.path, self.selector, self.ids)

    @property
    def id(self):
        """The run id (the first of a group)."""
        return self.ids[0]

    def meta(self):
        """The runs' metadata (db.runs() rows of these runs)."""
        return self.db.runs(self.selector.split("@iter=")[0])

    def _report(self, command, args=(), **kw):
        return _cctdb.report(command, [self.selector, *args], self.db.path, **kw)

    def tree(self, metrics=None, lines=False, merge_threads=False, path=True):
        """One row per node (the root left out), in preorder: node, parent
        (-1 under the root), depth, kind, name, function (a function's name,
        a source line's enclosing function, else ""), module, file, line,
        path and
        per metric "M (inc)" and "M (exc)" in export units (seconds for
        times), as `cct-query export --to csv`. metrics: names or NAME=EXPR
        definitions (default: all of the run's)."""
        cols = _cctdb.tree(self.selector, self.db.path, _metric_list(metrics), lines, merge_threads, "", path)
        return _frames.tree_frame(cols, self)

    def query(self, text, metrics=None, lines=False, merge_threads=False):
        """The nodes on the paths a path query (docs/query.md) matches, as
        tree() lays them out, with a boolean column `match` where a matching
        path ends; cctdb.Error when the query does not parse or matches
        nothing."""
        cols = _cctdb.tree(self.selector, self.db.path, _metric_list(metrics), lines, merge_threads, text, True)
        return _frames.tree_frame(cols, self)

    def top(self, by="function", metrics=None, n=0, query=None, exclusive=False):
        """`cct-query top --by BY`: per group its name, kind, module, file,
        line, node count and per metric "M (inc)"/"M (exc)"; n rows (0: all)."""
        if by not in _GROUP_BY:
            raise Error("unknown --by '%s' (expected %s)" % (by, "|".join(_GROUP_BY)))
        text = self._report("top", metrics=_metric_list(metrics), by=by, format="json", limit=n,
                            query=query or "", exclusive=exclusive)
        return _frames.top_frame(text)

    def iterations(self, metric=None, range=None):  # noqa: A002 - cct-query's option name
        """`cct-query iterations`: per iteration its start (s from the run's
        start), start_time_ns, duration (s), total of the metric and share.
        range: the instances of that NVTX range in the run's trace instead
        (`--range`, a run recorded with --trace)."""
        text = self._report("iterations", metrics=_metric_list(metric), format="json", range=range)
        return _frames.iterations_frame(text)

    def timeline(self, by="function", bucket_ms=None, thread=None, start=None, end=None):
        """`cct-query timeline` of a run recorded with --trace: one row per
        (bucket, track) with bucket_start_s (from the trace's start), track
        (a thread or GPU stream), item (the hottest function, range or node
        by `by`; None where idle), samples and share. thread: a pattern on
        the track names; start, end: as --from/--to ("1.5", "200ms")."""
        if by not in _TIMELINE_BY:
            raise Error("unknown --by '%s' (expected %s)" % (by, "|".join(_TIMELINE_BY)))
        text = self._report("timeline", by=by, format="json", bucket_ms=bucket_ms, thread=thread,
                            start=None if start is None else str(start), end=None if end is None else str(end))
        return _frames.timeline_frame(text)

    def derive(self, operations, name, tags=None, replace=False, metric=None):
        """`cct-query derive`: applies operations in order, e.g.
        [("query", "**/train/**"), ("merge-threads", "mean"),
        ("normalize", "per-iteration")], stores the result as a new run
        named `name` and returns it. Options: drop, query, keep-min,
        merge-threads, normalize (docs/cli.md)."""
        ops = [(str(o).lstrip("-"), str(v)) for o, v in operations]
        import json

        out = json.loads(self._report("derive", operations=ops, name=name, tags=dict(tags or {}),
                                      replace=replace, metrics=_metric_list(metric), format="json"))
        return self.db.run(str(out["id"]))

    def flame(self, metric=None, title=None):
        """The flame graph (SVG text) `cct-query flame` writes."""
        return self._report("flame", metrics=_metric_list(metric), title=title)

    def export(self, to, metrics=None):
        """`cct-query export --to TO`: the exporter's output, as bytes for
        the binary formats (pprof, perfetto) and as text for the others."""
        return _cctdb.export(self.selector, self.db.path, to, _metric_list(metrics))

    def to_hatchet(self, metrics=None):
        """A Hatchet GraphFrame of this run (needs hatchet importable)."""
        return _hatchet.graphframe(self, metrics)

    def to_thicket(self, metrics=None):
        """A Thicket of this group's runs (cctdb.to_thicket)."""
        return to_thicket(self, metrics)

    def _repr_html_(self):
        return _html.run_html(self)


def diff(base, candidate, metrics=None, threshold=None, min_abs=None, alpha=None, normalize=None,
         fold_recursion=False, normalize_total=False, merge_threads=False, n=0):
    """cct-diff BASE CANDIDATE: a DiffResult whose DataFrames hold what
    cct-diff prints (totals; regressions, improvements, new and gone
    subtrees with p-values and intervals for groups). base and candidate
    are Runs of one database, or selector strings (with a database path
    prefix, PATH:SEL, or relative to $CCT_DB). Options as cct-diff's."""
    db = None
    for side in (base, candidate):
        if isinstance(side, Run):
            db = side.db.path
            break
    if normalize not in (None, "kernels"):
        raise Error("unknown normalize '%s' (expected kernels)" % normalize)

    def sel(x):
        if isinstance(x, Run):
            # A Run of another database than the first Run's: PATH:SEL.
            return x.selector if x.db.path == db else x.db.path + ":" + x.selector
        return str(x)

    text = _cctdb.diff(sel(base), sel(candidate), db or _cctdb.default_db(""), _metric_list(metrics),
                       None if threshold is None else str(threshold), None if min_abs is None else str(min_abs),
                       alpha, normalize == "kernels", fold_recursion, normalize_total, merge_threads, n)
    return _frames.DiffResult(text)


def to_thicket(runs, metrics=None):
    """A Thicket of several Runs, or of a group's runs (a Run of tag:K=V),
    one profile per run through to_hatchet(); ImportError with what to
    install when thicket is not importable."""
    if isinstance(runs, Run):
        runs = [runs.db.run(str(i)) for i in runs.ids]
    return _hatchet.thicket(list(runs), metrics)


def _metric_list(metrics):
    if metrics is None:
        return []
    if isinstance(metrics, str):
        return [metrics]
    return [str(m) for m in metrics]
