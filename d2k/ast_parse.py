"""``ast.parse`` behind one process-wide lock.

CPython 3.11's AST constructor keeps its recursion depth in interpreter-wide state, so two threads
parsing at once can corrupt it: ``SystemError: AST constructor recursion depth mismatch``
(CPython gh-106905). The paired experiments judge code from several threads, and a 2-core CI run
hit it (in `d2k demo`; not reproduced on demand). Parsing is fast next to everything around it, so
it is simply serialised; the lock is re-entrant so a parse reached again on the same thread (a
finalizer, say) cannot deadlock."""

from __future__ import annotations

import ast
import threading

_LOCK = threading.RLock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
