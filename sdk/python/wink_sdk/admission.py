"""Admission: the webhooks a plugin declares (:class:`Webhook` in
``Registration.admission``) and what ``Handler.validate`` and
``Handler.mutate`` receive (:class:`Request`) and answer (:class:`Verdict`,
:class:`Mutation`).

A plugin that declares no webhook writes nothing for them: the SDK answers
``validate`` with an allowing verdict and ``mutate`` with an allowing
verdict and no change. Admission calls run on instances of their own:
state kept by the event handler's instance is not seen there, and writes,
Events and reports are refused (a webhook has no side effects).

>>> Registration(admission=[Webhook(Hook.VALIDATE, [Rule([Operation.CREATE], [""], ["v1"], ["pods"])])])
...
>>> def validate(self, req: Request) -> Verdict:
...     if req.object is not None and req.object.label("team") is None:
...         return Verdict.deny("a team label is required")
...     return Verdict.allow()
"""

from __future__ import annotations

import json as _json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

from wit_world.exports import admission as _wit
from wit_world.imports import types as _types

from .object import Object

#: ``Operation.CREATE``, ``UPDATE``, ``DELETE``, ``CONNECT``.
Operation = _types.Operation
#: ``Scope.CLUSTER``, ``NAMESPACED``, ``ANY``.
Scope = _types.Scope
#: ``Hook.VALIDATE`` (``Handler.validate``) or ``Hook.MUTATE`` (``Handler.mutate``).
Hook = _types.Hook
#: ``FailurePolicy.FAIL`` (deny when the plugin cannot answer) or ``IGNORE``.
FailurePolicy = _types.FailurePolicy
#: ``MatchPolicy.EXACT`` or ``EQUIVALENT``.
MatchPolicy = _types.MatchPolicy

GroupVersionKind = _wit.GroupVersionKind
GroupVersionResource = _wit.GroupVersionResource
UserInfo = _wit.UserInfo


@dataclass
class Rule:
    """One rule of a webhook, as in a webhook configuration's ``rules[]``:
    ``api_groups`` (``""`` for core, ``*`` for all), ``api_versions``,
    ``resources`` (plural, lowercase: ``pods``, ``pods/status``, ``*``)."""

    operations: Sequence[_types.Operation]
    api_groups: Sequence[str]
    api_versions: Sequence[str]
    resources: Sequence[str]
    scope: _types.Scope = _types.Scope.ANY

    def _to_wit(self) -> _types.AdmissionRule:
        return _types.AdmissionRule(
            list(self.operations), list(self.api_groups), list(self.api_versions), list(self.resources), self.scope
        )


@dataclass
class Webhook:
    """A webhook the plugin serves (at most one per :data:`Hook`). The host
    registers it with the API server, excluding wink's own namespace,
    ``kube-system`` and Leases."""

    hook: _types.Hook
    rules: List[Rule]
    namespace_selector: Optional[str] = None
    object_selector: Optional[str] = None
    failure_policy: _types.FailurePolicy = _types.FailurePolicy.FAIL
    timeout_seconds: int = 10
    match_policy: _types.MatchPolicy = _types.MatchPolicy.EQUIVALENT

    def _to_wit(self) -> _types.Webhook:
        return _types.Webhook(
            hook=self.hook,
            rules=[r._to_wit() for r in self.rules],
            namespace_selector=self.namespace_selector,
            object_selector=self.object_selector,
            failure_policy=self.failure_policy,
            timeout_seconds=self.timeout_seconds,
            match_policy=self.match_policy,
        )


class Request:
    """An ``admission.k8s.io/v1`` AdmissionRequest, its objects as
    :class:`~wink_sdk.Object` (lent for the call: ``clone()`` to keep one)."""

    __slots__ = (
        "uid",
        "kind",
        "resource",
        "sub_resource",
        "request_kind",
        "request_resource",
        "name",
        "namespace",
        "operation",
        "user_info",
        "object",
        "old_object",
        "dry_run",
        "options",
    )

    def __init__(self, req: _wit.Request) -> None:
        key = req.name if req.namespace is None or req.name is None else f"{req.namespace}/{req.name}"
        self.uid: str = req.uid
        self.kind: GroupVersionKind = req.kind
        self.resource: GroupVersionResource = req.resource
        self.sub_resource: Optional[str] = req.sub_resource
        self.request_kind: Optional[GroupVersionKind] = req.request_kind
        self.request_resource: Optional[GroupVersionResource] = req.request_resource
        self.name: Optional[str] = req.name
        self.namespace: Optional[str] = req.namespace
        self.operation: _types.Operation = req.operation
        self.user_info: UserInfo = req.user_info
        #: The new object (create, update); ``None`` on delete.
        self.object: Optional[Object] = None if req.object is None else Object(req.object, key)
        #: The stored object (update, delete).
        self.old_object: Optional[Object] = None if req.old_object is None else Object(req.old_object, key)
        #: The request will not be persisted (``kubectl --dry-run=server``).
        self.dry_run: bool = req.dry_run
        #: The operation's options (CreateOptions, ...) as JSON, or empty.
        self.options: str = req.options

    def __repr__(self) -> str:
        return f"Request({self.operation.name} {self.resource.resource} {self.namespace}/{self.name})"


@dataclass
class Verdict:
    """Allowed or denied, with ``warnings`` shown to the client either way.
    A denial's ``code`` defaults to 403 on the host. Build one with
    :meth:`allow` or :meth:`deny`."""

    allowed: bool = True
    message: str = ""
    code: Optional[int] = None
    reason: Optional[str] = None
    warnings: List[str] = field(default_factory=list)
    audit_annotations: Dict[str, str] = field(default_factory=dict)

    @classmethod
    def allow(cls, *warnings: str) -> "Verdict":
        """Allowed (with these warnings)."""
        return cls(True, warnings=list(warnings))

    @classmethod
    def deny(cls, message: str, code: Optional[int] = None, reason: Optional[str] = None) -> "Verdict":
        """Denied, ``message`` shown to the client."""
        return cls(False, message, code, reason)

    def _to_wit(self) -> _wit.Verdict:
        return _wit.Verdict(
            allowed=self.allowed,
            code=self.code,
            reason=self.reason,
            message=self.message,
            warnings=list(self.warnings),
            audit_annotations=list(self.audit_annotations.items()),
        )


@dataclass
class Mutation:
    """A mutating answer: the :class:`Verdict` and, when it changes the
    object, the whole changed object (a dict, or JSON text); the host sends
    the API server the JSON Patch to it."""

    verdict: Verdict = field(default_factory=Verdict)
    object: Union[None, str, Dict[str, Any]] = None

    def _to_wit(self) -> _wit.Mutation:
        obj = self.object
        text = obj if obj is None or isinstance(obj, str) else _json.dumps(obj, separators=(",", ":"))
        return _wit.Mutation(self.verdict._to_wit(), text)


def _verdict(answer: Optional[Verdict]) -> _wit.Verdict:
    """A hook's answer as the WIT verdict (``None``: allowed)."""
    return (answer or Verdict())._to_wit()


def _mutation(answer: Union[None, Mutation, Verdict]) -> _wit.Mutation:
    """A hook's answer as the WIT mutation (``None``: allowed, unchanged; a
    bare :class:`Verdict`: that verdict, unchanged)."""
    if isinstance(answer, Verdict):
        return Mutation(answer)._to_wit()
    return (answer or Mutation())._to_wit()
