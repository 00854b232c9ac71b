/**
 * wink-sdk for JavaScript and TypeScript: write wink plugins (WebAssembly
 * components of the `wink:plugin@0.3.0` world), built with componentize-js.
 *
 * ```ts
 * import { Handler, KubeObject, Registration, log, plugin } from "wink-sdk";
 *
 * class PodLogger extends Handler {
 *   init(config: string): Registration {
 *     return { watches: [{ apiVersion: "v1", kind: "Pod" }] };
 *   }
 *   onAdd(obj: KubeObject, inInitialList: boolean): void {
 *     log.info(`OnAdd: ${obj.name}`);
 *   }
 * }
 *
 * export const handler = plugin(PodLogger);
 * ```
 *
 * Modules: `cache` (queries), `write`, `events`, `report`, `log`, and the
 * error classes.
 */

import type * as types from "wink:plugin/types@0.3.0";
import { KubeObject } from "./object.js";
import { type Registration, toWit } from "./registration.js";

export * as cache from "./cache.js";
export * as events from "./events.js";
export * as log from "./log.js";
export * as report from "./report.js";
export * as write from "./write.js";
export * from "./errors.js";
export { KubeObject } from "./object.js";
export { IndexBy, Resource } from "./registration.js";
export type { IndexKind, Registration, Verb, Watch, Writes } from "./registration.js";
export type { Finding, Outcome, Severity } from "./report.js";

/**
 * A plugin's event handler: client-go's `ResourceEventHandler` plus `init`.
 * Override what you react to; calls never overlap. An exception out of
 * `init` refuses the plugin (its message is logged); one out of an event
 * handler crashes the instance like a trap: the host logs it, restarts the
 * plugin and, after repeated crashes, quarantines it.
 */
export abstract class Handler {
  /** Say what to watch; `config` is the text of `<name>.json`, or empty (see `config`). */
  abstract init(config: string): Registration;
  /** An object was added (`inInitialList`: replayed from the cache). */
  onAdd(_obj: KubeObject, _inInitialList: boolean): void {}
  /** An object changed; on a resync `oldObj` and `newObj` are the same version. */
  onUpdate(_oldObj: KubeObject, _newObj: KubeObject): void {}
  /** An object was deleted (`finalStateUnknown`: missed while the watch was down). */
  onDelete(_obj: KubeObject, _finalStateUnknown: boolean): void {}
  /** Every object of the initial lists was delivered: act on the whole picture. */
  onSynced(): void {}
}

/**
 * A plugin's config text as an object: `defaults` when it is empty, else the
 * JSON object over the defaults (an unknown field, when `defaults` is given,
 * or anything but an object throws `bad config: ...`).
 */
export function config<T extends object>(text: string, defaults: T): T {
  if (text.trim() === "") return { ...defaults };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new Error(`bad config: ${(e as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error("bad config: not a JSON object");
  }
  for (const k of Object.keys(value)) {
    if (Object.keys(defaults).length > 0 && !(k in defaults)) throw new Error(`bad config: unknown field "${k}"`);
  }
  return { ...defaults, ...(value as Partial<T>) };
}

/** True when an update is a resync: the same object version again. */
export function isResync(oldObj: KubeObject, newObj: KubeObject): boolean {
  return oldObj.uid === newObj.uid && oldObj.resourceVersion === newObj.resourceVersion;
}

/** The WIT `handler` interface, as componentize-js exports it. */
export interface HandlerExport {
  init(config: string): types.Registration;
  onAdd(key: string, obj: types.Object, inInitialList: boolean): void;
  onUpdate(key: string, oldObj: types.Object, newObj: types.Object): void;
  onDelete(key: string, obj: types.Object, finalStateUnknown: boolean): void;
  onSynced(): void;
}

/**
 * The world's `handler` export running `cls` (constructed once, with no
 * arguments, at `init`): `export const handler = plugin(MyHandler);`.
 */
export function plugin(cls: new () => Handler): HandlerExport {
  let h: Handler | undefined;
  return {
    init(config: string): types.Registration {
      try {
        h = new cls();
        return toWit(h.init(config));
      } catch (e) {
        // componentize-js turns a thrown value into the `result`'s error.
        throw e instanceof Error ? e.message : String(e);
      }
    },
    onAdd(key, obj, inInitialList) {
      h!.onAdd(new KubeObject(obj, key), inInitialList);
    },
    onUpdate(key, oldObj, newObj) {
      h!.onUpdate(new KubeObject(oldObj, key), new KubeObject(newObj, key));
    },
    onDelete(key, obj, finalStateUnknown) {
      h!.onDelete(new KubeObject(obj, key), finalStateUnknown);
    },
    onSynced() {
      h!.onSynced();
    },
  };
}
