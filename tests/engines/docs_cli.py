"""The project's docs test (tests/python/test_docs.py) loaded by path, for the engine suites: they
run the engines' pages' Python blocks and check the command lines of their sh blocks."""

from __future__ import annotations

import importlib.util
import pathlib

_path = pathlib.Path(__file__).resolve().parents[1] / "python" / "test_docs.py"
_spec = importlib.util.spec_from_file_location("giouring_test_docs", _path)
test_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(test_docs)


def option(argv, name):
    """The value after ``name`` in argv."""
    return argv[argv.index(name) + 1]
