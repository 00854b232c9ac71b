"""``Object``: one Kubernetes object as a handler receives it or the cache
returns it.

It wraps a host handle (WIT ``resource object``): nothing is copied into the
plugin until an accessor asks, and each answer is kept, so asking twice
crosses the boundary once. The key (hence ``name`` and ``namespace``) comes
with every event and every cache answer, so reading it costs no call;
``labels`` fetches the metadata once, without parsing JSON; ``json()`` copies
the text and ``to_dict()`` parses it. ``watch`` says which watch of the
registration a handler's object came from.
"""

from __future__ import annotations

import json as _json
from typing import Any, Dict, List, Optional

from wit_world.imports import types as _types


class _Answer:
    """A list answer shared by the objects made from it: the host's handle
    to the list (kept alive as long as one of its objects is)."""

    __slots__ = ("objects",)

    def __init__(self, objects: _types.ObjectList) -> None:
        self.objects = objects


class Object:
    """A Kubernetes object delivered to a handler or returned by the cache.

    In a handler it is lent for the duration of the call; :meth:`clone` it to
    keep it longer (the clone is an owned handle to the same version).
    """

    __slots__ = (
        "_handle",
        "_key",
        "_answer",
        "_index",
        "_meta",
        "_json",
        "_dict",
        "_uid",
        "_rv",
        "_asked",
        "_watch",
    )

    def __init__(
        self,
        handle: Optional[_types.Object],
        key: Optional[str],
        answer: Optional[_Answer] = None,
        index: int = 0,
        watch: Optional[int] = None,
    ) -> None:
        self._handle = handle
        self._watch = watch
        self._key = key
        self._answer = answer
        self._index = index
        self._meta: Optional[_types.ObjectMeta] = None
        self._json: Optional[str] = None
        self._dict: Optional[Dict[str, Any]] = None
        self._uid: Optional[str] = None
        self._rv: Optional[str] = None
        self._asked: Optional[Dict[str, Optional[str]]] = None

    @classmethod
    def _from_answer(cls, answer: _types.Answer) -> List["Object"]:
        shared = _Answer(answer.objects)
        return [cls(None, key, shared, i) for i, key in enumerate(answer.keys.splitlines())]

    @property
    def handle(self) -> _types.Object:
        """The host handle (WIT ``object``), made on first use for a list member."""
        if self._handle is None:
            assert self._answer is not None
            handle = self._answer.objects.get(self._index)
            if handle is None:
                raise LookupError(f"the cache answer lost {self._key}")
            self._handle = handle
        return self._handle

    @property
    def watch(self) -> Optional[int]:
        """In a handler call, the index in ``Registration.watches`` of the
        watch the event came from (0 for a plugin with one watch); ``None``
        for an object the cache or a write answered."""
        return self._watch

    @property
    def key(self) -> str:
        """The cache key: ``namespace/name``, or ``name`` when cluster-scoped."""
        if self._key is None:
            self._key = self.handle.key()
        return self._key

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.key.rpartition("/")[2]

    @property
    def namespace(self) -> Optional[str]:
        """``metadata.namespace``; ``None`` when cluster-scoped."""
        ns, slash, _ = self.key.rpartition("/")
        return ns if slash else None

    def _metadata(self) -> _types.ObjectMeta:
        if self._meta is None:
            self._meta = self.handle.meta()
        return self._meta

    @property
    def api_version(self) -> str:
        """``apiVersion``, e.g. ``apps/v1``."""
        return self._metadata().api_version

    @property
    def kind(self) -> str:
        """``kind``, e.g. ``Pod``."""
        return self._metadata().kind

    @property
    def uid(self) -> str:
        """``metadata.uid``."""
        if self._meta is not None:
            return self._meta.uid
        if self._uid is None:
            self._uid = self.handle.uid()
        return self._uid

    @property
    def resource_version(self) -> str:
        """``metadata.resourceVersion`` (opaque: compare for equality only)."""
        if self._meta is not None:
            return self._meta.resource_version
        if self._rv is None:
            self._rv = self.handle.resource_version()
        return self._rv

    @property
    def labels(self) -> Dict[str, str]:
        """``metadata.labels`` (a new dict, in key order)."""
        return dict(self._metadata().labels)

    def label(self, key: str) -> Optional[str]:
        """One label's value, or ``None``: from the metadata when it was
        fetched, else asked of the host alone (one string crosses), and kept."""
        if self._meta is not None:
            for k, v in self._meta.labels:
                if k == key:
                    return v
            return None
        if self._asked is None:
            self._asked = {}
        if key not in self._asked:
            self._asked[key] = self.handle.label(key)
        return self._asked[key]

    def json(self) -> str:
        """The whole object as JSON text, as the host's cache holds it."""
        if self._json is None:
            self._json = self.handle.json()
        return self._json

    def to_dict(self) -> Dict[str, Any]:
        """The whole object, parsed (once) into a dict. Do not change it."""
        if self._dict is None:
            self._dict = _json.loads(self.json())
        return self._dict

    def clone(self) -> "Object":
        """An owned handle to the same object version, to keep past a call."""
        other = Object(self.handle.duplicate(), self._key, watch=self._watch)
        other._meta, other._json, other._dict = self._meta, self._json, self._dict
        other._uid, other._rv = self._uid, self._rv
        return other

    def __repr__(self) -> str:
        return f"Object({self.key!r})"
