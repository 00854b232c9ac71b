"""Logging into the host's log, prefixed there with the plugin's name.

Importing :mod:`wink_sdk` puts a :class:`HostLogHandler` on the root logger
(level ``TRACE``: the host filters), so the standard :mod:`logging` module is all a plugin
uses: ``logging.getLogger(__name__).info("...")``. ``print`` reaches the
host's log too (at info level, stderr at warn).
"""

from __future__ import annotations

import logging

from wit_world.imports import log as _wit
from wit_world.imports import types as _types

#: Below ``logging.DEBUG``: the host's ``trace`` level.
TRACE = 5
logging.addLevelName(TRACE, "TRACE")


def level_of(levelno: int) -> "_types.Level":
    """The host's level for a :mod:`logging` level number."""
    if levelno >= logging.ERROR:
        return _types.Level.ERROR
    if levelno >= logging.WARNING:
        return _types.Level.WARN
    if levelno >= logging.INFO:
        return _types.Level.INFO
    if levelno >= logging.DEBUG:
        return _types.Level.DEBUG
    return _types.Level.TRACE


class HostLogHandler(logging.Handler):
    """A :class:`logging.Handler` writing each record to the host's log."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        """Write one formatted record (a traceback becomes more lines)."""
        try:
            _wit.log(level_of(record.levelno), self.format(record))
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


def install() -> None:
    """Route the root logger to the host (idempotent)."""
    root = logging.getLogger()
    if not any(isinstance(h, HostLogHandler) for h in root.handlers):
        root.addHandler(HostLogHandler())
        root.setLevel(TRACE)
