/**
 * require-labels in TypeScript: a policy that acts, like the Rust example.
 *
 * It watches apps/v1 Deployments; one missing a required label gets a
 * Warning Event (`MissingLabel`) and the label, set to its default by a
 * merge patch. Every Deployment it checks gets one policy result per
 * required label, in category `Labels` with severity medium: rule
 * `require-label-<label>`, `fail` ("missing label team") or `pass`. Its log
 * line and Event say what the patch did: `missing label team: set to
 * "unassigned"` (action `Labeled`), or, when the plugin runs in audit mode
 * and the patch was a server-side dry run, `... would be set to (audit mode:
 * nothing changed) "unassigned"` (action `WouldLabel`).
 *
 * Config (these are the defaults): `{"labels": ["team"], "default": "unassigned"}`.
 */

import {
  Handler,
  type KubeObject,
  NotFound,
  type Registration,
  Resource,
  WinkError,
  WriteError,
  config,
  events,
  log,
  plugin,
  report,
  write,
} from "wink-sdk";

const DEPLOYMENTS = new Resource("apps/v1", "Deployment");

/** An error as the Rust example prints it, so both log the same lines. */
function describe(e: WinkError): string {
  if (e instanceof WriteError && e.status) return `WriteError::${e.kind}(${e.message})`;
  return `WriteError::${e.kind}(${JSON.stringify(e.message)})`;
}

class RequireLabels extends Handler {
  labels: string[] = [];
  default = "";

  init(text: string): Registration {
    const cfg = config(text, { labels: ["team"], default: "unassigned" });
    this.labels = [...cfg.labels];
    this.default = String(cfg.default);
    return {
      watches: [{ apiVersion: "apps/v1", kind: "Deployment" }],
      writes: [{ resource: DEPLOYMENTS, verbs: ["patch"] }],
      recordsEvents: true,
    };
  }

  onAdd(obj: KubeObject): void {
    this.check(obj);
  }

  onUpdate(_old: KubeObject, obj: KubeObject): void {
    this.check(obj);
  }

  check(obj: KubeObject): void {
    const missing = this.labels.filter((l) => obj.label(l) === undefined);
    this.report(obj, missing);
    if (missing.length === 0) return;
    const labels: Record<string, string> = {};
    for (const label of missing) labels[label] = this.default;
    // In audit mode the patch is a dry run: say what would have been done.
    let action: string;
    let done: string;
    try {
      const written = write.mergePatch(DEPLOYMENTS, obj.key, { metadata: { labels } });
      [action, done] = written.dryRun
        ? ["WouldLabel", "would be set to (audit mode: nothing changed)"]
        : ["Labeled", "set to"];
    } catch (e) {
      if (e instanceof NotFound) return; // deleted meanwhile: nothing to label
      if (!(e instanceof WinkError)) throw e;
      log.warn(`require-labels: ${obj.key} not labeled: ${describe(e)}`);
      [action, done] = ["NotLabeled", "could not be set to"];
    }
    for (const label of missing) {
      const note = `missing label ${label}: ${done} ${JSON.stringify(this.default)}`;
      log.info(`require-labels: ${obj.key}: ${note}`);
      try {
        events.warning(obj, "MissingLabel", action, note);
      } catch (e) {
        if (!(e instanceof WinkError)) throw e;
        log.warn(`require-labels: Event about ${obj.key} not recorded: ${describe(e)}`);
      }
    }
  }

  report(obj: KubeObject, missing: string[]): void {
    try {
      report.set(
        obj,
        this.labels.map((label) => ({
          rule: `require-label-${label}`,
          outcome: missing.includes(label) ? "fail" : "pass",
          message: missing.includes(label) ? `missing label ${label}` : `has label ${label}`,
          severity: "medium",
          category: "Labels",
        })),
      );
    } catch (e) {
      if (!(e instanceof WinkError)) throw e;
      log.warn(`require-labels: results about ${obj.key} not given: ${e.message}`);
    }
  }
}

export const handler = plugin(RequireLabels);
