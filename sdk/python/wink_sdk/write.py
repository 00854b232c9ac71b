"""Writes to the API server, as this plugin: create, replace, patch, delete
and the ``status`` subresource. A write must be declared in the registration
(:class:`~wink_sdk.Writes`) and granted by the operator, else it raises
:class:`~wink_sdk.errors.NotPermitted`. Every failure is a subclass of
:class:`~wink_sdk.errors.WriteError` (``Conflict``, ``NotFound``, ...).

Bodies are dicts (serialized here) or JSON text. A create, replace or patch
answers a :class:`Written`: the :class:`~wink_sdk.Object` as the server
answered (so code using the answer as an object keeps working), with
``dry_run``, true when the plugin runs in audit mode and the write was a
server-side dry run that changed nothing. A delete answers a
:class:`Deleted` (``object``: the object while it is finalized, or ``None``;
``dry_run``).

>>> try:
...     done = write.merge_patch(deployments, "default/web", {"metadata": {"labels": {"team": "x"}}})
...     log.info("would label (audit mode: dry run)" if done.dry_run else "labeled")
... except NotFound:
...     pass
"""

from __future__ import annotations

import json as _json
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Dict, Optional, TypeVar, Union

from componentize_py_types import Err
from wit_world.imports import write as _wit

from .errors import write_error
from .object import Object
from .registration import Resource

Body = Union[str, Dict[str, Any], list]
T = TypeVar("T")


class Propagation(Enum):
    """How a delete propagates to dependents."""

    ORPHAN = _wit.Propagation.ORPHAN
    BACKGROUND = _wit.Propagation.BACKGROUND
    FOREGROUND = _wit.Propagation.FOREGROUND


class Written(Object):
    """The answer to a create, replace or patch: the object as the API server
    answered (in a dry run, as it would have been stored), with ``dry_run``."""

    __slots__ = ("dry_run",)

    def __init__(self, answer: _wit.Written) -> None:
        super().__init__(answer.object, None)
        #: The write was a server-side dry run (audit mode): nothing changed.
        self.dry_run: bool = answer.dry_run

    @property
    def object(self) -> Written:
        """The object as answered (this value itself: a ``Written`` is one)."""
        return self

    def __repr__(self) -> str:
        return f"Written({self.key!r}, dry_run={self.dry_run})"


@dataclass(frozen=True)
class Deleted:
    """The answer to a delete: ``object`` while it is being finalized, or
    ``None`` once gone; ``dry_run`` when nothing was deleted (audit mode)."""

    object: Optional[Object]
    dry_run: bool


def _text(body: Body) -> str:
    return body if isinstance(body, str) else _json.dumps(body, separators=(",", ":"))


def _call(f: Callable[..., T], *args: Any) -> T:
    try:
        return f(*args)
    except Err as e:
        raise write_error(e.value) from None


def create(resource: Resource, body: Body) -> Written:
    """Create an object (apiVersion, kind, name and namespace set)."""
    return Written(_call(_wit.create, resource._wit, _text(body)))


def replace(resource: Resource, body: Body) -> Written:
    """Replace an object (a stale ``metadata.resourceVersion`` raises ``Conflict``)."""
    return Written(_call(_wit.replace, resource._wit, _text(body)))


def merge_patch(resource: Resource, key: str, patch: Body) -> Written:
    """Merge-patch (RFC 7386) the object under ``key``."""
    return Written(_call(_wit.patch, resource._wit, key, _wit.PatchType_Merge(), _text(patch)))


def json_patch(resource: Resource, key: str, patch: Body) -> Written:
    """JSON-patch (RFC 6902, a list of operations) the object under ``key``."""
    return Written(_call(_wit.patch, resource._wit, key, _wit.PatchType_Json(), _text(patch)))


def strategic_merge_patch(resource: Resource, key: str, patch: Body) -> Written:
    """Strategic-merge-patch (built-in types only) the object under ``key``."""
    kind = _wit.PatchType_StrategicMerge()
    return Written(_call(_wit.patch, resource._wit, key, kind, _text(patch)))


def apply(resource: Resource, key: str, body: Body, force: bool = False) -> Written:
    """Server-side apply with the plugin's field manager (``force`` takes over fields)."""
    kind = _wit.PatchType_Apply(force)
    return Written(_call(_wit.patch, resource._wit, key, kind, _text(body)))


def delete(
    resource: Resource,
    key: str,
    *,
    uid: Optional[str] = None,
    resource_version: Optional[str] = None,
    propagation: Optional[Propagation] = None,
) -> Deleted:
    """Delete the object under ``key`` (only that ``uid`` / ``resource_version``
    when given): ``Deleted.object`` is the object while it is being
    finalized, ``None`` once gone."""
    options = _wit.DeleteOptions(
        uid=uid,
        resource_version=resource_version,
        propagation=None if propagation is None else propagation.value,
    )
    answer = _call(_wit.delete, resource._wit, key, options)
    return Deleted(None if answer.object is None else Object(answer.object, None), answer.dry_run)


def replace_status(resource: Resource, body: Body) -> Written:
    """Replace the ``status`` subresource."""
    return Written(_call(_wit.replace_status, resource._wit, _text(body)))


def merge_patch_status(resource: Resource, key: str, patch: Body) -> Written:
    """Merge-patch the ``status`` subresource of the object under ``key``."""
    kind = _wit.PatchType_Merge()
    return Written(_call(_wit.patch_status, resource._wit, key, kind, _text(patch)))
