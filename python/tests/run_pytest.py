"""Runs the package's pytest files; exit 77 (meson's SKIP) with one line
when pytest or pandas is not installed (scripts/install-deps.sh --tests
installs them)."""
import importlib.util
import sys

missing = [m for m in ("pytest", "pandas", "numpy") if importlib.util.find_spec(m) is None]
if missing:
    print("python tests skipped: %s not installed (apt-get install %s)" % (
        ", ".join(missing), " ".join("python3-" + m for m in missing)))
    sys.exit(77)
import pytest  # noqa: E402

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", sys.argv[1], sys.argv[1]] + sys.argv[2:]))
