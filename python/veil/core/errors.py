"""Errors the CLI turns into one line and an exit code, never a traceback."""


class VeilError(Exception):
    """A failure while running (exit 1)."""

    exit_code = 1


class ConfigError(VeilError):
    """Bad user input: a config, an argument, a path (exit 2)."""

    exit_code = 2


class StoreError(VeilError):
    """The results store cannot be opened or written (exit 2: the path or file is the problem)."""

    exit_code = 2
