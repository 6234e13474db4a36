"""The one exception type the CLI turns into a one-line message instead of a traceback."""


class D2KError(Exception):
    """A user-facing error: bad input, missing content, an unusable environment."""
