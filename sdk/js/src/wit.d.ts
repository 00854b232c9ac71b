/**
 * Declarations of the host's interfaces (`wink:plugin@0.3.0`, see
 * `wit/plugin.wit`) as componentize-js binds them: records are objects with
 * camelCase fields, `option<T>` is `T | undefined`, enums are their kebab-case
 * names, variants are `{tag, val}`, and an import whose `result` is an error
 * throws (the error value in the thrown object's `payload`).
 */

declare module "wink:plugin/types@0.3.0" {
  export interface ResourceType {
    apiVersion: string;
    kind: string;
  }
  export interface ObjectMeta {
    apiVersion: string;
    kind: string;
    namespace?: string;
    name: string;
    uid: string;
    resourceVersion: string;
    labels: Array<[string, string]>;
  }
  /** One immutable version of a Kubernetes object, held by the host's cache. */
  export class Object {
    private constructor();
    name(): string;
    namespace(): string | undefined;
    key(): string;
    uid(): string;
    resourceVersion(): string;
    label(key: string): string | undefined;
    meta(): ObjectMeta;
    json(): string;
    duplicate(): Object;
  }
  export class ObjectList {
    private constructor();
    len(): number;
    get(index: number): Object | undefined;
  }
  export interface Answer {
    keys: string;
    objects: ObjectList;
  }
  export type IndexBy =
    | { tag: "label"; val: string }
    | { tag: "annotation"; val: string }
    | { tag: "owner-uid" }
    | { tag: "owner-kind-name" }
    | { tag: "field"; val: string };
  export interface Index {
    name: string;
    by: IndexBy;
  }
  export interface Watch {
    resource: ResourceType;
    namespace?: string;
    labelSelector?: string;
    fieldSelector?: string;
    resyncSeconds: number;
    indexes: Index[];
  }
  export interface Read {
    resource: ResourceType;
    namespace?: string;
    labelSelector?: string;
    fieldSelector?: string;
    indexes: Index[];
  }
  export type Verb = "create" | "update" | "patch" | "delete";
  export interface WriteDecl {
    resource: ResourceType;
    verbs: Verb[];
  }
  export interface Registration {
    watches: Watch[];
    reads: Read[];
    writes: WriteDecl[];
    recordsEvents: boolean;
  }
  export type Level = "trace" | "debug" | "info" | "warn" | "error";
  export type CacheError =
    | { tag: "not-permitted"; val: string }
    | { tag: "unknown-index"; val: string }
    | { tag: "invalid-argument"; val: string };
  export interface StatusCause {
    reason: string;
    message: string;
    field: string;
  }
  export interface ApiStatus {
    code: number;
    reason: string;
    message: string;
    causes: StatusCause[];
    retryAfterSeconds?: number;
  }
  export type WriteError =
    | {
        tag:
          | "already-exists"
          | "conflict"
          | "not-found"
          | "invalid"
          | "forbidden"
          | "too-many-requests"
          | "timeout"
          | "internal-error"
          | "other";
        val: ApiStatus;
      }
    | { tag: "not-permitted" | "invalid-argument" | "unavailable"; val: string };
}

declare module "wink:plugin/log@0.3.0" {
  import type { Level } from "wink:plugin/types@0.3.0";
  export function log(level: Level, message: string): void;
}

declare module "wink:plugin/cache@0.3.0" {
  import type { Answer, Object, ResourceType } from "wink:plugin/types@0.3.0";
  export function get(resource: ResourceType, key: string): Object | undefined;
  export function list(resource: ResourceType, namespace: string | undefined, labelSelector: string | undefined): Answer;
  export function byIndex(resource: ResourceType, index: string, value: string): Answer;
  export function indexKeys(resource: ResourceType, index: string, value: string): string;
  export function listIndexValues(resource: ResourceType, index: string): string[];
}

declare module "wink:plugin/write@0.3.0" {
  import type { Object, ResourceType } from "wink:plugin/types@0.3.0";
  export type PatchType =
    | { tag: "merge" }
    | { tag: "json" }
    | { tag: "strategic-merge" }
    | { tag: "apply"; val: boolean };
  export type Propagation = "orphan" | "background" | "foreground";
  export interface DeleteOptions {
    uid?: string;
    resourceVersion?: string;
    propagation?: Propagation;
  }
  export function create(resource: ResourceType, body: string): Object;
  export function replace(resource: ResourceType, body: string): Object;
  export function patch(resource: ResourceType, key: string, patchType: PatchType, body: string): Object;
  export function delete_(resource: ResourceType, key: string, options: DeleteOptions): Object | undefined;
  export { delete_ as delete };
  export function replaceStatus(resource: ResourceType, body: string): Object;
  export function patchStatus(resource: ResourceType, key: string, patchType: PatchType, body: string): Object;
}

declare module "wink:plugin/events@0.3.0" {
  import type { Object } from "wink:plugin/types@0.3.0";
  export type EventType = "normal" | "warning";
  export function recordEvent(regarding: Object, type: EventType, reason: string, action: string, note: string): void;
}

declare module "wink:plugin/report@0.3.0" {
  import type { Object } from "wink:plugin/types@0.3.0";
  export type Outcome = "pass" | "fail" | "warn" | "error" | "skip";
  export type Severity = "info" | "low" | "medium" | "high" | "critical";
  export interface PolicyResult {
    policy?: string;
    rule: string;
    outcome: Outcome;
    severity?: Severity;
    category?: string;
    message: string;
    properties: Array<[string, string]>;
  }
  export function setResults(subject: Object, results: PolicyResult[]): void;
}
