/**
 * Writes to the API server, as this plugin. A write must be declared in the
 * registration and granted by the operator, else it throws `NotPermitted`;
 * every failure is a `WriteError` subclass. Bodies are objects (serialized
 * here) or JSON text.
 *
 * A create, replace or patch answers a `Written`: the `KubeObject` as the
 * server answered (so code using the answer as an object keeps working),
 * with `dryRun`, true when the plugin runs in audit mode and the write was a
 * server-side dry run that changed nothing (`written.object` is the answer
 * itself). A delete answers a `Deleted`, `{object, dryRun}`.
 *
 * ```ts
 * const done = write.mergePatch(deployments, key, { metadata: { labels } });
 * log.info(done.dryRun ? "would label (audit mode: dry run)" : "labeled");
 * ```
 */

import * as wit from "wink:plugin/write@0.4.0";
import { writeError } from "./errors.js";
import { KubeObject } from "./object.js";
import type { Resource } from "./registration.js";

/** A request body: JSON text or a value to serialize. */
export type Body = string | object;
/** How a delete propagates to dependents. */
export type Propagation = wit.Propagation;

function text(body: Body): string {
  return typeof body === "string" ? body : JSON.stringify(body);
}

function res(r: Resource) {
  return { apiVersion: r.apiVersion, kind: r.kind };
}

function call<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw writeError(e);
  }
}

/** The answer to a create, replace or patch: the object as answered (in a dry run, as it would have been stored). */
export class Written extends KubeObject {
  /** The write was a server-side dry run (audit mode): nothing changed. */
  readonly dryRun: boolean;

  /** @internal */
  constructor(answer: wit.Written) {
    super(answer.object, undefined);
    this.dryRun = answer.dryRun;
  }

  /** The object as answered (this value itself: a `Written` is one). */
  get object(): KubeObject {
    return this;
  }
}

/** The answer to a delete. */
export interface Deleted {
  /** The object while it is being finalized; undefined once gone. */
  object?: KubeObject;
  /** The delete was a server-side dry run (audit mode): nothing was deleted. */
  dryRun: boolean;
}

function obj(w: wit.Written): Written {
  return new Written(w);
}

/** Create an object (apiVersion, kind, name and namespace set). */
export function create(resource: Resource, body: Body): Written {
  return obj(call(() => wit.create(res(resource), text(body))));
}

/** Replace an object (a stale `metadata.resourceVersion` throws `Conflict`). */
export function replace(resource: Resource, body: Body): Written {
  return obj(call(() => wit.replace(res(resource), text(body))));
}

/** Merge-patch (RFC 7386) the object under `key`. */
export function mergePatch(resource: Resource, key: string, patch: Body): Written {
  return obj(call(() => wit.patch(res(resource), key, { tag: "merge" }, text(patch))));
}

/** JSON-patch (RFC 6902) the object under `key`. */
export function jsonPatch(resource: Resource, key: string, patch: Body): Written {
  return obj(call(() => wit.patch(res(resource), key, { tag: "json" }, text(patch))));
}

/** Strategic-merge-patch (built-in types only) the object under `key`. */
export function strategicMergePatch(resource: Resource, key: string, patch: Body): Written {
  return obj(call(() => wit.patch(res(resource), key, { tag: "strategic-merge" }, text(patch))));
}

/** Server-side apply with the plugin's field manager (`force` takes over fields). */
export function apply(resource: Resource, key: string, body: Body, force = false): Written {
  return obj(call(() => wit.patch(res(resource), key, { tag: "apply", val: force }, text(body))));
}

/** Options of a delete. */
export interface DeleteOptions {
  uid?: string;
  resourceVersion?: string;
  propagation?: Propagation;
}

/** Delete the object under `key`: `Deleted.object` is the object while it is being finalized, undefined once gone. */
export function remove(resource: Resource, key: string, options: DeleteOptions = {}): Deleted {
  const d = call(() => wit.delete(res(resource), key, { ...options }));
  return { object: d.object === undefined ? undefined : new KubeObject(d.object, undefined), dryRun: d.dryRun };
}

/** Replace the `status` subresource. */
export function replaceStatus(resource: Resource, body: Body): Written {
  return obj(call(() => wit.replaceStatus(res(resource), text(body))));
}

/** Merge-patch the `status` subresource of the object under `key`. */
export function mergePatchStatus(resource: Resource, key: string, patch: Body): Written {
  return obj(call(() => wit.patchStatus(res(resource), key, { tag: "merge" }, text(patch))));
}
