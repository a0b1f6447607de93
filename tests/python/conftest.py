"""Shared set-up of the Python tests.

* `collie` must be importable: run under ctest (PYTHONPATH=<build>/python), or set
  PYTHONPATH yourself; as a convenience a build folder of this checkout holding the
  module (build*/python) is used when PYTHONPATH does not provide one.
* The in-process tests run in a world of one: launch variables inherited from a
  surrounding job are removed before collie is imported.
* Multi-rank tests start `collie run -n N <python> <worker>`; the launcher is
  $COLLIE_LAUNCHER (set by ctest), else <build>/bin/collie next to the package.
"""

import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
WORKERS = HERE / "workers"
EXAMPLES = REPO / "examples" / "python"

for _name in list(os.environ):
    if _name.startswith(("COLLIE_RANK", "COLLIE_WORLD", "COLLIE_LOCAL", "COLLIE_JOB", "OMPI_COMM_WORLD", "PMI_",
                         "PMIX_", "SLURM_")) or _name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                                         "RANK_ID", "RANK_SIZE", "COLLIE_BACKEND"):
        del os.environ[_name]

try:
    import collie  # noqa: F401
except ImportError:
    for _build in sorted(REPO.glob("build*/python")):
        if list(_build.glob("collie/_collie*.so")):
            sys.path.insert(0, str(_build))
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_build), os.environ.get("PYTHONPATH")]))
            break
    import collie  # noqa: F401


def launcher_path():
    path = os.environ.get("COLLIE_LAUNCHER")
    if path:
        return pathlib.Path(path)
    import collie as _c

    return pathlib.Path(_c.__file__).resolve().parents[2] / "bin" / "collie"


@pytest.fixture(scope="session")
def launcher():
    path = launcher_path()
    if not path.is_file():
        pytest.skip(f"no collie launcher at {path} (set COLLIE_LAUNCHER)")
    return path


@pytest.fixture(scope="session")
def run_ranks(launcher):
    """run_ranks(n, script, *args, timeout=120, env=None) -> CompletedProcess (text)."""

    def run(n, script, *args, timeout=120, env=None):
        full_env = dict(os.environ)
        import collie as _c

        package_root = str(pathlib.Path(_c.__file__).resolve().parents[1])
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, full_env.get("PYTHONPATH")]))
        full_env.setdefault("COLLIE_TIMEOUT", "60")
        full_env["PYTHONDONTWRITEBYTECODE"] = "1"
        if env:
            full_env.update(env)
        cmd = [str(launcher), "run", "-n", str(n), sys.executable, str(script), *map(str, args)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, check=False)

    return run

