/**
 * The plugin's work queue: keys it adds itself (`add`, `addAfter`) and what
 * `Handler.reconcile(key)` answers (`Action`; undefined means done). Needs a
 * `queue` in the registration; without one, adding throws a `QueueError`.
 *
 * ```ts
 * reconcile(key: string): Action | undefined {
 *   if (!ready(key)) return Action.requeueAfter(30_000);
 *   return undefined; // done: the key's backoff is forgotten
 * }
 * ```
 */

import type { Action as WitAction } from "wink:plugin/reconciler@0.4.0";
import * as wit from "wink:plugin/queue@0.4.0";
import { queueError } from "./errors.js";

/** What to do with a key after `reconcile`. */
export type Action = WitAction;

function ms(delayMs: number): bigint {
  return BigInt(Math.max(0, Math.ceil(delayMs)));
}

/** Constructors of `Action`s. */
export const Action = {
  /** Done: forget the key's backoff. */
  done: (): Action => ({ tag: "done" }),
  /** Look again after the key's backoff (rate limited). */
  requeue: (): Action => ({ tag: "requeue" }),
  /** Look again after `delayMs` milliseconds, backoff forgotten. */
  requeueAfter: (delayMs: number): Action => ({ tag: "requeue-after", val: ms(delayMs) }),
};

/** Add `key` now (held once however often it is added). */
export function add(key: string): void {
  try {
    wit.add(key);
  } catch (e) {
    throw queueError(e);
  }
}

/** Add `key` after `delayMs` milliseconds. */
export function addAfter(key: string, delayMs: number): void {
  try {
    wit.addAfter(key, ms(delayMs));
  } catch (e) {
    throw queueError(e);
  }
}
