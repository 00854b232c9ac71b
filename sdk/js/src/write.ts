/**
 * Writes to the API server, as this plugin. A write must be declared in the
 * registration and granted by the operator, else it throws `NotPermitted`;
 * every failure is a `WriteError` subclass. Bodies are objects (serialized
 * here) or JSON text; answers are `KubeObject` handles.
 */

import type { Object as Handle } from "wink:plugin/types@0.3.0";
import * as wit from "wink:plugin/write@0.3.0";
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

function obj(h: Handle): KubeObject {
  return new KubeObject(h, undefined);
}

/** Create an object (apiVersion, kind, name and namespace set). */
export function create(resource: Resource, body: Body): KubeObject {
  return obj(call(() => wit.create(res(resource), text(body))));
}

/** Replace an object (a stale `metadata.resourceVersion` throws `Conflict`). */
export function replace(resource: Resource, body: Body): KubeObject {
  return obj(call(() => wit.replace(res(resource), text(body))));
}

/** Merge-patch (RFC 7386) the object under `key`. */
export function mergePatch(resource: Resource, key: string, patch: Body): KubeObject {
  return obj(call(() => wit.patch(res(resource), key, { tag: "merge" }, text(patch))));
}

/** JSON-patch (RFC 6902) the object under `key`. */
export function jsonPatch(resource: Resource, key: string, patch: Body): KubeObject {
  return obj(call(() => wit.patch(res(resource), key, { tag: "json" }, text(patch))));
}

/** Strategic-merge-patch (built-in types only) the object under `key`. */
export function strategicMergePatch(resource: Resource, key: string, patch: Body): KubeObject {
  return obj(call(() => wit.patch(res(resource), key, { tag: "strategic-merge" }, text(patch))));
}

/** Server-side apply with the plugin's field manager (`force` takes over fields). */
export function apply(resource: Resource, key: string, body: Body, force = false): KubeObject {
  return obj(call(() => wit.patch(res(resource), key, { tag: "apply", val: force }, text(body))));
}

/** Options of a delete. */
export interface DeleteOptions {
  uid?: string;
  resourceVersion?: string;
  propagation?: Propagation;
}

/** Delete the object under `key`: the object while it is being finalized, undefined once gone. */
export function remove(resource: Resource, key: string, options: DeleteOptions = {}): KubeObject | undefined {
  const h = call(() => wit.delete(res(resource), key, { ...options }));
  return h === undefined ? undefined : obj(h);
}

/** Replace the `status` subresource. */
export function replaceStatus(resource: Resource, body: Body): KubeObject {
  return obj(call(() => wit.replaceStatus(res(resource), text(body))));
}

/** Merge-patch the `status` subresource of the object under `key`. */
export function mergePatchStatus(resource: Resource, key: string, patch: Body): KubeObject {
  return obj(call(() => wit.patchStatus(res(resource), key, { tag: "merge" }, text(patch))));
}
