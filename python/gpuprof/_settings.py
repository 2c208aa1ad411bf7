"""The settings declaration (src/base/settings.h), read from libgpuprof.so.

Every setting gpuprof takes is declared once in C++: its JSON key, environment variable, type,
range or choices, default and help. The Python package takes its defaults and checks from that
table (gpuprof_settings_json_v1, gpuprof_check_setting_v1 in gpuprof_c.h), so a value is accepted
here exactly when `gpuprof run`/`replay` and the session accept it, with the same message.
"""

import ctypes
import json
import os

from . import _native

_core = None
_table = None


def _library():
    global _core
    if _core is None:
        path = os.path.join(_native.lib_dir(), "libgpuprof.so")
        try:
            core = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            raise _native.NativeLibraryError(f"cannot load {path}: {e}") from e
        core.gpuprof_settings_json_v1.restype = ctypes.c_char_p
        core.gpuprof_settings_json_v1.argtypes = []
        core.gpuprof_check_setting_v1.restype = ctypes.c_int
        core.gpuprof_check_setting_v1.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        core.gpuprof_last_error.restype = ctypes.c_char_p
        _core = core
    return _core


def table():
    """{json_key: row} for every declared setting with a JSON key."""
    global _table
    if _table is None:
        rows = json.loads(_library().gpuprof_settings_json_v1().decode("utf-8"))
        _table = {row["json_key"]: row for row in rows if row["json_key"]}
    return _table


def _text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def check(key, value, caller):
    """The canonical text of `value` for setting `key`; ValueError naming `caller` and the setting's
    own message (what it accepts) otherwise."""
    out = ctypes.create_string_buffer(4096)
    status = _library().gpuprof_check_setting_v1(key.encode("utf-8"), _text(value).encode("utf-8"), out,
                                                  ctypes.sizeof(out))
    if status != _native.GPUPROF_OK:
        message = _library().gpuprof_last_error().decode("utf-8", "replace")
        raise ValueError(f"{caller}: {message.split(': ', 1)[-1]}")
    return out.value.decode("utf-8")


def default(key):
    """The declared default of `key`, as the Python type of its kind (bool, int or str)."""
    row = table()[key]
    text = row["default"]
    if row["type"] == "bool":
        return text == "1"
    if row["type"] == "int":
        return int(text)
    return text


def from_environment(key):
    """The value of `key` from its variable when set (checked), else the declared default."""
    row = table()[key]
    text = os.environ.get(row["env"], "")
    if text == "":
        return default(key)
    canonical = check(key, text, row["env"])
    if row["type"] == "bool":
        return canonical == "1"
    if row["type"] == "int":
        return int(canonical)
    return canonical
