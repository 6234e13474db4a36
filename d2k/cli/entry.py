"""The entry point, ``main``: runs the app and turns every way a command can end into an exit code,
a user's mistake into one line on stderr (never a traceback)."""

from __future__ import annotations

import sys

import typer

from d2k.cli import common
from d2k.cli.common import EXIT_INTERRUPTED, EXIT_USAGE, app, visible_commands
from d2k.errors import D2KError


def _usage_error_types() -> tuple[type, ...]:
    """The exceptions the command-line parser raises for a usage mistake: typer >= 0.29 has its own
    (typer.exceptions.TyperException), older typer re-raises click's."""
    types: list[type] = []
    try:
        from typer.exceptions import TyperException

        types.append(TyperException)
    except ImportError:
        pass
    try:
        import click

        types.append(click.ClickException)
    except ImportError:
        pass
    return tuple(types)


def _usage_message(exc) -> str:
    """One line: what is wrong with the command line, and where the help is."""
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", None) or "d2k"
    if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
        names = visible_commands(ctx)
        message = f"{command} needs a command" + (f" ({', '.join(names)})" if names else "")
    else:
        text = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        message = " ".join(str(text).split()).rstrip(".") or type(exc).__name__
    return f"error: {message}; see `{command} --help`"


def main() -> None:
    usage_errors = _usage_error_types()
    try:
        code = app(standalone_mode=False, prog_name="d2k")  # click returns the code of a typer.Exit here
    except D2KError as exc:
        # markup=False: messages quote user text ([judge], file[workload]) that rich would eat
        common.err_console.print(f"error: {exc}", style="red", markup=False, highlight=False, soft_wrap=True)
        sys.exit(EXIT_USAGE)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        common.err_console.print("interrupted: results written so far are kept")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # the parser's usage errors: one line and exit 2, like ours
        if usage_errors and isinstance(exc, usage_errors):
            common.err_console.print(_usage_message(exc), style="red", markup=False, highlight=False, soft_wrap=True)
            sys.exit(EXIT_USAGE)
        if type(exc).__name__ in ("Exit", "Abort") and hasattr(exc, "exit_code"):  # click's, under old typer
            sys.exit(exc.exit_code)
        raise
    sys.exit(code if isinstance(code, int) else 0)
