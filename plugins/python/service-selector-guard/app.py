"""service-selector-guard in Python: a context-aware policy, like the Rust
example. A Service whose selector matches no Pod of its namespace routes
nowhere.

- At the door (a validating webhook on Service create and update): such a
  Service is refused, naming its selector. The Pods are looked up in wink's
  informer cache (the plugin reads v1 Pods), so an admission request costs
  no request to the API server.
- In the background: every Service gets the policy result
  ``selector-matches-pods`` (``fail`` naming the selector, or ``pass``), kept
  current as Services change; Pods coming and going are seen at the next
  resync (every 5 minutes).

A Service without a selector (one with manual Endpoints) passes. No config.
"""

import json
import logging
from typing import Any, Dict, Optional

import wink_sdk
from wink_sdk import (
    CacheError,
    Finding,
    Object,
    Outcome,
    Registration,
    Request,
    Resource,
    Severity,
    Verdict,
    Watch,
    WinkError,
    cache,
    report,
)
from wink_sdk.admission import Hook, Operation, Rule, Webhook

log = logging.getLogger("service-selector-guard")
PODS = Resource("v1", "Pod")


def selector(service: Dict[str, Any]) -> Optional[str]:
    """The selector as label-selector text (keys sorted), or ``None`` when
    the Service has none."""
    pairs = (service.get("spec") or {}).get("selector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(pairs.items())) or None


def matches_pods(namespace: str, sel: str) -> bool:
    """Whether some Pod of ``namespace`` matches ``sel``, from the cache
    (raises :class:`CacheError`)."""
    return cache.first(PODS, namespace, sel) is not None


def describe(e: CacheError) -> str:
    """An error as the Rust example prints it (``NotPermitted("...")``)."""
    return f"{e.kind}({json.dumps(e.message)})"


class Guard(wink_sdk.Handler):
    """Refuses Services that select no Pod; reports on every Service."""

    def init(self, config: str) -> Registration:
        door = Webhook(Hook.VALIDATE, [Rule([Operation.CREATE, Operation.UPDATE], [""], ["v1"], ["services"])])
        return Registration(
            # One name everywhere (grants, reports, Events), whatever the
            # component's file is called.
            name="service-selector-guard",
            watches=[Watch("v1", "Service", resync=300)],
            reads=[Watch("v1", "Pod")],
            admission=[door],
        )

    def on_add(self, obj: Object, in_initial_list: bool) -> None:
        report_on(obj)

    def on_update(self, old: Object, new: Object) -> None:
        report_on(new)

    def validate(self, request: Request) -> Verdict:
        if request.object is None or request.namespace is None:
            return Verdict.allow()
        try:
            sel = selector(request.object.to_dict())
        except (ValueError, AttributeError):
            return Verdict.allow()  # not a Service this rule can read
        if sel is None:
            return Verdict.allow()
        try:
            found = matches_pods(request.namespace, sel)
        except CacheError as e:
            return Verdict.allow(f"service-selector-guard: Pods not looked up: {describe(e)}")
        if found:
            return Verdict.allow()
        return Verdict.deny(
            f"service-selector-guard: the selector {sel} matches no Pod in namespace {request.namespace}"
        )


def report_on(obj: Object) -> None:
    """Give ``obj`` its ``selector-matches-pods`` result."""
    try:
        sel = selector(obj.to_dict())
    except (ValueError, AttributeError):
        return
    if sel is None or obj.namespace is None:
        outcome, message = Outcome.PASS, "no selector"
    else:
        try:
            if matches_pods(obj.namespace, sel):
                outcome, message = Outcome.PASS, f"the selector {sel} matches Pods"
            else:
                outcome, message = Outcome.FAIL, f"the selector {sel} matches no Pod"
        except CacheError as e:
            outcome, message = Outcome.ERROR, f"Pods not looked up: {describe(e)}"
    finding = Finding(
        "selector-matches-pods", outcome, message=message, severity=Severity.MEDIUM, category="Services"
    )
    try:
        report.set(obj, [finding])
    except WinkError as e:
        log.warning("service-selector-guard: results about %s not given: %s", obj.key, e)


Handler = wink_sdk.export(Guard)
