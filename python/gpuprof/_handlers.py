"""on_trace_ready handlers that write what torch.profiler's write.

tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False) is torch.profiler's: each
saved recording is written as a Chrome trace to `<dir_name>/<worker_name>.<ms since epoch>.pt.trace.json`
(`.gz` with use_gzip), the name and place TensorBoard's PyTorch plugin reads a run's traces from
(worker_name: `<hostname>_<pid>`, as torch's). The trace is the profile DB exported by
prof.export_chrome_trace; the DB itself stays where the session writes it (GPUPROF_OUTPUT_DIR).
torch.profiler.tensorboard_trace_handler(...) given to gpuprof.profile works the same way: it only
calls prof.export_chrome_trace.
"""

import os
import socket
import time

__all__ = ["tensorboard_trace_handler", "plain_name", "gzip_into"]


class tensorboard_trace_handler:  # noqa: N801  (named as torch.profiler's)
    def __init__(self, dir_name, worker_name=None, use_gzip=False):
        if not isinstance(dir_name, (str, os.PathLike)) or not str(dir_name):
            raise ValueError(f"gpuprof.tensorboard_trace_handler: dir_name must be a non-empty path, got {dir_name!r}")
        if worker_name is not None and (not isinstance(worker_name, str) or "/" in worker_name or "\0" in worker_name):
            raise ValueError(f"gpuprof.tensorboard_trace_handler: worker_name {worker_name!r} must be a file-name "
                             "component (no '/', no NUL), or None for <hostname>_<pid>")
        self.dir_name = os.path.abspath(os.fspath(dir_name))
        self.worker_name = worker_name
        self.use_gzip = bool(use_gzip)
        self.trace_paths = []

    def __call__(self, prof):
        try:
            os.makedirs(self.dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError(f"gpuprof.tensorboard_trace_handler: cannot create {self.dir_name}: {e}; give a "
                               "directory this process can create and write") from e
        worker = self.worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{int(time.time() * 1000)}.pt.trace.json" + (".gz" if self.use_gzip else "")
        path = os.path.join(self.dir_name, name)
        prof.export_chrome_trace(path)
        self.trace_paths.append(path)


def plain_name(path):
    """Where a trace for `path` is written before it is gzipped: `path` itself unless it ends in .gz."""
    return f"{path[:-3]}.{os.getpid()}.tmp.json" if path.endswith(".gz") else path


def gzip_into(plain, path):
    """Gzips `plain` into `path` and removes `plain`."""
    import gzip
    import shutil

    try:
        with open(plain, "rb") as fin, gzip.open(path, "wb") as fout:
            shutil.copyfileobj(fin, fout)
    finally:
        os.unlink(plain)
