"""Columns and report JSON from the extension, as pandas DataFrames.

The extension hands trees over as numpy arrays (strings as categorical codes
into the distinct strings); reports as the JSON cct-query and cct-diff print.
Nothing here reads the database or computes a value: it only lays out."""

import json

import numpy as np
import pandas as pd

# Run metadata columns, in this order, before the tags.
_RUN_COLUMNS = ["id", "name", "state", "start", "duration", "command", "host", "git_commit", "cwd", "source",
                "exit_code", "term_signal", "parent_run", "root_run", "nodes", "cpu_model", "gpu_model",
                "driver_version", "cuda_version", "collector_version", "user", "executable", "iteration_regex"]


def runs_frame(runs):
    rows = []
    for r in runs:
        row = {
            "id": r.get("id"),
            "name": r.get("name", ""),
            "state": r.get("state", ""),
            "start": r.get("start_time_ns", 0),
            "duration": r.get("duration_ns", 0) / 1e9,
            "command": " ".join(r.get("command") or []),
            "host": r.get("host", ""),
            "git_commit": r.get("git_commit", ""),
            "cwd": r.get("cwd", ""),
            "source": r.get("source", ""),
            "exit_code": r.get("exit_code"),
            "term_signal": r.get("term_signal"),
            "parent_run": r.get("parent_run", 0),
            "root_run": r.get("root_run", 0),
            "nodes": r.get("node_count", 0),
        }
        for k in _RUN_COLUMNS[15:]:
            row[k] = r.get(k, "")
        for k, v in (r.get("tags") or {}).items():
            row["tag:" + k] = v
        rows.append(row)
    df = pd.DataFrame(rows, columns=None if rows else _RUN_COLUMNS)
    df["start"] = pd.to_datetime(df["start"].astype("int64"), unit="ns", utc=True)
    for c in ("id", "parent_run", "root_run", "nodes"):
        df[c] = df[c].astype("int64")
    for c in ("exit_code", "term_signal"):
        df[c] = df[c].astype("Int64")
    df["duration"] = df["duration"].astype("float64")
    df["state"] = df["state"].astype("category")
    return df


def _categorical(codes, names):
    return pd.Categorical.from_codes(codes, categories=pd.Index(names, dtype=object))


def tree_frame(cols, run=None):
    data = {
        "node": cols["node"],
        "parent": cols["parent"],
        "depth": cols["depth"],
        "kind": _categorical(cols["kind_code"], cols["kind_names"]),
        "name": _categorical(cols["name_code"], cols["name_names"]),
        "function": _categorical(cols["function_code"], cols["function_names"]),
        "module": _categorical(cols["module_code"], cols["module_names"]),
        "file": _categorical(cols["file_code"], cols["file_names"]),
        "line": cols["line"],
    }
    if "path" in cols:
        data["path"] = cols["path"]
    if "match" in cols:
        data["match"] = cols["match"]
    for name, inc, exc in cols["metrics"]:
        data[name + " (inc)"] = inc
        data[name + " (exc)"] = exc
    df = TreeFrame(data, copy=False)
    df.attrs["label"] = cols["label"]
    df.attrs["metrics"] = [m[0] for m in cols["metrics"]]
    return df


class TreeFrame(pd.DataFrame):
    """A DataFrame of tree() rows: Jupyter shows its largest nodes first."""

    @property
    def _constructor(self):
        return TreeFrame

    def _repr_html_(self):
        from . import _html

        return _html.tree_html(self)


def _metric_block(row, prefix=""):
    out = {}
    for side in ("inclusive", "exclusive"):
        for k, v in (row.get(side) or {}).items():
            out[prefix + k + (" (inc)" if side == "inclusive" else " (exc)")] = np.nan if v is None else v
    return out


def top_frame(text):
    doc = json.loads(text)
    rows = []
    for r in doc["rows"]:
        row = {k: v for k, v in r.items() if k not in ("inclusive", "exclusive")}
        row.update(_metric_block(r))
        rows.append(row)
    df = pd.DataFrame(rows)
    if "kind" in df:
        df["kind"] = df["kind"].astype("category")
    df.attrs["by"] = doc.get("by")
    return df


def iterations_frame(text):
    doc = json.loads(text)
    df = pd.DataFrame(doc["iterations"], columns=["iteration", "start", "start_time_ns", "duration", "value", "share"])
    df = df.astype({"iteration": "int64", "start": "float64", "start_time_ns": "int64", "duration": "float64",
                    "value": "float64", "share": "float64"})
    df = df.rename(columns={"value": doc["metric"]})
    for k in ("run", "label", "range", "metric", "unit", "run_total", "median_iteration", "duration"):
        df.attrs[k if k != "duration" else "duration_stats"] = doc.get(k)
    return df


def timeline_frame(text):
    doc = json.loads(text)
    df = pd.DataFrame(doc["rows"], columns=["bucket_start_s", "track", "item", "samples", "share"])
    df = df.astype({"bucket_start_s": "float64", "samples": "int64", "share": "float64"})
    df["track"] = pd.Categorical(df["track"], categories=doc["tracks"])
    for k in ("run", "label", "by", "trace_start_time_ns", "from_s", "to_s", "bucket_s", "tracks"):
        df.attrs[k] = doc.get(k)
    return df


def _entries(entries):
    rows = []
    for e in entries:
        row = {}
        for k, v in e.items():
            if k == "path":
                row["path"] = ";".join(v)
                row["name"] = v[-1] if v else ""
            elif k == "exclusive":
                for kk, vv in v.items():
                    row["exclusive_" + kk] = np.nan if vv is None else vv
            else:
                row[k] = np.nan if v is None else v
        rows.append(row)
    df = pd.DataFrame(rows)
    for c in ("ratio", "change", "ci_low", "ci_high", "p_value", "base_sd", "candidate_sd"):
        if c in df:
            df[c] = df[c].astype("float64")
    return df


class DiffResult:
    """What cct-diff --format json prints, as DataFrames: `totals` (one row
    per metric), `regressions`, `improvements`, `context`, `new`, `gone` (one row per
    node: path, kind, status, metric, base, candidate, delta, ratio, change,
    for groups base_sd/candidate_sd, p_value, ci_low/ci_high, verdict,
    cause, exclusive_*), and `json`, the whole document."""

    def __init__(self, text):
        self.json = json.loads(text)
        self.base = self.json.get("base")
        self.candidate = self.json.get("candidate")
        self.totals = _entries(self.json.get("totals", []))
        for k in ("regressions", "improvements", "context", "new", "gone"):
            setattr(self, k, _entries(self.json.get(k, [])))
        self.metrics = pd.DataFrame(self.json.get("metrics", []))
        self.counts = self.json.get("counts", {})
        self.regression = bool(self.json.get("regression"))
        self.test = self.json.get("test")

    def __repr__(self):
        return "cctdb.DiffResult(%s vs %s: %d regressions, %d improvements)" % (
            self.base.get("label") if self.base else "?", self.candidate.get("label") if self.candidate else "?",
            len(self.regressions), len(self.improvements))

    def _repr_html_(self):
        from . import _html

        return _html.diff_html(self)
