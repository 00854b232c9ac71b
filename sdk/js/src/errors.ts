/**
 * Errors the host answers with, as exceptions: `CacheError` (queries),
 * `WriteError` and its subclasses (writes and Events: `AlreadyExists`,
 * `Conflict`, `NotFound`, `Invalid`, `Forbidden`, `TooManyRequests`,
 * `Timeout`, `InternalError`, `OtherStatus`, `NotPermitted`,
 * `InvalidArgument`, `Unavailable`), `ReportError` and `QueueError`. Each has `kind`, the
 * WIT case name in UpperCamelCase (`"NotPermitted"`).
 */

import type { ApiStatus, CacheError as WitCacheError, WriteError as WitWriteError } from "wink:plugin/types@0.4.0";

/** Base of every error the host answers with. */
export class WinkError extends Error {
  /** The WIT case name, e.g. `NotPermitted`. */
  readonly kind: string;
  constructor(kind: string, message: string) {
    super(message);
    this.kind = kind;
    this.name = new.target.name;
  }
}

/** A cache query the host refused (`NotPermitted`, `UnknownIndex`, `InvalidArgument`). */
export class CacheError extends WinkError {}

/** Policy results the host refused. */
export class ReportError extends WinkError {}

/** A key the host refused to queue (the plugin registered no queue). */
export class QueueError extends WinkError {}

/** A write or an Event the host refused or the API server failed. */
export class WriteError extends WinkError {
  /** The server's Status, when it answered. */
  readonly status?: ApiStatus;
  constructor(kind: string, message: string, status?: ApiStatus) {
    super(kind, status ? `${status.code} ${status.reason}: ${status.message}` : message);
    this.status = status;
  }
}
/** 409 AlreadyExists. */
export class AlreadyExists extends WriteError {}
/** 409 Conflict: a stale resourceVersion or a failed precondition. */
export class Conflict extends WriteError {}
/** 404 NotFound. */
export class NotFound extends WriteError {}
/** 422 Invalid; `status.causes` says what is wrong. */
export class Invalid extends WriteError {}
/** 403 Forbidden. */
export class Forbidden extends WriteError {}
/** 429 TooManyRequests; `retryAfter` is the server's advice, seconds. */
export class TooManyRequests extends WriteError {
  get retryAfter(): number | undefined {
    return this.status?.retryAfterSeconds;
  }
}
/** 504 or a request timeout. */
export class Timeout extends WriteError {}
/** 500 InternalError. */
export class InternalError extends WriteError {}
/** Any other failure status. */
export class OtherStatus extends WriteError {}
/** Not declared by the plugin, or not granted by the operator. */
export class NotPermitted extends WriteError {}
/** Malformed JSON, an unknown resource, a missing name. */
export class InvalidArgument extends WriteError {}
/** The API server could not be reached or did not answer in time. */
export class Unavailable extends WriteError {}

const WRITE_ERRORS: Record<string, typeof WriteError> = {
  "already-exists": AlreadyExists,
  conflict: Conflict,
  "not-found": NotFound,
  invalid: Invalid,
  forbidden: Forbidden,
  "too-many-requests": TooManyRequests,
  timeout: Timeout,
  "internal-error": InternalError,
  other: OtherStatus,
  "not-permitted": NotPermitted,
  "invalid-argument": InvalidArgument,
  unavailable: Unavailable,
};

/** `not-permitted` -> `NotPermitted`. */
function camel(tag: string): string {
  return tag.replace(/(^|-)([a-z])/g, (_, _d: string, c: string) => c.toUpperCase());
}

/** The value carried by what an import threw (componentize-js wraps it). */
function payload(thrown: unknown): unknown {
  if (thrown !== null && typeof thrown === "object" && "payload" in thrown) {
    return (thrown as { payload: unknown }).payload;
  }
  return thrown;
}

/** The exception for what a `write` or `events` import threw. */
export function writeError(thrown: unknown): Error {
  const e = payload(thrown) as WitWriteError | undefined;
  if (!e || typeof e !== "object" || !("tag" in e)) return thrown as Error;
  const cls = WRITE_ERRORS[e.tag] ?? WriteError;
  return typeof e.val === "string"
    ? new cls(camel(e.tag), e.val)
    : new cls(camel(e.tag), e.val.message, e.val);
}

/** The exception for what a `cache` import threw. */
export function cacheError(thrown: unknown): Error {
  const e = payload(thrown) as WitCacheError | undefined;
  if (!e || typeof e !== "object" || !("tag" in e)) return thrown as Error;
  return new CacheError(camel(e.tag), e.val);
}

/** The exception for what a `report` import threw. */
export function reportError(thrown: unknown): Error {
  const e = payload(thrown);
  return typeof e === "string" ? new ReportError("Refused", e) : (thrown as Error);
}

/** @internal The `QueueError` for what a refused queue import threw. */
export function queueError(thrown: unknown): Error {
  const e = payload(thrown);
  return typeof e === "string" ? new QueueError("Refused", e) : (thrown as Error);
}
