"""require-labels in Python: a policy that acts, like the Rust example.

It watches apps/v1 Deployments; one missing a required label gets a Warning
Event (``MissingLabel``) and the label, set to its default by a merge patch.
Every Deployment it checks gets one policy result per required label, in
category ``Labels`` with severity medium: rule ``require-label-<label>``,
``fail`` ("missing label team") or ``pass`` ("has label team"). Its log
line and Event say what the patch did: ``missing label team: set to
"unassigned"`` (action ``Labeled``), or, when the plugin runs in audit mode and
the patch was a server-side dry run, ``... would be set to (audit mode: nothing
changed) "unassigned"`` (action ``WouldLabel``).

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
        """Report, patch the missing labels, then log and record an Event for
        each, saying what the patch did."""
        missing = [label for label in self.labels if obj.label(label) is None]
        self.report(obj, missing)
        if not missing:
            return
        patch = {"metadata": {"labels": {label: self.default for label in missing}}}
        # In audit mode the patch is a dry run: say what would have been done.
        try:
            written = write.merge_patch(DEPLOYMENTS, obj.key, patch)
        except NotFound:
            return  # deleted meanwhile: nothing to label
        except WinkError as e:
            log.warning("require-labels: %s not labeled: %s", obj.key, describe(e))
            action, done = "NotLabeled", "could not be set to"
        else:
            if written.dry_run:
                action, done = "WouldLabel", "would be set to (audit mode: nothing changed)"
            else:
                action, done = "Labeled", "set to"
        for label in missing:
            note = f"missing label {label}: {done} {json.dumps(self.default)}"
            log.info("require-labels: %s: %s", obj.key, note)
            try:
                events.warning(obj, "MissingLabel", action, note)
            except WinkError as e:
                log.warning("require-labels: Event about %s not recorded: %s", obj.key, describe(e))

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
