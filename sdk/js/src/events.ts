/**
 * Events about objects (`events.k8s.io/v1`); the host aggregates repeats.
 * Declare `recordsEvents: true`; the operator grants it. A refusal throws a
 * `WriteError`.
 */

import * as wit from "wink:plugin/events@0.3.0";
import { writeError } from "./errors.js";
import type { KubeObject } from "./object.js";

/** `normal` or `warning`. */
export type EventType = wit.EventType;

/** Record an Event about `regarding`. */
export function record(regarding: KubeObject, type: EventType, reason: string, action: string, note: string): void {
  try {
    wit.recordEvent(regarding.handle, type, reason, action, note);
  } catch (e) {
    throw writeError(e);
  }
}

/** Record a Normal Event. */
export function normal(regarding: KubeObject, reason: string, action: string, note: string): void {
  record(regarding, "normal", reason, action, note);
}

/** Record a Warning Event. */
export function warning(regarding: KubeObject, reason: string, action: string, note: string): void {
  record(regarding, "warning", reason, action, note);
}
