/** What a plugin registers from `Handler.init`: watches, reads, writes. */

import type * as types from "wink:plugin/types@0.3.0";

/** A kind of write. */
export type Verb = types.Verb;
/** What a named index is computed from (see `IndexBy`). */
export type IndexKind = types.IndexBy;

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
  /** A field path, e.g. `spec.nodeName`. */
  field: (path: string): IndexKind => ({ tag: "field", val: path }),
};

/** One watch (or read): a resource, optionally narrowed. */
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
}

/** Writes a plugin declares to one resource (the operator grants them). */
export interface Writes {
  resource: Resource;
  verbs: Verb[];
}

/** Everything a plugin registers. */
export interface Registration {
  watches?: Watch[];
  /** Resources only queried through `cache`, without events. */
  reads?: Watch[];
  writes?: Writes[];
  recordsEvents?: boolean;
}

function indexes(w: Watch): types.Index[] {
  return Object.entries(w.indexes ?? {}).map(([name, by]) => ({ name, by }));
}

/** @internal The WIT record of a registration. */
export function toWit(r: Registration): types.Registration {
  return {
    watches: (r.watches ?? []).map((w) => ({
      resource: { apiVersion: w.apiVersion, kind: w.kind },
      namespace: w.namespace,
      labelSelector: w.labelSelector,
      fieldSelector: w.fieldSelector,
      resyncSeconds: Math.min(Math.ceil(w.resyncSeconds ?? 0), 2 ** 32 - 1),
      indexes: indexes(w),
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
  };
}
