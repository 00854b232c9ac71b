/**
 * Events about objects (`events.k8s.io/v1`); the host aggregates repeats.
 * Declare `recordsEvents: true`; the operator grants it. A refusal throws a
 * `WriteError`. Each function answers what became of the Event (`Recorded`):
 * `"sent"`, `"audit"` (recorded, marked as coming from a plugin in audit
 * mode: its note says `[audit]`) or `"dropped"` (by the spam filter).
 */

import * as wit from "wink:plugin/events@0.4.0";
import { writeError } from "./errors.js";
import type { KubeObject } from "./object.js";

/** `normal` or `warning`. */
export type EventType = wit.EventType;
/** `sent`, `audit` or `dropped`. */
export type Recorded = wit.Recorded;

/** Record an Event about `regarding`. */
export function record(regarding: KubeObject, type: EventType, reason: string, action: string, note: string): Recorded {
  try {
    return wit.recordEvent(regarding.handle, type, reason, action, note);
  } catch (e) {
    throw writeError(e);
  }
}

/** Record a Normal Event. */
export function normal(regarding: KubeObject, reason: string, action: string, note: string): Recorded {
  return record(regarding, "normal", reason, action, note);
}

/** Record a Warning Event. */
export function warning(regarding: KubeObject, reason: string, action: string, note: string): Recorded {
  return record(regarding, "warning", reason, action, note);
}
