"""Policy results about objects, kept by the host in policy reports
(wgpolicyk8s PolicyReports or OpenReports Reports, per the operator's
``--report-api``). The results given about one object during one handler call
replace, together, every result given about it before; a deleted object's
results go by themselves. A refusal raises :class:`~wink_sdk.errors.ReportError`.

>>> report.set(pod, [Finding("privileged-containers", Outcome.FAIL,
...                          message="privileged containers: app",
...                          severity=Severity.HIGH, properties={"containers": "app"})])
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Dict, Iterable, Optional

from componentize_py_types import Err
from wit_world.imports import report as _wit

from .errors import ReportError
from .object import Object

#: What a rule concluded: ``PASS``, ``FAIL``, ``WARN``, ``ERROR``, ``SKIP``.
Outcome = _wit.Outcome
#: How much a failure matters: ``INFO``, ``LOW``, ``MEDIUM``, ``HIGH``, ``CRITICAL``.
Severity = _wit.Severity


@dataclass
class Finding:
    """One rule's result about one object (a report's ``results[]`` entry)."""

    rule: str
    outcome: "_wit.Outcome"
    message: str = ""
    severity: Optional["_wit.Severity"] = None
    category: Optional[str] = None
    policy: Optional[str] = None
    properties: Dict[str, str] = field(default_factory=dict)

    def _to_wit(self) -> _wit.PolicyResult:
        return _wit.PolicyResult(
            policy=self.policy,
            rule=self.rule,
            outcome=self.outcome,
            severity=self.severity,
            category=self.category,
            message=self.message,
            properties=builtins.list(self.properties.items()),
        )


def set(subject: Object, findings: Iterable[Finding]) -> None:
    """Give ``findings`` about ``subject`` (they replace its previous ones
    when the call returns)."""
    try:
        _wit.set_results(subject.handle, [f._to_wit() for f in findings])
    except Err as e:
        raise ReportError(e.value) from None


def clear(subject: Object) -> None:
    """Give no result about ``subject``: its previous results go."""
    set(subject, [])
