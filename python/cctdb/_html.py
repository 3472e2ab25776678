"""Jupyter views (_repr_html_): compact tables, and a run's flame graph as
cct-query flame draws it (src/reports/flame.cc)."""

import html

# Rows a notebook shows of a tree or a run list.
_MAX_ROWS = 25


def frame_html(df, caption=None, max_rows=_MAX_ROWS):
    head = "<p><b>%s</b></p>" % html.escape(caption) if caption else ""
    more = ""
    if len(df) > max_rows:
        more = "<p>%d of %d rows shown</p>" % (max_rows, len(df))
    return head + df.head(max_rows).to_html(index=False, max_cols=14, float_format=lambda v: "%.4g" % v) + more


def tree_html(df):
    """The largest nodes by the first metric's inclusive value, indented by
    depth."""
    import pandas as pd

    metrics = df.attrs.get("metrics") or []
    cols = [c for c in ("node", "depth", "kind", "name", "file", "line") if c in df.columns]
    shown = pd.DataFrame(df[cols])
    if "name" in shown and "depth" in shown:
        shown["name"] = ["\u00a0\u00a0" * (int(d) - 1) + str(n) for d, n in zip(df["depth"], df["name"])]
    for m in metrics[:3]:
        shown[m + " (inc)"] = df[m + " (inc)"]
        shown[m + " (exc)"] = df[m + " (exc)"]
    if metrics and len(shown) > _MAX_ROWS:
        key = df[metrics[0] + " (inc)"]
        shown = shown.loc[key.nlargest(_MAX_ROWS).index.sort_values()]
        caption = "%s: the %d largest of %d nodes by %s" % (df.attrs.get("label", ""), _MAX_ROWS, len(df), metrics[0])
    else:
        caption = "%s: %d nodes" % (df.attrs.get("label", ""), len(df))
    return frame_html(shown, caption)


def run_html(run):
    from ._cctdb import Error

    try:
        svg = run.flame()
    except Error as e:  # a run without an additive metric has no flame graph
        svg = "<p>%s</p>" % html.escape(str(e))
    table = frame_html(run.meta()[["id", "name", "state", "start", "duration", "command"]],
                       caption="cctdb run %s" % run.selector)
    return table + '<div style="max-width:100%%;overflow:auto">%s</div>' % svg


def diff_html(result):
    parts = [frame_html(result.totals, caption="%s vs %s" % (result.base["label"], result.candidate["label"]))]
    for k in ("regressions", "improvements", "new", "gone"):
        df = getattr(result, k)
        if len(df):
            parts.append(frame_html(df, caption=k))
    return "".join(parts)
