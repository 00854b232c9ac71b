"""What a plugin registers from ``Handler.init``: its name, watches,
reads, writes, whether deliveries wait for every initial list, admission
webhooks and a work queue.

>>> Registration(
...     name="team-labels",
...     watches=[Watch("v1", "Pod", indexes={"app": IndexBy.label("app")},
...                    updates_when=[Change.labels()])],
...     writes=[Writes(Resource("apps/v1", "Deployment"), [Verb.PATCH])],
...     records_events=True,
... )

Defaults: no ``name`` (the host names the plugin after its component file's
stem), ``wait_for_sync=True`` (nothing is delivered until every watch and
read has listed, so the initial adds find the whole cache; ``False``
delivers each watch's initial list as it arrives), every update delivered
(``updates_when=[]``), no admission webhooks, no queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Union

from wit_world.imports import types as _types

if TYPE_CHECKING:
    from .admission import Webhook

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
        """A field path, e.g. ``spec.nodeName``: dot-separated field names,
        each optionally followed by ``[*]`` (every element of a list) or
        ``[N]`` (the element at N, from 0). A list is read through every
        element without brackets too, so ``spec.rules.host`` and
        ``spec.rules[*].host`` index one value per rule; lists nest
        (``spec.rules[*].http.paths[*].backend.service.name``). A path that
        cannot index (an empty segment, ``a[0``, ``a[]``) is refused at
        registration."""
        return _types.IndexBy_Field(path)


class Change:
    """A change an update must carry to be delivered (controller-runtime's
    predicates, checked on the host before any call into the plugin): give
    a watch ``updates_when=[Change.generation(), Change.label("team")]``."""

    @staticmethod
    def generation() -> _types.Change:
        """``metadata.generation`` (spec changes, for resources that count them)."""
        return _types.Change_Generation()

    @staticmethod
    def labels() -> _types.Change:
        """Any label."""
        return _types.Change_Labels()

    @staticmethod
    def annotations() -> _types.Change:
        """Any annotation."""
        return _types.Change_Annotations()

    @staticmethod
    def label(key: str) -> _types.Change:
        """The value of one label key."""
        return _types.Change_Label(key)

    @staticmethod
    def annotation(key: str) -> _types.Change:
        """The value of one annotation key."""
        return _types.Change_Annotation(key)

    @staticmethod
    def field(path: str) -> _types.Change:
        """The JSON value at a field path, e.g. ``spec`` or ``metadata.ownerReferences``."""
        return _types.Change_Field(path)


class Enqueue:
    """How a watch's events feed the plugin's work queue (see :class:`Queue`
    and ``Handler.reconcile``); the default is :meth:`none`."""

    @staticmethod
    def none() -> _types.Enqueue:
        """They do not: the events go to the handler only."""
        return _types.Enqueue_None_()

    @staticmethod
    def own_key() -> _types.Enqueue:
        """The object's own key."""
        return _types.Enqueue_OwnKey()

    @staticmethod
    def controller_owner() -> _types.Enqueue:
        """The key of the object's controller (kube-runtime's ``owns``)."""
        return _types.Enqueue_ControllerOwner()

    @staticmethod
    def by_index(name: str) -> _types.Enqueue:
        """The keys of the queue resource's objects whose index ``name`` holds the object's key."""
        return _types.Enqueue_ByIndex(name)

    @staticmethod
    def mapped() -> _types.Enqueue:
        """The keys ``Handler.map_to_keys`` answers for the object."""
        return _types.Enqueue_Mapped()


def _indexes(indexes: Dict[str, _types.IndexBy]) -> List[_types.Index]:
    return [_types.Index(name=name, by=by) for name, by in indexes.items()]


@dataclass
class Watch:
    """One watch: a resource, optionally narrowed by namespace and selectors.

    ``resync`` (seconds or a ``timedelta``) re-delivers every cached object as
    an update that often; ``indexes`` maps an index name to an :class:`IndexBy`;
    ``updates_when`` (a list of :class:`Change`) delivers only the updates
    that change one of them (empty: every update; adds, deletes and resyncs
    always come); ``enqueue`` (an :class:`Enqueue`) feeds the work queue.
    A handler call's ``obj.watch`` is the index of its watch in
    ``Registration.watches``. As a read, only the resource, namespace,
    selectors and indexes count.
    """

    api_version: str
    kind: str
    namespace: Optional[str] = None
    label_selector: Optional[str] = None
    field_selector: Optional[str] = None
    resync: Union[float, timedelta] = 0
    indexes: Dict[str, _types.IndexBy] = field(default_factory=dict)
    updates_when: List[_types.Change] = field(default_factory=list)
    enqueue: Optional[_types.Enqueue] = None

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
            updates_when=list(self.updates_when),
            enqueue=_types.Enqueue_None_() if self.enqueue is None else self.enqueue,
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
class Queue:
    """The plugin's work queue (client-go's rate-limited workqueue) of keys of
    ``resource``, reconciled by ``Handler.reconcile``: per-key backoff from
    ``base_delay_ms`` doubling up to ``max_delay_ms``, and an overall bucket
    of ``qps`` retries a second (``burst``). The defaults are client-go's."""

    resource: Resource
    base_delay_ms: int = 5
    max_delay_ms: int = 1_000_000
    qps: int = 10
    burst: int = 100

    def _to_wit(self) -> _types.Queue:
        return _types.Queue(self.resource._wit, self.base_delay_ms, self.max_delay_ms, self.qps, self.burst)


@dataclass
class Registration:
    """Everything a plugin registers: its ``name`` (none: the component
    file's stem; lowercase letters, digits and ``-``), ``watches`` (events),
    ``reads`` (queried only, no events), declared ``writes``, whether it
    ``records_events``, ``wait_for_sync`` (default ``True``: deliver nothing
    until every watch and read has listed), ``admission`` webhooks
    (:class:`~wink_sdk.admission.Webhook`) and a work ``queue``."""

    watches: List[Watch] = field(default_factory=list)
    reads: List[Watch] = field(default_factory=list)
    writes: List[Writes] = field(default_factory=list)
    records_events: bool = False
    name: Optional[str] = None
    wait_for_sync: bool = True
    admission: List["Webhook"] = field(default_factory=list)
    queue: Optional[Queue] = None

    def _to_wit(self) -> _types.Registration:
        return _types.Registration(
            name=self.name,
            watches=[w._to_wit() for w in self.watches],
            reads=[r._to_read() for r in self.reads],
            writes=[_types.WriteDecl(w.resource._wit, list(w.verbs)) for w in self.writes],
            records_events=self.records_events,
            wait_for_sync=self.wait_for_sync,
            admission=[w._to_wit() for w in self.admission],
            queue=None if self.queue is None else self.queue._to_wit(),
        )
