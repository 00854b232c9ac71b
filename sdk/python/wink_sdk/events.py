"""Events about objects (``events.k8s.io/v1``), as ``kubectl describe`` shows
them; the host aggregates repeats into one Event with a series count.
Declare ``records_events=True`` in the registration; the operator grants it.
A refusal raises a :class:`~wink_sdk.errors.WriteError`.

Each function answers what became of the Event (:data:`Recorded`):
``SENT``, ``AUDIT`` (recorded, marked as coming from a plugin in audit mode:
the note says ``[audit]``) or ``DROPPED`` (the spam filter dropped it).

>>> if events.warning(obj, "MissingLabel", "Labeled", "missing label team") is Recorded.DROPPED:
...     pass
"""

from __future__ import annotations

from componentize_py_types import Err
from wit_world.imports import events as _wit

from .errors import write_error
from .object import Object

#: ``EventType.NORMAL`` or ``EventType.WARNING``.
EventType = _wit.EventType
#: ``Recorded.SENT``, ``Recorded.AUDIT`` or ``Recorded.DROPPED``.
Recorded = _wit.Recorded


def record(regarding: Object, type: "_wit.EventType", reason: str, action: str, note: str) -> "_wit.Recorded":
    """Record an Event about ``regarding``; answers what became of it."""
    try:
        return _wit.record_event(regarding.handle, type, reason, action, note)
    except Err as e:
        raise write_error(e.value) from None


def normal(regarding: Object, reason: str, action: str, note: str) -> "_wit.Recorded":
    """Record a Normal Event."""
    return record(regarding, EventType.NORMAL, reason, action, note)


def warning(regarding: Object, reason: str, action: str, note: str) -> "_wit.Recorded":
    """Record a Warning Event."""
    return record(regarding, EventType.WARNING, reason, action, note)
