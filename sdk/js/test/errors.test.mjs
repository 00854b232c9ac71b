/**
 * The host's typed errors (WIT variants, thrown by the bindings with the
 * value in `payload`) as the SDK's error classes.
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  AlreadyExists,
  CacheError,
  Conflict,
  Forbidden,
  InternalError,
  Invalid,
  InvalidArgument,
  NotFound,
  NotPermitted,
  OtherStatus,
  ReportError,
  Timeout,
  TooManyRequests,
  Unavailable,
  WinkError,
  WriteError,
  cacheError,
  reportError,
  writeError,
} from "wink-sdk";
import { ComponentError } from "./stubs/host.mjs";

const status = (code, reason, extra = {}) => ({ code, reason, message: `${reason} says the server`, causes: [], ...extra });

test("each API status case is its own WriteError class, with the status and its kind", () => {
  const cases = [
    ["already-exists", 409, AlreadyExists, "AlreadyExists"],
    ["conflict", 409, Conflict, "Conflict"],
    ["not-found", 404, NotFound, "NotFound"],
    ["invalid", 422, Invalid, "Invalid"],
    ["forbidden", 403, Forbidden, "Forbidden"],
    ["too-many-requests", 429, TooManyRequests, "TooManyRequests"],
    ["timeout", 504, Timeout, "Timeout"],
    ["internal-error", 500, InternalError, "InternalError"],
    ["other", 418, OtherStatus, "Other"],
  ];
  for (const [tag, code, cls, kind] of cases) {
    const s = status(code, kind);
    const e = writeError(new ComponentError({ tag, val: s }));
    assert.ok(e instanceof cls, tag);
    assert.ok(e instanceof WriteError && e instanceof WinkError && e instanceof Error, tag);
    assert.equal(e.kind, kind, tag);
    assert.equal(e.name, cls.name, tag);
    assert.equal(e.status, s, tag);
    assert.equal(e.message, `${code} ${kind}: ${kind} says the server`, tag);
  }
});

test("the host's own refusals carry their message and no status", () => {
  for (const [tag, cls, kind] of [
    ["not-permitted", NotPermitted, "NotPermitted"],
    ["invalid-argument", InvalidArgument, "InvalidArgument"],
    ["unavailable", Unavailable, "Unavailable"],
  ]) {
    const e = writeError(new ComponentError({ tag, val: `${tag}: because` }));
    assert.ok(e instanceof cls && e instanceof WriteError, tag);
    assert.deepEqual([e.kind, e.message, e.status], [kind, `${tag}: because`, undefined], tag);
  }
});

test("429's retryAfter is the server's advice, when given", () => {
  const advised = writeError(new ComponentError({ tag: "too-many-requests", val: status(429, "TooManyRequests", { retryAfterSeconds: 3 }) }));
  assert.equal(advised.retryAfter, 3);
  const silent = writeError(new ComponentError({ tag: "too-many-requests", val: status(429, "TooManyRequests") }));
  assert.equal(silent.retryAfter, undefined);
});

test("a case the SDK does not know is a plain WriteError with its kind", () => {
  const e = writeError(new ComponentError({ tag: "gone-fishing", val: "later" }));
  assert.equal(e.constructor, WriteError);
  assert.deepEqual([e.kind, e.message], ["GoneFishing", "later"]);
});

test("a bare variant (no payload wrapper) is mapped too", () => {
  const e = writeError({ tag: "not-found", val: status(404, "NotFound") });
  assert.ok(e instanceof NotFound);
});

test("what is not a WIT error passes through unchanged", () => {
  const bug = new TypeError("x is not a function");
  assert.equal(writeError(bug), bug);
  assert.equal(cacheError(bug), bug);
  assert.equal(reportError(bug), bug);
});

test("cache refusals are CacheErrors with their kind", () => {
  for (const [tag, kind] of [
    ["not-permitted", "NotPermitted"],
    ["unknown-index", "UnknownIndex"],
    ["invalid-argument", "InvalidArgument"],
  ]) {
    const e = cacheError(new ComponentError({ tag, val: `${tag} here` }));
    assert.ok(e instanceof CacheError && e instanceof WinkError, tag);
    assert.ok(!(e instanceof WriteError), tag);
    assert.deepEqual([e.kind, e.message, e.name], [kind, `${tag} here`, "CacheError"], tag);
  }
});

test("a refused report is a ReportError", () => {
  const e = reportError(new ComponentError("too many results"));
  assert.ok(e instanceof ReportError && e instanceof WinkError);
  assert.deepEqual([e.kind, e.message], ["Refused", "too many results"]);
});
