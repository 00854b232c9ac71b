/**
 * wink-sdk for JavaScript and TypeScript: write wink plugins (WebAssembly
 * components of the `wink:plugin@0.4.0` world), built with componentize-js.
 * Components built with the 0.3.0 SDK keep running unchanged on a 0.4.0 host.
 *
 * ```ts
 * import { Handler, KubeObject, Registration, log, plugin } from "wink-sdk";
 *
 * class PodLogger extends Handler {
 *   init(config: string): Registration {
 *     return { watches: [{ apiVersion: "v1", kind: "Pod" }] };
 *   }
 *   onAdd(obj: KubeObject, inInitialList: boolean): void {
 *     log.info(`OnAdd: ${obj.name} (watch ${obj.watch})`);
 *   }
 * }
 *
 * export const handler = plugin(PodLogger);
 * ```
 *
 * That one line is all a module exports: the world also exports `admission`
 * and `reconciler`, which `wink-build` takes from the module when it
 * exports them, else from `plugin(...)` (see `worldExports`), answering
 * from the handler's `validate`, `mutate`, `reconcile` and `mapToKeys`,
 * whose defaults allow, change nothing, are done and map to no keys.
 * `handler.on-batch` is the SDK's too: it calls `onAdd`/`onUpdate`/`onDelete`
 * for each event, after `delivery.begin(i)`.
 *
 * Modules: `cache` (queries), `write`, `events`, `report`, `log`,
 * `admission`, `queue` (the work queue and `Action`), and the error classes.
 */

import * as admissionHooks from "./admission.js";
import type * as witAdmission from "wink:plugin/admission@0.4.0";
import * as delivery from "wink:plugin/delivery@0.4.0";
import type { Event } from "wink:plugin/handler@0.4.0";
import type { Action as WitAction } from "wink:plugin/reconciler@0.4.0";
import type * as types from "wink:plugin/types@0.4.0";
import { KubeObject } from "./object.js";
import type { Action } from "./queue.js";
import { type Registration, toWit } from "./registration.js";

export * as admission from "./admission.js";
export * as cache from "./cache.js";
export * as events from "./events.js";
export * as log from "./log.js";
export * as queue from "./queue.js";
export * as report from "./report.js";
export * as write from "./write.js";
export * from "./errors.js";
export { KubeObject } from "./object.js";
export { Action } from "./queue.js";
export { Change, Enqueue, IndexBy, Resource } from "./registration.js";
export type {
  AdmissionRule,
  ChangeKind,
  EnqueueKind,
  FailurePolicy,
  Hook,
  IndexKind,
  MatchPolicy,
  Operation,
  Queue,
  Registration,
  Scope,
  Verb,
  Watch,
  Webhook,
  Writes,
} from "./registration.js";
export type { Recorded } from "./events.js";
export type { Finding, Outcome, Severity } from "./report.js";
export type { Deleted, Written } from "./write.js";

/**
 * A plugin's event handler: client-go's `ResourceEventHandler` plus `init`.
 * Override what you react to; calls never overlap. An exception out of
 * `init` refuses the plugin (its message is logged); one out of an event
 * handler crashes the instance like a trap: the host logs it, restarts the
 * plugin and, after repeated crashes, quarantines it. `obj.watch` in an
 * event handler is the index of the event's watch in `Registration.watches`.
 *
 * The admission and reconciler hooks (`validate`, `mutate`, `reconcile`,
 * `mapToKeys`) are called only for what the registration declares
 * (webhooks, a queue); their defaults allow, change nothing, are done and
 * map to no keys. Admission calls run on instances of their own, which may
 * never have had `init` called.
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
  /** Answer the `validate` webhook (undefined: allowed). */
  validate(_request: admissionHooks.Request): admissionHooks.Verdict | undefined {
    return undefined;
  }
  /** Answer the `mutate` webhook: the verdict and the changed object (undefined: allowed, unchanged). */
  mutate(_request: admissionHooks.Request): admissionHooks.Mutation | undefined {
    return undefined;
  }
  /** Make the object under `key` right; answer an `Action` (undefined: done). A throw requeues the key with backoff. */
  reconcile(_key: string): Action | undefined {
    return undefined;
  }
  /** The queue keys an object of an `Enqueue.mapped()` watch (`obj.watch`) concerns. */
  mapToKeys(_obj: KubeObject): string[] {
    return [];
  }
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
  onAdd(watch: number, key: string, obj: types.Object, inInitialList: boolean): void;
  onUpdate(watch: number, key: string, oldObj: types.Object, newObj: types.Object): void;
  onDelete(watch: number, key: string, obj: types.Object, finalStateUnknown: boolean): void;
  onSynced(): void;
  onBatch(events: Event[], objects: types.Object[]): void;
}

/** The WIT `admission` interface, as componentize-js exports it. */
export interface AdmissionExport {
  validate(request: witAdmission.Request): witAdmission.Verdict;
  mutate(request: witAdmission.Request): witAdmission.Mutation;
}

/** The WIT `reconciler` interface, as componentize-js exports it. */
export interface ReconcilerExport {
  reconcile(key: string): WitAction;
  mapToKeys(watch: number, obj: types.Object): string[];
}

/** Every export of the world. */
export interface WorldExports {
  handler: HandlerExport;
  admission: AdmissionExport;
  reconciler: ReconcilerExport;
}

const WORLD = Symbol.for("wink-sdk.world");

/** The message of what `init` or `reconcile` threw: componentize-js makes a thrown value the `result`'s error. */
function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * What `reconcile` answered, checked: an `Action` or undefined (done).
 * Anything else (a plain JavaScript caller's `"done"`, a number of ms)
 * throws, so it becomes the reconcile's error rather than a trap.
 */
function answered(action: unknown): Action | undefined {
  if (action === undefined || action === null) return undefined;
  const a = action as { tag?: unknown; val?: unknown };
  if (a.tag === "done" || a.tag === "requeue") return { tag: a.tag };
  if (a.tag === "requeue-after" && typeof a.val === "bigint" && a.val >= 0n) return { tag: a.tag, val: a.val };
  let shown: string;
  try {
    shown = JSON.stringify(action) ?? String(action);
  } catch {
    shown = String(action);
  }
  throw new Error(`reconcile answered ${shown}: not an Action or undefined`);
}

/**
 * `handler.on-batch` for `h`: for each event `i`, `delivery.begin(i)`, then
 * the handler's `onAdd`/`onUpdate`/`onDelete` with the event's objects (in
 * event order; an update takes two: old, then new).
 */
export function onBatch(h: Handler, events: Event[], objects: types.Object[]): void {
  let need = 0;
  for (const e of events) need += e.tag === "update" ? 2 : 1;
  if (need !== objects.length) {
    throw new Error(`onBatch: ${events.length} events need ${need} objects, got ${objects.length}`);
  }
  let j = 0;
  for (let i = 0; i < events.length; i++) {
    delivery.begin(i);
    const e = events[i];
    const v = e.val;
    if (e.tag === "add") {
      h.onAdd(KubeObject.ofEvent(objects[j++], v.key, v.watch), e.val.inInitialList);
    } else if (e.tag === "update") {
      const old = KubeObject.ofEvent(objects[j++], v.key, v.watch);
      h.onUpdate(old, KubeObject.ofEvent(objects[j++], v.key, v.watch));
    } else {
      h.onDelete(KubeObject.ofEvent(objects[j++], v.key, v.watch), e.val.finalStateUnknown);
    }
  }
}

const dispose: symbol = (Symbol as { dispose?: symbol }).dispose ?? Symbol.for("dispose");

/**
 * End the borrows of a batch's objects. The bindings of componentize-js 0.23
 * end those of an export's `borrow<object>` arguments when it returns, but do
 * not track those in a `list<borrow<object>>`: the SDK ends them itself. A
 * handle's dispose is the same `resource.drop` the bindings call, and it
 * leaves the handle unset, so bindings that end them too find nothing left.
 */
function release(objects: types.Object[]): void {
  for (const o of objects) (o as unknown as Record<symbol, (() => void) | undefined>)[dispose]?.();
}

/**
 * The world's `handler` export running `cls` (constructed once per
 * instance, with no arguments: at `init`, or at the first admission or
 * reconciler call of an instance that had none):
 * `export const handler = plugin(MyHandler);`. It carries the `admission`
 * and `reconciler` exports too (see `worldExports`).
 */
export function plugin(cls: new () => Handler): HandlerExport {
  let h: Handler | undefined;
  const instance = (): Handler => (h ??= new cls());
  const handler: HandlerExport = {
    init(config: string): types.Registration {
      try {
        h = new cls();
        return toWit(h.init(config));
      } catch (e) {
        // componentize-js turns a thrown value into the `result`'s error.
        throw message(e);
      }
    },
    onAdd(watch, key, obj, inInitialList) {
      h!.onAdd(KubeObject.ofEvent(obj, key, watch), inInitialList);
    },
    onUpdate(watch, key, oldObj, newObj) {
      h!.onUpdate(KubeObject.ofEvent(oldObj, key, watch), KubeObject.ofEvent(newObj, key, watch));
    },
    onDelete(watch, key, obj, finalStateUnknown) {
      h!.onDelete(KubeObject.ofEvent(obj, key, watch), finalStateUnknown);
    },
    onSynced() {
      h!.onSynced();
    },
    onBatch(events, objects) {
      try {
        onBatch(h!, events, objects);
      } finally {
        release(objects);
      }
    },
  };
  const admission: AdmissionExport = {
    validate: (r) => admissionHooks.verdict(instance().validate(admissionHooks.request(r))),
    mutate: (r) => admissionHooks.mutation(instance().mutate(admissionHooks.request(r))),
  };
  const reconciler: ReconcilerExport = {
    reconcile(key) {
      let action: Action | undefined;
      try {
        action = answered(instance().reconcile(key));
      } catch (e) {
        throw message(e); // the key is requeued with backoff
      }
      return action ?? { tag: "done" };
    },
    mapToKeys: (watch, obj) => [...instance().mapToKeys(KubeObject.ofEvent(obj, undefined, watch))],
  };
  // Enumerable, so a module exporting `{ ...plugin(X), init() {...} }` keeps it.
  Object.defineProperty(handler, WORLD, { value: { handler, admission, reconciler }, enumerable: true });
  return handler;
}

/** What a plugin that neither admits nor reconciles answers. */
const defaults = {
  admission: {
    validate: () => admissionHooks.verdict(undefined),
    mutate: () => admissionHooks.mutation(undefined),
  } satisfies AdmissionExport,
  reconciler: {
    reconcile: (): WitAction => ({ tag: "done" }),
    mapToKeys: () => [],
  } satisfies ReconcilerExport,
};

/**
 * The three exports of the world for an app module's exports: its own
 * `admission` and `reconciler` when it has them, else those of the
 * `plugin(...)` its `handler` is (else allowing, done). `wink-build` builds
 * `export const { handler, admission, reconciler } = worldExports(app)`
 * around the app module, so the app exports only `handler`; a build without
 * wink-build writes that line itself.
 */
export function worldExports(app: { handler?: HandlerExport; admission?: AdmissionExport; reconciler?: ReconcilerExport }): WorldExports {
  const handler = app.handler;
  if (handler === undefined) throw new Error("the plugin module exports no `handler` (export const handler = plugin(MyHandler))");
  const made = (handler as { [WORLD]?: WorldExports })[WORLD];
  return {
    handler,
    admission: app.admission ?? made?.admission ?? defaults.admission,
    reconciler: app.reconciler ?? made?.reconciler ?? defaults.reconciler,
  };
}
