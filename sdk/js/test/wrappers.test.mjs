/**
 * The wrappers over the host's imports: `cache`, `write`, `events`,
 * `report` and `log` pass what they are given as the WIT expects it, turn
 * the answers into `KubeObject`s and strings, and refusals into the SDK's
 * error classes.
 */

import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import {
  CacheError,
  Conflict,
  KubeObject,
  NotFound,
  NotPermitted,
  ReportError,
  Resource,
  cache,
  events,
  log,
  report,
  write,
} from "wink-sdk";
import * as host from "./stubs/host.mjs";

beforeEach(host.reset);

const pods = new Resource("v1", "Pod");
const POD = { apiVersion: "v1", kind: "Pod" };
const refused = (tag, val) => () => host.refuse({ tag, val });

test("cache.get: the object under the key, keyed without a call; undefined when absent", () => {
  host.answer("cache.get", (_r, key) => (key === "default/web" ? host.handle(key) : undefined));
  const web = cache.get(pods, "default/web");
  assert.ok(web instanceof KubeObject);
  assert.equal(web.name, "web");
  assert.equal(cache.get(pods, "default/none"), undefined);
  assert.deepEqual(host.calls, [
    ["cache.get", [POD, "default/web"]],
    ["cache.get", [POD, "default/none"]],
  ]);
  assert.ok(!(host.calls[0][1][0] instanceof Resource), "the resource as a plain record");
});

test("cache.list and cache.byIndex: the answer's objects in order, handles made on use", () => {
  host.answer("cache.list", () => host.answerOf(["default/a", "default/b"]));
  host.answer("cache.byIndex", () => host.answerOf(["default/b"]));
  assert.deepEqual(
    cache.list(pods).map((o) => o.key),
    ["default/a", "default/b"],
  );
  assert.deepEqual(
    cache.list(pods, "default", "app=web").map((o) => o.name),
    ["a", "b"],
  );
  const [b] = cache.byIndex(pods, "app", "web");
  assert.equal(b.key, "default/b");
  assert.deepEqual(host.calls, [
    ["cache.list", [POD, undefined, undefined]],
    ["cache.list", [POD, "default", "app=web"]],
    ["cache.byIndex", [POD, "app", "web"]],
  ]);
  void b.json();
  assert.deepEqual(host.called().slice(3), ["list.get", "object.json"]);
});

test("cache.first: the first match as a KubeObject with its key from the object; undefined when none", () => {
  host.answer("cache.first", (_r, ns) => (ns === "default" ? host.handle("default/a") : undefined));
  const a = cache.first(pods, "default", "app=web");
  assert.ok(a instanceof KubeObject);
  assert.equal(a.name, "a");
  assert.equal(cache.first(pods, "other", "app=web"), undefined);
  assert.deepEqual(
    host.calls.filter(([name]) => name === "cache.first"),
    [
    ["cache.first", [POD, "default", "app=web"]],
    ["cache.first", [POD, "other", "app=web"]],
    ],
  );
});

test("cache.indexKeys splits the host's lines; listIndexValues passes the values through", () => {
  host.answer("cache.indexKeys", () => "default/a\ndefault/b\n");
  host.answer("cache.listIndexValues", () => ["db", "web"]);
  assert.deepEqual(cache.indexKeys(pods, "app", "web"), ["default/a", "default/b"]);
  host.answer("cache.indexKeys", () => "");
  assert.deepEqual(cache.indexKeys(pods, "app", "none"), []);
  assert.deepEqual(cache.listIndexValues(pods, "app"), ["db", "web"]);
  assert.deepEqual(host.calls[2], ["cache.listIndexValues", [POD, "app"]]);
});

test("a refused query throws a CacheError", () => {
  host.answer("cache.get", refused("not-permitted", "v1/Secret is neither watched nor read"));
  host.answer("cache.byIndex", refused("unknown-index", "no index nope"));
  assert.throws(() => cache.get(new Resource("v1", "Secret"), "default/s"), (e) => e instanceof CacheError && e.kind === "NotPermitted");
  assert.throws(() => cache.byIndex(pods, "nope", "x"), (e) => e instanceof CacheError && e.message === "no index nope");
});

const written = (key, dryRun = false) => () => ({ object: host.handle(key), dryRun });

test("write: bodies are serialized (text passes as is), answers are objects keyed on demand", () => {
  host.answer("write.create", written("default/made"));
  host.answer("write.replace", written("default/made"));
  const made = write.create(pods, { metadata: { name: "made", namespace: "default" } });
  write.replace(pods, '{"metadata":{"name":"made"}}');
  assert.deepEqual(host.calls.slice(0, 2), [
    ["write.create", [POD, '{"metadata":{"name":"made","namespace":"default"}}']],
    ["write.replace", [POD, '{"metadata":{"name":"made"}}']],
  ]);
  assert.ok(made instanceof KubeObject);
  assert.equal(made.key, "default/made");
  assert.equal(host.called()[2], "object.key");
});

test("write: each patch kind is its WIT patch type", () => {
  host.answer("write.patch", written("default/web"));
  host.answer("write.patchStatus", written("default/web"));
  const deployments = new Resource("apps/v1", "Deployment");
  const D = { apiVersion: "apps/v1", kind: "Deployment" };
  write.mergePatch(deployments, "default/web", { metadata: { labels: { team: "a" } } });
  write.jsonPatch(deployments, "default/web", [{ op: "remove", path: "/x" }]);
  write.strategicMergePatch(deployments, "default/web", "{}");
  write.apply(deployments, "default/web", "{}");
  write.apply(deployments, "default/web", "{}", true);
  write.mergePatchStatus(deployments, "default/web", { status: {} });
  assert.deepEqual(host.calls, [
    ["write.patch", [D, "default/web", { tag: "merge" }, '{"metadata":{"labels":{"team":"a"}}}']],
    ["write.patch", [D, "default/web", { tag: "json" }, '[{"op":"remove","path":"/x"}]']],
    ["write.patch", [D, "default/web", { tag: "strategic-merge" }, "{}"]],
    ["write.patch", [D, "default/web", { tag: "apply", val: false }, "{}"]],
    ["write.patch", [D, "default/web", { tag: "apply", val: true }, "{}"]],
    ["write.patchStatus", [D, "default/web", { tag: "merge" }, '{"status":{}}']],
  ]);
});

test("write.replaceStatus and write.remove (options passed, gone is undefined)", () => {
  host.answer("write.replaceStatus", written("default/web"));
  assert.ok(write.replaceStatus(pods, { status: { phase: "Running" } }) instanceof KubeObject);
  host.answer("write.delete", (_r, key) => ({
    object: key === "default/finalizing" ? host.handle(key) : undefined,
    dryRun: false,
  }));
  assert.deepEqual(write.remove(pods, "default/gone"), { object: undefined, dryRun: false });
  const finalizing = write.remove(pods, "default/finalizing", { uid: "u-9", propagation: "foreground" });
  assert.ok(finalizing.object instanceof KubeObject);
  assert.deepEqual(host.calls, [
    ["write.replaceStatus", [POD, '{"status":{"phase":"Running"}}']],
    ["write.delete", [POD, "default/gone", {}]],
    ["write.delete", [POD, "default/finalizing", { uid: "u-9", propagation: "foreground" }]],
  ]);
});

test("every write wrapper turns a refusal into its WriteError class", () => {
  for (const name of ["create", "replace", "patch", "delete", "replaceStatus", "patchStatus"]) {
    host.answer(`write.${name}`, refused("not-found", { code: 404, reason: "NotFound", message: name, causes: [] }));
  }
  const attempts = [
    () => write.create(pods, {}),
    () => write.replace(pods, {}),
    () => write.mergePatch(pods, "default/x", {}),
    () => write.jsonPatch(pods, "default/x", []),
    () => write.strategicMergePatch(pods, "default/x", {}),
    () => write.apply(pods, "default/x", {}),
    () => write.remove(pods, "default/x"),
    () => write.replaceStatus(pods, {}),
    () => write.mergePatchStatus(pods, "default/x", {}),
  ];
  for (const attempt of attempts) {
    assert.throws(attempt, (e) => e instanceof NotFound && e.status.code === 404, String(attempt));
  }
});

test("a refused write throws its WriteError class", () => {
  host.answer("write.create", refused("not-permitted", "create v1/Pod is not granted"));
  host.answer("write.replace", refused("conflict", { code: 409, reason: "Conflict", message: "stale", causes: [] }));
  assert.throws(() => write.create(pods, {}), (e) => e instanceof NotPermitted && e.message === "create v1/Pod is not granted");
  assert.throws(() => write.replace(pods, {}), (e) => e instanceof Conflict && e.status.code === 409);
});

test("events: record, normal and warning pass the object's handle", () => {
  const obj = new KubeObject(host.handle("default/web"), "default/web");
  events.record(obj, "normal", "Scaled", "Scale", "to 3");
  events.normal(obj, "Ok", "Check", "fine");
  events.warning(obj, "MissingLabel", "Label", "no team");
  assert.deepEqual(
    host.calls.map(([n, [h, ...rest]]) => [n, h === obj.handle, ...rest]),
    [
      ["events.recordEvent", true, "normal", "Scaled", "Scale", "to 3"],
      ["events.recordEvent", true, "normal", "Ok", "Check", "fine"],
      ["events.recordEvent", true, "warning", "MissingLabel", "Label", "no team"],
    ],
  );
  host.answer("events.recordEvent", refused("not-permitted", "Events are not granted"));
  assert.throws(() => events.warning(obj, "R", "A", "n"), (e) => e instanceof NotPermitted);
});

test("report.set: findings as WIT policy results (message defaults to empty, properties as pairs)", () => {
  const obj = new KubeObject(host.handle("default/web"), "default/web");
  report.set(obj, [
    { rule: "has-team", outcome: "fail", message: "no team", severity: "high", category: "labels", policy: "p", properties: { want: "team" } },
    { rule: "has-owner", outcome: "pass" },
  ]);
  const [[name, [h, results]]] = host.calls;
  assert.equal(name, "report.setResults");
  assert.equal(h, obj.handle);
  assert.deepEqual(results, [
    { policy: "p", rule: "has-team", outcome: "fail", severity: "high", category: "labels", message: "no team", properties: [["want", "team"]] },
    { policy: undefined, rule: "has-owner", outcome: "pass", severity: undefined, category: undefined, message: "", properties: [] },
  ]);
});

test("report.clear gives no results; a refusal throws a ReportError", () => {
  const obj = new KubeObject(host.handle("default/web"), "default/web");
  report.clear(obj);
  assert.deepEqual(host.calls[0][1][1], []);
  host.answer("report.setResults", () => host.refuse("more than 100 results"));
  assert.throws(() => report.set(obj, []), (e) => e instanceof ReportError && e.message === "more than 100 results");
});

test("log: one line per call at its level; strings as they are, errors as their stack, values as JSON", () => {
  log.trace("t");
  log.debug("d", 1);
  log.info("hello", "world");
  log.warn({ a: [1] }, null);
  const err = new Error("broken");
  log.error("failed:", err);
  log.write("info", true);
  assert.deepEqual(host.calls.slice(0, 4), [
    ["log.log", ["trace", "t"]],
    ["log.log", ["debug", "d 1"]],
    ["log.log", ["info", "hello world"]],
    ["log.log", ["warn", '{"a":[1]} null']],
  ]);
  assert.deepEqual(host.calls[4], ["log.log", ["error", `failed: ${err.stack}`]]);
  assert.ok(err.stack.startsWith("Error: broken"));
  assert.deepEqual(host.calls[5], ["log.log", ["info", "true"]]);
});
