/**
 * What a plugin registers from `Handler.init`: its name, watches, reads,
 * writes, whether deliveries wait for every initial list, admission webhooks
 * and a work queue. Defaults: no `name` (the host names the plugin after its
 * component file's stem), `waitForSync: true` (nothing is delivered until
 * every watch and read has listed, so the initial adds find the whole cache;
 * `false` delivers each watch's initial list as it arrives), every update
 * delivered (`updatesWhen: []`), no admission webhooks, no queue.
 */

import type * as types from "wink:plugin/types@0.4.0";

/** A kind of write. */
export type Verb = types.Verb;
/** What a named index is computed from (see `IndexBy`). */
export type IndexKind = types.IndexBy;
/** A change an update must carry to be delivered (see `Change`). */
export type ChangeKind = types.Change;
/** How a watch's events feed the work queue (see `Enqueue`). */
export type EnqueueKind = types.Enqueue;
export type { FailurePolicy, Hook, MatchPolicy, Operation, Scope } from "wink:plugin/types@0.4.0";

/** A resource type, as in a manifest: `new Resource("apps/v1", "Deployment")`. */
export class Resource implements types.ResourceType {
  constructor(
    readonly apiVersion: string,
    readonly kind: string,
  ) {}
}

/** Constructors of index definitions. */
export const IndexBy = {
  /** The value of one label key (client-go's LabelsIndexFunc). */
  label: (key: string): IndexKind => ({ tag: "label", val: key }),
  /** The value of one annotation key. */
  annotation: (key: string): IndexKind => ({ tag: "annotation", val: key }),
  /** Every `metadata.ownerReferences[].uid`. */
  ownerUid: (): IndexKind => ({ tag: "owner-uid" }),
  /** Every owner reference as `Kind/name`. */
  ownerKindName: (): IndexKind => ({ tag: "owner-kind-name" }),
  /**
   * A field path, e.g. `spec.nodeName`: dot-separated field names, each
   * optionally followed by `[*]` (every element of a list) or `[N]` (the
   * element at N, from 0). A list is read through every element without
   * brackets too, so `spec.rules.host` and `spec.rules[*].host` index one
   * value per rule; lists nest (`spec.rules[*].http.paths[*].backend.service.name`).
   * A path that cannot index (an empty segment, `a[0`, `a[]`) is refused
   * at registration.
   */
  field: (path: string): IndexKind => ({ tag: "field", val: path }),
};

/**
 * Changes an update must carry to be delivered (controller-runtime's
 * predicates, checked on the host before any call into the plugin):
 * `updatesWhen: [Change.generation(), Change.label("team")]`.
 */
export const Change = {
  /** `metadata.generation` (spec changes, for resources that count them). */
  generation: (): ChangeKind => ({ tag: "generation" }),
  /** Any label. */
  labels: (): ChangeKind => ({ tag: "labels" }),
  /** Any annotation. */
  annotations: (): ChangeKind => ({ tag: "annotations" }),
  /** The value of one label key. */
  label: (key: string): ChangeKind => ({ tag: "label", val: key }),
  /** The value of one annotation key. */
  annotation: (key: string): ChangeKind => ({ tag: "annotation", val: key }),
  /** The JSON value at a field path, e.g. `spec` or `metadata.ownerReferences`. */
  field: (path: string): ChangeKind => ({ tag: "field", val: path }),
};

/** How a watch's events feed the plugin's work queue (`Handler.reconcile`); the default is `none`. */
export const Enqueue = {
  /** They do not: the events go to the handler only. */
  none: (): EnqueueKind => ({ tag: "none" }),
  /** The object's own key. */
  ownKey: (): EnqueueKind => ({ tag: "own-key" }),
  /** The key of the object's controller (kube-runtime's `owns`). */
  controllerOwner: (): EnqueueKind => ({ tag: "controller-owner" }),
  /** The keys of the queue resource's objects whose index `name` holds the object's key. */
  byIndex: (name: string): EnqueueKind => ({ tag: "by-index", val: name }),
  /** The keys `Handler.mapToKeys` answers for the object. */
  mapped: (): EnqueueKind => ({ tag: "mapped" }),
};

/**
 * One watch (or read): a resource, optionally narrowed. A handler call's
 * `obj.watch` is the index of its watch in `Registration.watches`. As a
 * read, only the resource, namespace, selectors and indexes count.
 */
export interface Watch {
  apiVersion: string;
  kind: string;
  /** Only this namespace. */
  namespace?: string;
  /** A Kubernetes label selector, e.g. `app=web`. */
  labelSelector?: string;
  /** A Kubernetes field selector, e.g. `spec.nodeName=node-1`. */
  fieldSelector?: string;
  /** Re-deliver every cached object as an update this often (seconds). */
  resyncSeconds?: number;
  /** Index name -> what it indexes, e.g. `{app: IndexBy.label("app")}`. */
  indexes?: Record<string, IndexKind>;
  /** Deliver an update only when it changes one of these (empty: every update; adds, deletes and resyncs always come). */
  updatesWhen?: ChangeKind[];
  /** How this watch's events feed the work queue (default `Enqueue.none()`). */
  enqueue?: EnqueueKind;
}

/** Writes a plugin declares to one resource (the operator grants them). */
export interface Writes {
  resource: Resource;
  verbs: Verb[];
}

/** One rule of a webhook, as in a webhook configuration's `rules[]`. */
export interface AdmissionRule {
  operations: types.Operation[];
  /** `""` for core, `*` for all. */
  apiGroups: string[];
  apiVersions: string[];
  /** Plural, lowercase: `pods`, `pods/status`, `*`. */
  resources: string[];
  /** Default `any`. */
  scope?: types.Scope;
}

/** A webhook the plugin serves (at most one per hook), answered by `Handler.validate` or `Handler.mutate`. */
export interface Webhook {
  hook: types.Hook;
  rules: AdmissionRule[];
  namespaceSelector?: string;
  objectSelector?: string;
  /** Default `fail`: deny when the plugin cannot answer. */
  failurePolicy?: types.FailurePolicy;
  /** The API server's timeout, 1 to 30 seconds (default 10). */
  timeoutSeconds?: number;
  /** Default `equivalent`. */
  matchPolicy?: types.MatchPolicy;
}

/** The plugin's work queue of keys of `resource`, reconciled by `Handler.reconcile` (defaults: client-go's). */
export interface Queue {
  resource: Resource;
  /** Per-key backoff: the first delay (default 5 ms) ... */
  baseDelayMs?: number;
  /** ... doubling up to this (default 1,000 s). */
  maxDelayMs?: number;
  /** Overall retries a second (default 10) ... */
  qps?: number;
  /** ... and burst (default 100). */
  burst?: number;
}

/** Everything a plugin registers. */
export interface Registration {
  /** The plugin's name (lowercase letters, digits, `-`); none: the component file's stem. */
  name?: string;
  watches?: Watch[];
  /** Resources only queried through `cache`, without events. */
  reads?: Watch[];
  writes?: Writes[];
  recordsEvents?: boolean;
  /** Deliver nothing until every watch and read has listed (default true). */
  waitForSync?: boolean;
  /** Admission webhooks served by `validate` / `mutate` (default none). */
  admission?: Webhook[];
  /** The work queue `reconcile` is fed from (default none). */
  queue?: Queue;
}

function indexes(w: Watch): types.Index[] {
  return Object.entries(w.indexes ?? {}).map(([name, by]) => ({ name, by }));
}

/** @internal The WIT record of a registration. */
export function toWit(r: Registration): types.Registration {
  return {
    name: r.name,
    watches: (r.watches ?? []).map((w) => ({
      resource: { apiVersion: w.apiVersion, kind: w.kind },
      namespace: w.namespace,
      labelSelector: w.labelSelector,
      fieldSelector: w.fieldSelector,
      resyncSeconds: Math.min(Math.ceil(w.resyncSeconds ?? 0), 2 ** 32 - 1),
      indexes: indexes(w),
      updatesWhen: [...(w.updatesWhen ?? [])],
      enqueue: w.enqueue ?? { tag: "none" },
    })),
    reads: (r.reads ?? []).map((w) => ({
      resource: { apiVersion: w.apiVersion, kind: w.kind },
      namespace: w.namespace,
      labelSelector: w.labelSelector,
      fieldSelector: w.fieldSelector,
      indexes: indexes(w),
    })),
    writes: (r.writes ?? []).map((w) => ({
      resource: { apiVersion: w.resource.apiVersion, kind: w.resource.kind },
      verbs: [...w.verbs],
    })),
    recordsEvents: r.recordsEvents ?? false,
    waitForSync: r.waitForSync ?? true,
    admission: (r.admission ?? []).map((h) => ({
      hook: h.hook,
      rules: h.rules.map((rule) => ({
        operations: [...rule.operations],
        apiGroups: [...rule.apiGroups],
        apiVersions: [...rule.apiVersions],
        resources: [...rule.resources],
        scope: rule.scope ?? "any",
      })),
      namespaceSelector: h.namespaceSelector,
      objectSelector: h.objectSelector,
      failurePolicy: h.failurePolicy ?? "fail",
      timeoutSeconds: h.timeoutSeconds ?? 10,
      matchPolicy: h.matchPolicy ?? "equivalent",
    })),
    queue: r.queue && {
      resource: { apiVersion: r.queue.resource.apiVersion, kind: r.queue.resource.kind },
      baseDelayMs: r.queue.baseDelayMs ?? 5,
      maxDelayMs: r.queue.maxDelayMs ?? 1_000_000,
      qps: r.queue.qps ?? 10,
      burst: r.queue.burst ?? 100,
    },
  };
}
