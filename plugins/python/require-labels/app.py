"""require-labels in Python: a policy that acts, like the Rust example.

It watches apps/v1 Deployments; one missing a required label gets a Warning
Event (``MissingLabel``) and the label, set to its default by a merge patch.
Every Deployment it checks gets one policy result per required label, in
category ``Labels`` with severity medium: rule ``require-label-<label>``,
``fail`` ("missing label team") or ``pass`` ("has label team"). It logs
what the patch did: ``labeled <key>``, or, when the plugin runs in audit mode
and the patch was a server-side dry run, ``would label <key> (audit mode: dry
run)``.

Config (these are the defaults): ``{"labels": ["team"], "default": "unassigned"}``.
"""

import json
import logging
from typing import List

import wink_sdk
from wink_sdk import (
    Finding,
    NotFound,
    Object,
    Outcome,
    Registration,
    Resource,
    Severity,
    Verb,
    Watch,
    WinkError,
    Writes,
    events,
    report,
    write,
)

log = logging.getLogger("require-labels")
DEPLOYMENTS = Resource("apps/v1", "Deployment")


def describe(e: WinkError) -> str:
    """An error as the Rust example prints it (``WriteError::NotPermitted("...")``),
    so both log the same lines."""
    if isinstance(e, wink_sdk.WriteError) and e.status is not None:
        return f"WriteError::{e.kind}({e.status.code} {e.status.reason}: {e.status.message})"
    return f"WriteError::{e.kind}({json.dumps(e.message)})"


class RequireLabels(wink_sdk.Handler):
    """Labels Deployments that miss a required label."""

    labels: List[str]
    default: str

    def init(self, config: str) -> Registration:
        cfg = wink_sdk.config(config, {"labels": ["team"], "default": "unassigned"})
        self.labels, self.default = list(cfg["labels"]), str(cfg["default"])
        return Registration(
            watches=[Watch("apps/v1", "Deployment")],
            writes=[Writes(DEPLOYMENTS, [Verb.PATCH])],
            records_events=True,
        )

    def on_add(self, obj: Object, in_initial_list: bool) -> None:
        self.check(obj)

    def on_update(self, old: Object, new: Object) -> None:
        self.check(new)

    def check(self, obj: Object) -> None:
        """Report, then record an Event and patch for each missing label."""
        missing = [label for label in self.labels if obj.label(label) is None]
        self.report(obj, missing)
        if not missing:
            return
        for label in missing:
            log.info("require-labels: %s missing %s", obj.key, label)
            note = f"missing label {label}: set to {json.dumps(self.default)}"
            try:
                events.warning(obj, "MissingLabel", "Labeled", note)
            except WinkError as e:
                log.warning("require-labels: Event about %s not recorded: %s", obj.key, describe(e))
        patch = {"metadata": {"labels": {label: self.default for label in missing}}}
        try:
            done = write.merge_patch(DEPLOYMENTS, obj.key, patch)
        except NotFound:
            pass  # deleted meanwhile: nothing to label
        except WinkError as e:
            log.warning("require-labels: %s not labeled: %s", obj.key, describe(e))
        else:
            if done.dry_run:
                log.info("require-labels: would label %s (audit mode: dry run)", obj.key)
            else:
                log.info("require-labels: labeled %s", obj.key)

    def report(self, obj: Object, missing: List[str]) -> None:
        """One result per required label: ``fail`` when missing, else ``pass``."""
        findings = [
            Finding(
                f"require-label-{label}",
                Outcome.FAIL if label in missing else Outcome.PASS,
                message=f"missing label {label}" if label in missing else f"has label {label}",
                severity=Severity.MEDIUM,
                category="Labels",
            )
            for label in self.labels
        ]
        try:
            report.set(obj, findings)
        except WinkError as e:
            log.warning("require-labels: results about %s not given: %s", obj.key, e)


Handler = wink_sdk.export(RequireLabels)
