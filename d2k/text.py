"""Text a solution controls, made safe to store and to print.

A solution writes the reasons of its own failures (its exceptions' messages, the last line it
printed), its threads' names reach the timing record, and its file name is its label. Two things
must hold whatever that text is: it is valid UTF-8 (DuckDB refuses a lone surrogate, and one such
record once cancelled a whole sweep: red team G, session 21), and printed, it cannot drive the
terminal (escape sequences that erase lines, move the cursor, retitle the window or hide text) or
forge a line of the run's log (a newline in a reason or a file name).
"""

from __future__ import annotations

# C0 controls, DEL and C1 controls, each shown as its escape (\x1b, \n, ...)
_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
_ESCAPED = {c: ascii(chr(c))[1:-1] for c in _CONTROLS}
_ESCAPED_BUT_LINES = {c: e for c, e in _ESCAPED.items() if chr(c) not in "\n\t"}


def utf8_safe(value):
    """``value`` with every string in it (dict keys too) encodable as UTF-8: what cannot be
    (lone surrogates) is written as a backslash escape. Other values are returned as they are."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(utf8_safe(v) for v in value)
    return value


def one_line(text) -> str:
    """``text`` as one printable line: every control character (newlines and ESC included) escaped."""
    return utf8_safe(str(text)).translate(_ESCAPED)


def no_terminal_controls(text: str) -> str:
    """``text`` with every control character but newline and tab escaped (for whole messages)."""
    return utf8_safe(text).translate(_ESCAPED_BUT_LINES)
