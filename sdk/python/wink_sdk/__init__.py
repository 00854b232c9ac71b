"""wink-sdk for Python: write wink plugins (WebAssembly components of the
``wink:plugin@0.3.0`` world) in Python, built with componentize-py.

A plugin subclasses :class:`Handler` and exports it as the module's
``Handler``::

    import logging
    import wink_sdk
    from wink_sdk import Object, Registration, Watch

    log = logging.getLogger("pod-logger")

    class PodLogger(wink_sdk.Handler):
        def init(self, config: str) -> Registration:
            return Registration(watches=[Watch("v1", "Pod")])

        def on_add(self, obj: Object, in_initial_list: bool) -> None:
            log.info("OnAdd: %s", obj.name)

    Handler = wink_sdk.export(PodLogger)

Modules: :mod:`~wink_sdk.cache` (queries), :mod:`~wink_sdk.write`,
:mod:`~wink_sdk.events`, :mod:`~wink_sdk.report`, :mod:`~wink_sdk.errors`
(the exceptions), and logging through the standard :mod:`logging` module.
"""

from __future__ import annotations

import json as _json
from typing import Any, Dict, Optional, Type

from componentize_py_types import Err
from wit_world import exports as _exports
from wit_world.imports import types as _types

from . import cache, errors, events, log, report, write
from .errors import (
    AlreadyExists,
    CacheError,
    Conflict,
    Forbidden,
    NotFound,
    NotPermitted,
    WinkError,
    WriteError,
)
from .object import Object
from .registration import IndexBy, Registration, Resource, Verb, Watch, Writes
from .report import Finding, Outcome, Severity

__all__ = [
    "AlreadyExists",
    "CacheError",
    "Conflict",
    "Finding",
    "Forbidden",
    "Handler",
    "IndexBy",
    "NotFound",
    "NotPermitted",
    "Object",
    "Outcome",
    "Registration",
    "Resource",
    "Severity",
    "Verb",
    "Watch",
    "WinkError",
    "WriteError",
    "Writes",
    "cache",
    "config",
    "errors",
    "events",
    "export",
    "is_resync",
    "log",
    "report",
    "write",
]

log.install()


class Handler:
    """A plugin's event handler: client-go's ``ResourceEventHandler`` plus
    ``init``. Override what you react to; calls never overlap, and ``self``
    is the plugin's state for the life of the instance.

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
    """The class componentize-py exports as the world's ``handler``
    interface, running ``handler`` (instantiated once, with no arguments).
    Assign it to the app module's ``Handler``."""

    state: Dict[str, Handler] = {}

    class Export(_exports.Handler):
        """Adapter from the WIT ``handler`` interface to a :class:`Handler`."""

        def init(self, config: str) -> _types.Registration:
            try:
                instance = handler()
                registration = instance.init(config)
            except Exception as e:  # noqa: BLE001 - any error refuses the plugin
                raise Err(str(e) or type(e).__name__) from None
            state["h"] = instance
            return registration._to_wit()

        def on_add(self, key: str, obj: _types.Object, in_initial_list: bool) -> None:
            state["h"].on_add(Object(obj, key), in_initial_list)

        def on_update(self, key: str, old: _types.Object, new: _types.Object) -> None:
            state["h"].on_update(Object(old, key), Object(new, key))

        def on_delete(self, key: str, obj: _types.Object, final_state_unknown: bool) -> None:
            state["h"].on_delete(Object(obj, key), final_state_unknown)

        def on_synced(self) -> None:
            state["h"].on_synced()

    Export.__name__ = Export.__qualname__ = "Handler"
    return Export
