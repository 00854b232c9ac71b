/**
 * Queries against the host's informer cache (never the API server). A plugin
 * may query what it watches or reads; a refusal throws a `CacheError`.
 */

import * as wit from "wink:plugin/cache@0.4.0";
import { cacheError } from "./errors.js";
import { KubeObject } from "./object.js";
import type { Resource } from "./registration.js";

function call<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw cacheError(e);
  }
}

function res(r: Resource) {
  return { apiVersion: r.apiVersion, kind: r.kind };
}

/** The cached object under `key` (`namespace/name` or `name`), or undefined. */
export function get(resource: Resource, key: string): KubeObject | undefined {
  const h = call(() => wit.get(res(resource), key));
  return h === undefined ? undefined : new KubeObject(h, key);
}

/** Every cached object of `resource`, optionally in one namespace and matching a label selector, in key order. */
export function list(resource: Resource, namespace?: string, labelSelector?: string): KubeObject[] {
  return KubeObject.fromAnswer(call(() => wit.list(res(resource), namespace, labelSelector)));
}

/**
 * The first, in key order, of what `list` would answer with the same
 * arguments, or undefined: whether anything matches, and which, without
 * building the list (the host stops at the first match).
 */
export function first(resource: Resource, namespace?: string, labelSelector?: string): KubeObject | undefined {
  const h = call(() => wit.first(res(resource), namespace, labelSelector));
  return h === undefined ? undefined : new KubeObject(h, undefined);
}

/** The objects whose index `index` holds `value`, in key order. */
export function byIndex(resource: Resource, index: string, value: string): KubeObject[] {
  return KubeObject.fromAnswer(call(() => wit.byIndex(res(resource), index, value)));
}

/** The keys whose index `index` holds `value`, sorted. */
export function indexKeys(resource: Resource, index: string, value: string): string[] {
  const keys = call(() => wit.indexKeys(res(resource), index, value)).split("\n");
  keys.pop();
  return keys;
}

/** Every value index `index` holds, sorted. */
export function listIndexValues(resource: Resource, index: string): string[] {
  return call(() => wit.listIndexValues(res(resource), index));
}
