/**
 * Admission: what `Handler.validate` and `Handler.mutate` receive (`Request`)
 * and answer (`Verdict`, `Mutation`), for the webhooks declared in
 * `Registration.admission`. A plugin that declares none writes nothing for
 * them: the SDK allows, and changes nothing. Admission calls run on
 * instances of their own: state kept by the event handler's instance is not
 * seen there, and writes, Events and reports are refused.
 *
 * ```ts
 * validate(req: admission.Request): admission.Verdict {
 *   if (req.object && req.object.label("team") === undefined) return admission.deny("a team label is required");
 *   return admission.allow();
 * }
 * ```
 */

import type * as wit from "wink:plugin/admission@0.4.0";
import { KubeObject } from "./object.js";

export type { GroupVersionKind, GroupVersionResource, UserInfo } from "wink:plugin/admission@0.4.0";

/** An `admission.k8s.io/v1` AdmissionRequest, its objects as `KubeObject`s (lent for the call). */
export interface Request extends Omit<wit.Request, "object" | "oldObject"> {
  /** The new object (create, update); undefined on delete. */
  object?: KubeObject;
  /** The stored object (update, delete). */
  oldObject?: KubeObject;
}

/** Allowed or denied; `warnings` are shown to the client either way (every field optional: `{}` allows). */
export interface Verdict {
  /** Default true. */
  allowed?: boolean;
  /** A denial's message, shown to the client. */
  message?: string;
  /** A denial's HTTP code (403 when none). */
  code?: number;
  /** A denial's reason, e.g. `Forbidden`. */
  reason?: string;
  warnings?: string[];
  auditAnnotations?: Record<string, string>;
}

/** A mutating answer: the verdict and, when it changes the object, the whole changed object (a value or JSON text). */
export interface Mutation {
  verdict?: Verdict;
  object?: object | string;
}

/** Allowed, with these warnings. */
export function allow(...warnings: string[]): Verdict {
  return { allowed: true, warnings };
}

/** Denied, `message` shown to the client. */
export function deny(message: string, options: { code?: number; reason?: string } = {}): Verdict {
  return { allowed: false, message, ...options };
}

/** @internal The request a hook receives. */
export function request(r: wit.Request): Request {
  const key = r.namespace === undefined || r.name === undefined ? r.name : `${r.namespace}/${r.name}`;
  return {
    ...r,
    object: r.object === undefined ? undefined : new KubeObject(r.object, key),
    oldObject: r.oldObject === undefined ? undefined : new KubeObject(r.oldObject, key),
  };
}

/** @internal A hook's verdict as the WIT record (undefined: allowed). */
export function verdict(v: Verdict | undefined): wit.Verdict {
  return {
    allowed: v?.allowed ?? true,
    code: v?.code,
    reason: v?.reason,
    message: v?.message ?? "",
    warnings: [...(v?.warnings ?? [])],
    auditAnnotations: Object.entries(v?.auditAnnotations ?? {}),
  };
}

/** @internal A mutate hook's answer as the WIT record (undefined: allowed, unchanged). */
export function mutation(m: Mutation | undefined): wit.Mutation {
  const o = m?.object;
  return { verdict: verdict(m?.verdict), object: o === undefined || typeof o === "string" ? o : JSON.stringify(o) };
}
