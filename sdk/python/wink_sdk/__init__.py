"""wink-sdk for Python: write wink plugins (WebAssembly components of the
``wink:plugin@0.4.0`` world) in Python, built with componentize-py.
Components built with the 0.3.0 SDK keep running unchanged on a 0.4.0 host.

A plugin subclasses :class:`Handler` and exports it with one line,
``Handler = wink_sdk.export(MyPlugin)``::

    import logging
    import wink_sdk
    from wink_sdk import Object, Registration, Watch

    log = logging.getLogger("pod-logger")

    class PodLogger(wink_sdk.Handler):
        def init(self, config: str) -> Registration:
            return Registration(name="pod-logger", watches=[Watch("v1", "Pod")])

        def on_add(self, obj: Object, in_initial_list: bool) -> None:
            log.info("OnAdd: %s (watch %d)", obj.name, obj.watch)

    Handler = wink_sdk.export(PodLogger)

The world also exports ``admission`` and ``reconciler``; ``export`` gives
the module those too (``Admission``, ``Reconciler``), answering from the
plugin's :meth:`Handler.validate`, :meth:`Handler.mutate`,
:meth:`Handler.reconcile` and :meth:`Handler.map_to_keys`, whose defaults
allow, change nothing, are done and map to no keys: a plugin that neither
admits nor reconciles writes nothing for them. ``handler.on-batch`` is the
SDK's too: it calls ``on_add``/``on_update``/``on_delete`` for each event.

Modules: :mod:`~wink_sdk.cache` (queries), :mod:`~wink_sdk.write`,
:mod:`~wink_sdk.events`, :mod:`~wink_sdk.report`, :mod:`~wink_sdk.admission`,
:mod:`~wink_sdk.queue` (the work queue and what ``reconcile`` answers),
:mod:`~wink_sdk.errors` (the exceptions), and logging through the standard
:mod:`logging` module.
"""

from __future__ import annotations

import json as _json
import sys as _sys
from typing import Any, Dict, List, Optional, Type, Union

from . import admission, cache, errors, events, log, queue, report, write
from ._export import exports as _exports
from .admission import Mutation, Request, Verdict, Webhook
from .errors import (
    AlreadyExists,
    CacheError,
    Conflict,
    Forbidden,
    NotFound,
    NotPermitted,
    QueueError,
    WinkError,
    WriteError,
)
from .events import Recorded
from .object import Object
from .queue import Action
from .registration import Change, Enqueue, IndexBy, Queue, Registration, Resource, Verb, Watch, Writes
from .report import Finding, Outcome, Severity
from .write import Deleted, Written

__all__ = [
    "Action",
    "AlreadyExists",
    "CacheError",
    "Change",
    "Conflict",
    "Deleted",
    "Enqueue",
    "Finding",
    "Forbidden",
    "Handler",
    "IndexBy",
    "Mutation",
    "NotFound",
    "NotPermitted",
    "Object",
    "Outcome",
    "Queue",
    "QueueError",
    "Recorded",
    "Registration",
    "Request",
    "Resource",
    "Severity",
    "Verb",
    "Verdict",
    "Watch",
    "Webhook",
    "WinkError",
    "WriteError",
    "Writes",
    "Written",
    "admission",
    "cache",
    "config",
    "errors",
    "events",
    "export",
    "is_resync",
    "log",
    "queue",
    "report",
    "write",
]

log.install()


class Handler:
    """A plugin's event handler: client-go's ``ResourceEventHandler`` plus
    ``init``. Override what you react to; calls never overlap, and ``self``
    is the plugin's state for the life of the instance. ``obj.watch`` in a
    handler is the index of the event's watch in ``Registration.watches``.

    The admission and reconciler hooks (:meth:`validate`, :meth:`mutate`,
    :meth:`reconcile`, :meth:`map_to_keys`) are called only for what the
    registration declares (webhooks, a queue); their defaults allow, change
    nothing, are done and map to no keys. Admission calls run on instances
    of their own, which may never have had ``init`` called.

    An exception out of ``init`` refuses the plugin (its message is logged);
    one out of an event handler crashes the instance like a trap: the host
    logs the traceback, restarts the plugin and, after repeated crashes,
    quarantines it.
    """

    def init(self, config: str) -> Registration:
        """Say what to watch. ``config`` is the text of ``<name>.json``
        beside the component, or empty (see :func:`config`)."""
        raise NotImplementedError("a wink plugin's Handler must implement init")

    def on_add(self, obj: Object, in_initial_list: bool) -> None:
        """An object was added (``in_initial_list``: replayed from the cache)."""

    def on_update(self, old: Object, new: Object) -> None:
        """An object changed; on a resync ``old`` and ``new`` are the same version."""

    def on_delete(self, obj: Object, final_state_unknown: bool) -> None:
        """An object was deleted (``final_state_unknown``: missed while the
        watch was down; ``obj`` is its last known state)."""

    def on_synced(self) -> None:
        """Every object of the initial lists was delivered: act on the whole picture."""

    def validate(self, request: Request) -> Optional[Verdict]:
        """Answer the ``validate`` webhook (``None``: allowed)."""
        return None

    def mutate(self, request: Request) -> Union[None, Verdict, Mutation]:
        """Answer the ``mutate`` webhook: a :class:`Mutation` (the verdict
        and the changed object), a bare :class:`Verdict`, or ``None``
        (allowed, unchanged)."""
        return None

    def reconcile(self, key: str) -> Optional[Action]:
        """Make the object under ``key`` (of the queue's resource) right; answer
        an :class:`Action` (``Action.requeue()``, ``Action.requeue_after(delay)``)
        or ``None`` (done). An exception requeues the key with backoff, its
        message the reconcile's error."""
        return None

    def map_to_keys(self, obj: Object) -> List[str]:
        """The queue keys an object of an ``Enqueue.mapped()`` watch
        (``obj.watch``) concerns."""
        return []


def config(text: str, defaults: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """A plugin's config text as a dict: ``defaults`` (a copy) when it is
    empty, else the JSON object over the defaults. Raises ``ValueError``
    (``bad config: ...``) for anything else."""
    merged: Dict[str, Any] = dict(defaults or {})
    if not text.strip():
        return merged
    try:
        value = _json.loads(text)
    except ValueError as e:
        raise ValueError(f"bad config: {e}") from None
    if not isinstance(value, dict):
        raise ValueError("bad config: not a JSON object")
    unknown = [k for k in value if defaults is not None and k not in defaults]
    if unknown:
        raise ValueError(f"bad config: unknown field {unknown[0]!r}")
    merged.update(value)
    return merged


def is_resync(old: Object, new: Object) -> bool:
    """True when an update is a resync: the same object version again."""
    return old.uid == new.uid and old.resource_version == new.resource_version


def export(handler: Type[Handler]) -> type:
    """Export ``handler`` (instantiated once per instance, with no arguments)
    as the world's interfaces: answers the class componentize-py exports as
    ``handler`` (assign it to the app module's ``Handler``), and gives the
    calling module ``Admission`` and ``Reconciler`` (the ``admission`` and
    ``reconciler`` exports) unless it defines them itself."""
    made = _exports(handler)
    caller = _sys._getframe(1).f_globals
    for name in ("Admission", "Reconciler"):
        caller.setdefault(name, made[name])
    return made["Handler"]
