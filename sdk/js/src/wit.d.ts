/**
 * Declarations of the host's interfaces (`wink:plugin@0.4.0`, see
 * `wit/plugin.wit`) as componentize-js binds them: records are objects with
 * camelCase fields, `option<T>` is `T | undefined`, enums are their kebab-case
 * names, variants are `{tag, val}`, and an import whose `result` is an error
 * throws (the error value in the thrown object's `payload`), `u64` is a
 * `bigint`. The world's exports (`handler`, `admission`, `reconciler`) are
 * declared in `index.ts` (`HandlerExport`, ...), with their types here.
 */

declare module "wink:plugin/types@0.4.0" {
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
  export type Change =
    | { tag: "generation" }
    | { tag: "labels" }
    | { tag: "annotations" }
    | { tag: "label"; val: string }
    | { tag: "annotation"; val: string }
    | { tag: "field"; val: string };
  export type Enqueue =
    | { tag: "none" }
    | { tag: "own-key" }
    | { tag: "controller-owner" }
    | { tag: "by-index"; val: string }
    | { tag: "mapped" };
  export interface Watch {
    resource: ResourceType;
    namespace?: string;
    labelSelector?: string;
    fieldSelector?: string;
    resyncSeconds: number;
    indexes: Index[];
    updatesWhen: Change[];
    enqueue: Enqueue;
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
  export type Operation = "create" | "update" | "delete" | "connect";
  export type Scope = "cluster" | "namespaced" | "any";
  export interface AdmissionRule {
    operations: Operation[];
    apiGroups: string[];
    apiVersions: string[];
    resources: string[];
    scope: Scope;
  }
  export type Hook = "validate" | "mutate";
  export type FailurePolicy = "fail" | "ignore";
  export type MatchPolicy = "exact" | "equivalent";
  export interface Webhook {
    hook: Hook;
    rules: AdmissionRule[];
    namespaceSelector?: string;
    objectSelector?: string;
    failurePolicy: FailurePolicy;
    timeoutSeconds: number;
    matchPolicy: MatchPolicy;
  }
  export interface Queue {
    resource: ResourceType;
    baseDelayMs: number;
    maxDelayMs: number;
    qps: number;
    burst: number;
  }
  export interface Registration {
    name?: string;
    watches: Watch[];
    reads: Read[];
    writes: WriteDecl[];
    recordsEvents: boolean;
    waitForSync: boolean;
    admission: Webhook[];
    queue?: Queue;
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

declare module "wink:plugin/log@0.4.0" {
  import type { Level } from "wink:plugin/types@0.4.0";
  export function log(level: Level, message: string): void;
}

declare module "wink:plugin/cache@0.4.0" {
  import type { Answer, Object, ResourceType } from "wink:plugin/types@0.4.0";
  export function get(resource: ResourceType, key: string): Object | undefined;
  export function list(resource: ResourceType, namespace: string | undefined, labelSelector: string | undefined): Answer;
  export function first(resource: ResourceType, namespace: string | undefined, labelSelector: string | undefined): Object | undefined;
  export function byIndex(resource: ResourceType, index: string, value: string): Answer;
  export function indexKeys(resource: ResourceType, index: string, value: string): string;
  export function listIndexValues(resource: ResourceType, index: string): string[];
}

declare module "wink:plugin/write@0.4.0" {
  import type { Object, ResourceType } from "wink:plugin/types@0.4.0";
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
  export interface Written {
    object: Object;
    dryRun: boolean;
  }
  export interface Deleted {
    object?: Object;
    dryRun: boolean;
  }
  export function create(resource: ResourceType, body: string): Written;
  export function replace(resource: ResourceType, body: string): Written;
  export function patch(resource: ResourceType, key: string, patchType: PatchType, body: string): Written;
  export function delete_(resource: ResourceType, key: string, options: DeleteOptions): Deleted;
  export { delete_ as delete };
  export function replaceStatus(resource: ResourceType, body: string): Written;
  export function patchStatus(resource: ResourceType, key: string, patchType: PatchType, body: string): Written;
}

declare module "wink:plugin/events@0.4.0" {
  import type { Object } from "wink:plugin/types@0.4.0";
  export type EventType = "normal" | "warning";
  export type Recorded = "sent" | "audit" | "dropped";
  export function recordEvent(regarding: Object, type: EventType, reason: string, action: string, note: string): Recorded;
}

declare module "wink:plugin/report@0.4.0" {
  import type { Object } from "wink:plugin/types@0.4.0";
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

declare module "wink:plugin/delivery@0.4.0" {
  export function begin(index: number): void;
}

declare module "wink:plugin/queue@0.4.0" {
  export function add(key: string): void;
  export function addAfter(key: string, delayMs: bigint): void;
}

declare module "wink:plugin/handler@0.4.0" {
  export interface Added {
    watch: number;
    key: string;
    inInitialList: boolean;
  }
  export interface Updated {
    watch: number;
    key: string;
  }
  export interface Deleted {
    watch: number;
    key: string;
    finalStateUnknown: boolean;
  }
  export type Event = { tag: "add"; val: Added } | { tag: "update"; val: Updated } | { tag: "delete"; val: Deleted };
}

declare module "wink:plugin/admission@0.4.0" {
  import type { Object, Operation } from "wink:plugin/types@0.4.0";
  export interface GroupVersionKind {
    group: string;
    version: string;
    kind: string;
  }
  export interface GroupVersionResource {
    group: string;
    version: string;
    resource: string;
  }
  export interface UserInfo {
    username: string;
    uid: string;
    groups: string[];
    extra: Array<[string, string[]]>;
  }
  export interface Request {
    uid: string;
    kind: GroupVersionKind;
    resource: GroupVersionResource;
    subResource?: string;
    requestKind?: GroupVersionKind;
    requestResource?: GroupVersionResource;
    name?: string;
    namespace?: string;
    operation: Operation;
    userInfo: UserInfo;
    object?: Object;
    oldObject?: Object;
    dryRun: boolean;
    options: string;
  }
  export interface Verdict {
    allowed: boolean;
    code?: number;
    reason?: string;
    message: string;
    warnings: string[];
    auditAnnotations: Array<[string, string]>;
  }
  export interface Mutation {
    verdict: Verdict;
    object?: string;
  }
}

declare module "wink:plugin/reconciler@0.4.0" {
  export type Action = { tag: "done" } | { tag: "requeue-after"; val: bigint } | { tag: "requeue" };
}
