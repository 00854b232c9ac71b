"""What a plugin registers from ``Handler.init``: watches, reads, writes.

>>> Registration(
...     watches=[Watch("v1", "Pod", indexes={"app": IndexBy.label("app")})],
...     writes=[Writes(Resource("apps/v1", "Deployment"), [Verb.PATCH])],
...     records_events=True,
... )
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Dict, List, Optional, Sequence, Union

from wit_world.imports import types as _types

#: A kind of write: ``Verb.CREATE``, ``UPDATE``, ``PATCH``, ``DELETE``.
Verb = _types.Verb


class Resource:
    """A resource type, as in a manifest: ``Resource("apps/v1", "Deployment")``."""

    __slots__ = ("api_version", "kind", "_wit")

    def __init__(self, api_version: str, kind: str) -> None:
        self.api_version = api_version
        self.kind = kind
        self._wit = _types.ResourceType(api_version=api_version, kind=kind)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resource) and (self.api_version, self.kind) == (
            other.api_version,
            other.kind,
        )

    def __hash__(self) -> int:
        return hash((self.api_version, self.kind))

    def __repr__(self) -> str:
        return f"Resource({self.api_version!r}, {self.kind!r})"


class IndexBy:
    """What a named index is computed from (build one with these functions)."""

    @staticmethod
    def label(key: str) -> _types.IndexBy:
        """The value of one label key (client-go's LabelsIndexFunc)."""
        return _types.IndexBy_Label(key)

    @staticmethod
    def annotation(key: str) -> _types.IndexBy:
        """The value of one annotation key."""
        return _types.IndexBy_Annotation(key)

    @staticmethod
    def owner_uid() -> _types.IndexBy:
        """Every ``metadata.ownerReferences[].uid``."""
        return _types.IndexBy_OwnerUid()

    @staticmethod
    def owner_kind_name() -> _types.IndexBy:
        """Every owner reference as ``Kind/name``."""
        return _types.IndexBy_OwnerKindName()

    @staticmethod
    def field(path: str) -> _types.IndexBy:
        """A field path, e.g. ``spec.nodeName``."""
        return _types.IndexBy_Field(path)


def _indexes(indexes: Dict[str, _types.IndexBy]) -> List[_types.Index]:
    return [_types.Index(name=name, by=by) for name, by in indexes.items()]


@dataclass
class Watch:
    """One watch: a resource, optionally narrowed by namespace and selectors.

    ``resync`` (seconds or a ``timedelta``) re-delivers every cached object as
    an update that often; ``indexes`` maps an index name to an :class:`IndexBy`.
    """

    api_version: str
    kind: str
    namespace: Optional[str] = None
    label_selector: Optional[str] = None
    field_selector: Optional[str] = None
    resync: Union[float, timedelta] = 0
    indexes: Dict[str, _types.IndexBy] = field(default_factory=dict)

    def _resync_seconds(self) -> int:
        secs = self.resync.total_seconds() if isinstance(self.resync, timedelta) else self.resync
        return min(int(math.ceil(secs)), 2**32 - 1)

    def _to_wit(self) -> _types.Watch:
        return _types.Watch(
            resource=_types.ResourceType(self.api_version, self.kind),
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            resync_seconds=self._resync_seconds(),
            indexes=_indexes(self.indexes),
        )

    def _to_read(self) -> _types.Read:
        return _types.Read(
            resource=_types.ResourceType(self.api_version, self.kind),
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            indexes=_indexes(self.indexes),
        )


@dataclass
class Writes:
    """Writes a plugin declares to one resource (the operator grants them)."""

    resource: Resource
    verbs: Sequence[_types.Verb]


@dataclass
class Registration:
    """Everything a plugin registers: ``watches`` (events), ``reads`` (queried
    only, no events), declared ``writes`` and whether it ``records_events``."""

    watches: List[Watch] = field(default_factory=list)
    reads: List[Watch] = field(default_factory=list)
    writes: List[Writes] = field(default_factory=list)
    records_events: bool = False

    def _to_wit(self) -> _types.Registration:
        return _types.Registration(
            watches=[w._to_wit() for w in self.watches],
            reads=[r._to_read() for r in self.reads],
            writes=[_types.WriteDecl(w.resource._wit, list(w.verbs)) for w in self.writes],
            records_events=self.records_events,
        )
