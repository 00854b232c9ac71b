"""Queries against the host's informer cache (never the API server).

A plugin may query the resources it watches or reads. A refusal raises a
:class:`~wink_sdk.errors.CacheError`; nothing here traps.

>>> pods = Resource("v1", "Pod")
>>> web = cache.get(pods, "default/web")            # Object or None
>>> front = cache.list(pods, "default", "tier=front")
>>> one = cache.first(pods, "default", "tier=front")  # Object or None
>>> keys = cache.index_keys(pods, "app", "web")
"""

from __future__ import annotations

import builtins
from typing import List, Optional

from componentize_py_types import Err
from wit_world.imports import cache as _wit

from .errors import cache_error
from .object import Object
from .registration import Resource


def get(resource: Resource, key: str) -> Optional[Object]:
    """The cached object under ``key`` (``namespace/name`` or ``name``), or ``None``."""
    try:
        handle = _wit.get(resource._wit, key)
    except Err as e:
        raise cache_error(e.value) from None
    return None if handle is None else Object(handle, key)


def list(
    resource: Resource, namespace: Optional[str] = None, label_selector: Optional[str] = None
) -> builtins.list[Object]:
    """Every cached object of ``resource``, optionally in one namespace and
    matching a label selector (Kubernetes syntax), in key order."""
    try:
        answer = _wit.list(resource._wit, namespace, label_selector)
    except Err as e:
        raise cache_error(e.value) from None
    return Object._from_answer(answer)


def first(
    resource: Resource, namespace: Optional[str] = None, label_selector: Optional[str] = None
) -> Optional[Object]:
    """The first, in key order, of what :func:`list` would answer with the same
    arguments, or ``None``: whether anything matches, and which, without
    building the list (the host stops at the first match)."""
    try:
        handle = _wit.first(resource._wit, namespace, label_selector)
    except Err as e:
        raise cache_error(e.value) from None
    return None if handle is None else Object(handle, None)


def by_index(resource: Resource, index: str, value: str) -> builtins.list[Object]:
    """The objects whose index ``index`` holds ``value``, in key order."""
    try:
        answer = _wit.by_index(resource._wit, index, value)
    except Err as e:
        raise cache_error(e.value) from None
    return Object._from_answer(answer)


def index_keys(resource: Resource, index: str, value: str) -> List[str]:
    """The keys whose index ``index`` holds ``value``, sorted."""
    try:
        keys = _wit.index_keys(resource._wit, index, value)
    except Err as e:
        raise cache_error(e.value) from None
    return keys.splitlines()


def list_index_values(resource: Resource, index: str) -> List[str]:
    """Every value index ``index`` holds, sorted."""
    try:
        return _wit.list_index_values(resource._wit, index)
    except Err as e:
        raise cache_error(e.value) from None
