"""gpuprof.record_function(name, args=None): a labelled range, as torch.profiler.record_function.

A context manager and a decorator. It opens torch's own RecordFunction range (USER_SCOPE), so a
gpuprof profile records it as an op named `name` in PYTORCH_API (key_averages() lists it, its ops
are its children), and a torch.profiler running beside it sees it too. Outside any profile it
costs what torch's costs: next to nothing. Needs torch.
"""

from contextlib import ContextDecorator

__all__ = ["record_function"]


class record_function(ContextDecorator):  # noqa: N801  (named as torch.profiler's)
    def __init__(self, name, args=None):
        if not isinstance(name, str):
            raise TypeError(f"gpuprof.record_function: name must be a str, got {name!r}")
        self.name = name
        self.args = args
        # One torch range per entry: a decorated function that recurses nests its ranges.
        self._open = []

    def __enter__(self):
        from torch.autograd import profiler

        rng = profiler.record_function(self.name, self.args)
        rng.__enter__()
        self._open.append(rng)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._open:
            self._open.pop().__exit__(exc_type, exc_value, traceback)
        return False

    def _call_end_callbacks_on_future(self, fut):
        """As torch's: the range ends when `fut` completes (for async work, e.g. RPC)."""
        if not self._open:
            raise RuntimeError("gpuprof.record_function: _call_end_callbacks_on_future outside its `with` block")
        return self._open[-1]._call_end_callbacks_on_future(fut)  # its __exit__ then ends nothing
