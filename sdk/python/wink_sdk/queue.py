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
    """What to do with a key after ``reconcile`` (``None`` means :meth:`done`)."""

    @staticmethod
    def done() -> _reconciler.Action:
        """Done: forget the key's backoff."""
        return _reconciler.Action_Done()

    @staticmethod
    def requeue() -> _reconciler.Action:
        """Look again after the key's backoff (rate limited)."""
        return _reconciler.Action_Requeue()

    @staticmethod
    def requeue_after(delay: Delay) -> _reconciler.Action:
        """Look again after ``delay`` (seconds or a ``timedelta``), backoff forgotten."""
        return _reconciler.Action_RequeueAfter(_ms(delay))


def _action(answer: Any) -> _reconciler.Action:
    return Action.done() if answer is None else answer


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
