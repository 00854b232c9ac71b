"""Writes to the API server, as this plugin: create, replace, patch, delete
and the ``status`` subresource. A write must be declared in the registration
(:class:`~wink_sdk.Writes`) and granted by the operator, else it raises
:class:`~wink_sdk.errors.NotPermitted`. Every failure is a subclass of
:class:`~wink_sdk.errors.WriteError` (``Conflict``, ``NotFound``, ...).

Bodies are dicts (serialized here) or JSON text; answers are
:class:`~wink_sdk.Object` handles.

>>> try:
...     write.merge_patch(deployments, "default/web", {"metadata": {"labels": {"team": "x"}}})
... except NotFound:
...     pass
"""

from __future__ import annotations

import json as _json
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


def _text(body: Body) -> str:
    return body if isinstance(body, str) else _json.dumps(body, separators=(",", ":"))


def _call(f: Callable[..., T], *args: Any) -> T:
    try:
        return f(*args)
    except Err as e:
        raise write_error(e.value) from None


def create(resource: Resource, body: Body) -> Object:
    """Create an object (apiVersion, kind, name and namespace set)."""
    return Object(_call(_wit.create, resource._wit, _text(body)), None)


def replace(resource: Resource, body: Body) -> Object:
    """Replace an object (a stale ``metadata.resourceVersion`` raises ``Conflict``)."""
    return Object(_call(_wit.replace, resource._wit, _text(body)), None)


def merge_patch(resource: Resource, key: str, patch: Body) -> Object:
    """Merge-patch (RFC 7386) the object under ``key``."""
    return Object(_call(_wit.patch, resource._wit, key, _wit.PatchType_Merge(), _text(patch)), None)


def json_patch(resource: Resource, key: str, patch: Body) -> Object:
    """JSON-patch (RFC 6902, a list of operations) the object under ``key``."""
    return Object(_call(_wit.patch, resource._wit, key, _wit.PatchType_Json(), _text(patch)), None)


def strategic_merge_patch(resource: Resource, key: str, patch: Body) -> Object:
    """Strategic-merge-patch (built-in types only) the object under ``key``."""
    kind = _wit.PatchType_StrategicMerge()
    return Object(_call(_wit.patch, resource._wit, key, kind, _text(patch)), None)


def apply(resource: Resource, key: str, body: Body, force: bool = False) -> Object:
    """Server-side apply with the plugin's field manager (``force`` takes over fields)."""
    kind = _wit.PatchType_Apply(force)
    return Object(_call(_wit.patch, resource._wit, key, kind, _text(body)), None)


def delete(
    resource: Resource,
    key: str,
    *,
    uid: Optional[str] = None,
    resource_version: Optional[str] = None,
    propagation: Optional[Propagation] = None,
) -> Optional[Object]:
    """Delete the object under ``key`` (only that ``uid`` / ``resource_version``
    when given): the object while it is being finalized, ``None`` once gone."""
    options = _wit.DeleteOptions(
        uid=uid,
        resource_version=resource_version,
        propagation=None if propagation is None else propagation.value,
    )
    handle = _call(_wit.delete, resource._wit, key, options)
    return None if handle is None else Object(handle, None)


def replace_status(resource: Resource, body: Body) -> Object:
    """Replace the ``status`` subresource."""
    return Object(_call(_wit.replace_status, resource._wit, _text(body)), None)


def merge_patch_status(resource: Resource, key: str, patch: Body) -> Object:
    """Merge-patch the ``status`` subresource of the object under ``key``."""
    kind = _wit.PatchType_Merge()
    return Object(_call(_wit.patch_status, resource._wit, key, kind, _text(patch)), None)
