/**
 * `KubeObject`: what each accessor asks the host, and that each answer is
 * kept (asked once, however often read).
 */

import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import { KubeObject } from "wink-sdk";
import * as host from "./stubs/host.mjs";

beforeEach(host.reset);

const pod = (labels = { app: "web" }) =>
  new KubeObject(host.handle("default/web", { labels, json: '{"kind":"Pod","spec":{"containers":[1,2]}}' }), "default/web");

test("the key, name and namespace come with the event: no call", () => {
  const obj = pod();
  assert.deepEqual([obj.key, obj.name, obj.namespace], ["default/web", "web", "default"]);
  assert.equal(String(obj), "KubeObject(default/web)");
  assert.deepEqual(host.called(), []);
});

test("a cluster-scoped key has no namespace", () => {
  const obj = new KubeObject(host.handle("node-1"), "node-1");
  assert.deepEqual([obj.name, obj.namespace], ["node-1", undefined]);
  assert.deepEqual(host.called(), []);
});

test("the metadata is fetched once, for every field it holds", () => {
  const obj = pod({ app: "web", tier: "front" });
  assert.deepEqual(
    [obj.apiVersion, obj.kind, obj.uid, obj.resourceVersion],
    ["v1", "Pod", "u-1", "7"],
  );
  assert.deepEqual(obj.labels, { app: "web", tier: "front" });
  assert.equal(obj.labels, obj.labels, "the same object each time");
  assert.deepEqual(host.called(), ["object.meta"]);
});

test("a label before the metadata asks the host for that label alone, once, even when missing", () => {
  const obj = pod();
  assert.equal(obj.label("app"), "web");
  assert.equal(obj.label("app"), "web");
  assert.equal(obj.label("tier"), undefined);
  assert.equal(obj.label("tier"), undefined);
  assert.deepEqual(host.calls, [
    ["object.label", ["app"]],
    ["object.label", ["tier"]],
  ]);
});

test("a label after the metadata is read from it: no call", () => {
  const obj = pod();
  void obj.uid;
  assert.equal(obj.label("app"), "web");
  assert.equal(obj.label("tier"), undefined);
  assert.equal(obj.label("toString"), undefined, "not an inherited property");
  assert.deepEqual(host.called(), ["object.meta"]);
});

test("the JSON text is copied once and parsed once", () => {
  const obj = pod();
  assert.equal(obj.json(), '{"kind":"Pod","spec":{"containers":[1,2]}}');
  const parsed = obj.toJSON();
  assert.deepEqual(parsed.spec.containers, [1, 2]);
  assert.equal(obj.toJSON(), parsed, "parsed once");
  obj.json();
  assert.deepEqual(host.called(), ["object.json"]);
});

test("clone duplicates the handle and keeps what was fetched", () => {
  const obj = pod();
  void obj.uid;
  const parsed = obj.toJSON();
  const copy = obj.clone();
  assert.notEqual(copy, obj);
  assert.equal(copy.key, "default/web");
  assert.equal(copy.uid, "u-1");
  assert.equal(copy.toJSON(), parsed);
  assert.equal(copy.json(), obj.json());
  assert.deepEqual(host.called(), ["object.meta", "object.json", "object.duplicate"]);
  assert.notEqual(copy.handle, obj.handle);
});

test("an object without its key (a write's answer) asks the handle for it once", () => {
  const obj = new KubeObject(host.handle("default/made"), undefined);
  assert.equal(obj.name, "made");
  assert.equal(obj.namespace, "default");
  assert.deepEqual(host.called(), ["object.key"]);
});

test("a list answer's members are keyed at once and get their handles on first use", () => {
  const objs = KubeObject.fromAnswer(host.answerOf(["default/a", "default/b", "node-c"]));
  assert.deepEqual(
    objs.map((o) => o.key),
    ["default/a", "default/b", "node-c"],
  );
  assert.deepEqual(host.called(), [], "no handle made for keys");
  assert.equal(objs[1].uid, "u-1");
  void objs[1].json();
  assert.deepEqual(host.calls, [
    ["list.get", [1]],
    ["object.meta", []],
    ["object.json", []],
  ]);
});

test("an empty list answer has no members", () => {
  assert.deepEqual(KubeObject.fromAnswer(host.answerOf([])), []);
});

test("a list member the answer lost throws, naming it", () => {
  const answer = host.answerOf(["default/a"]);
  answer.objects.get = () => undefined;
  const [obj] = KubeObject.fromAnswer(answer);
  assert.throws(() => obj.json(), /the cache answer lost default\/a/);
});
