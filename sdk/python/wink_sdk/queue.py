"""The plugin's work queue: keys it adds itself (:func:`add`,
:func:`add_after`) and what ``Handler.reconcile(key)`` answers
(:class:`Action`). Needs a :class:`~wink_sdk.Queue` in the registration;
without one, adding raises :class:`~wink_sdk.errors.QueueError`.

>>> def reconcile(self, key: str) -> Optional[Action]:
...     if not ready(key):
...         return Action.requeue_after(timedelta(seconds=30))
...     return None  # done: the key's backoff is forgotten
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any, Union

from componentize_py_types import Err
from wit_world.exports import reconciler as _reconciler
from wit_world.imports import queue as _wit

from .errors import QueueError

Delay = Union[float, timedelta]


def _ms(delay: Delay) -> int:
    secs = delay.total_seconds() if isinstance(delay, timedelta) else delay
    return max(0, min(int(math.ceil(secs * 1000)), 2**64 - 1))


class Action:
    """What to do with a key after ``reconcile``: :meth:`done` (what ``None``
    means too), :meth:`requeue` or :meth:`requeue_after`. Values compare
    equal when they say the same."""

    __slots__ = ("_wit",)

    def __init__(self, wit: _reconciler.Action) -> None:
        self._wit = wit

    @staticmethod
    def done() -> "Action":
        """Done: forget the key's backoff."""
        return Action(_reconciler.Action_Done())

    @staticmethod
    def requeue() -> "Action":
        """Look again after the key's backoff (rate limited)."""
        return Action(_reconciler.Action_Requeue())

    @staticmethod
    def requeue_after(delay: Delay) -> "Action":
        """Look again after ``delay`` (seconds or a ``timedelta``), backoff forgotten."""
        return Action(_reconciler.Action_RequeueAfter(_ms(delay)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Action) and self._wit == other._wit

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        if isinstance(self._wit, _reconciler.Action_RequeueAfter):
            return f"Action.requeue_after({self._wit.value / 1000!r})"
        return "Action.requeue()" if isinstance(self._wit, _reconciler.Action_Requeue) else "Action.done()"


_WIT_ACTIONS = (_reconciler.Action_Done, _reconciler.Action_Requeue, _reconciler.Action_RequeueAfter)


def _action(answer: Any) -> _reconciler.Action:
    """What ``reconcile`` answered, for the host: ``None`` is done; anything
    but an :class:`Action` (or its WIT value) raises ``TypeError``."""
    if answer is None:
        return _reconciler.Action_Done()
    if isinstance(answer, Action):
        return answer._wit
    if isinstance(answer, _WIT_ACTIONS):
        return answer
    raise TypeError(f"reconcile answered {answer!r}: not an Action or None")


def add(key: str) -> None:
    """Add ``key`` now (held once however often it is added)."""
    try:
        _wit.add(key)
    except Err as e:
        raise QueueError(str(e.value)) from None


def add_after(key: str, delay: Delay) -> None:
    """Add ``key`` after ``delay`` (seconds or a ``timedelta``)."""
    try:
        _wit.add_after(key, _ms(delay))
    except Err as e:
        raise QueueError(str(e.value)) from None


__all__ = ["Action", "Delay", "add", "add_after"]
