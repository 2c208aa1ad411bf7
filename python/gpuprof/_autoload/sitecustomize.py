"""Loaded at interpreter start-up when `gpuprof run` puts this folder first on PYTHONPATH: arms
gpuprof._autorun (which profiles the script once it imports torch), then runs the
sitecustomize this one shadows, if any. Never stops the script: a failure is one stderr line."""

import os
import sys


def _arm():
    if os.environ.get("GPUPROF_PYTHON_AUTORUN") != "1":
        return
    try:
        from gpuprof import _autorun
        _autorun.install()
    except Exception as e:  # noqa: BLE001  (the script runs on, unprofiled)
        print(f"gpuprof: the PyTorch profile is off: {type(e).__name__}: {e}", file=sys.stderr)


def _chain():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001
        print(f"gpuprof: the shadowed {spec.origin} failed: {type(e).__name__}: {e}", file=sys.stderr)


_arm()
_chain()
