"""Hatchet and Thicket objects from cctdb runs.

A run goes to Hatchet through `cct-query export --to hatchet`, Hatchet's
literal format (src/exporters/hatchet.cc), read by
hatchet.GraphFrame.from_literal: one graph node per cctdb node, threads as
nodes of type "thread" (not as an index level), so the GraphFrame's
dataframe is indexed by node alone and tree() works on multi-threaded
runs."""

import json

_NO_HATCHET = ("to_hatchet() needs the hatchet package (pip install llnl-hatchet); "
               "without it, run.export('hatchet') gives the same data as Hatchet's literal format")
_NO_THICKET = ("to_thicket() needs the thicket package (pip install llnl-thicket); "
               "cctdb.to_thicket() builds on run.to_hatchet()")


def literal(run, metrics=None):
    """The run in Hatchet's literal format, as Python lists and dicts."""
    from . import _metric_list

    return json.loads(run.export("hatchet", _metric_list(metrics)))


def graphframe(run, metrics=None):
    try:
        import hatchet
    except ImportError as e:
        raise ImportError(_NO_HATCHET) from e
    lit = literal(run, metrics)
    gf = hatchet.GraphFrame.from_literal(lit)
    # Hatchet's default metric is "time"; ours are named as in the database.
    exc = [m for m in (lit[0]["metrics"] if lit else {}) if not m.endswith(" (inc)")]
    if exc:
        gf.default_metric = exc[0]
    return gf


def thicket(runs, metrics=None):
    """A Thicket of several runs (one profile per run, by run id)."""
    try:
        import thicket as th
    except ImportError as e:
        raise ImportError(_NO_THICKET) from e
    frames = [r.to_hatchet(metrics) for r in runs]
    profiles = [r.id for r in runs]
    return th.Thicket.from_graphframes(frames, profiles) if hasattr(th.Thicket, "from_graphframes") else \
        th.Thicket.concat_thickets([th.Thicket.thicketize_graphframe(g, p) for g, p in zip(frames, profiles)])
