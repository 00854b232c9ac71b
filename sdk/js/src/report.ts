/**
 * Policy results about objects, kept by the host in `wgpolicyk8s.io`
 * PolicyReports. The results given about one object during one handler call
 * replace, together, every result given about it before. A refusal throws a
 * `ReportError`.
 */

import * as wit from "wink:plugin/report@0.4.0";
import { reportError } from "./errors.js";
import type { KubeObject } from "./object.js";

/** What a rule concluded. */
export type Outcome = wit.Outcome;
/** How much a failure matters. */
export type Severity = wit.Severity;

/** One rule's result about one object. */
export interface Finding {
  rule: string;
  outcome: Outcome;
  message?: string;
  severity?: Severity;
  category?: string;
  /** The policy the rule belongs to (default: the plugin's name). */
  policy?: string;
  properties?: Record<string, string>;
}

/** Give `findings` about `subject` (they replace its previous ones when the call returns). */
export function set(subject: KubeObject, findings: Finding[]): void {
  const results: wit.PolicyResult[] = findings.map((f) => ({
    policy: f.policy,
    rule: f.rule,
    outcome: f.outcome,
    severity: f.severity,
    category: f.category,
    message: f.message ?? "",
    properties: Object.entries(f.properties ?? {}),
  }));
  try {
    wit.setResults(subject.handle, results);
  } catch (e) {
    throw reportError(e);
  }
}

/** Give no result about `subject`: its previous results go. */
export function clear(subject: KubeObject): void {
  set(subject, []);
}
