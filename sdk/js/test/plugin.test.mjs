/**
 * `plugin(cls)`: the world's `handler` export. `init` constructs the handler
 * and turns its registration into the WIT record; each event reaches the
 * handler's method with `KubeObject`s keyed by the event. Also `config` and
 * `isResync`.
 */

import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import { Handler, IndexBy, KubeObject, Resource, config, isResync, plugin } from "wink-sdk";
import * as host from "./stubs/host.mjs";

beforeEach(host.reset);

test("a registration becomes the WIT record, defaults filled in", () => {
  class Minimal extends Handler {
    init() {
      return { watches: [{ apiVersion: "v1", kind: "Pod" }] };
    }
  }
  assert.deepEqual(plugin(Minimal).init(""), {
    name: undefined,
    watches: [
      {
        resource: { apiVersion: "v1", kind: "Pod" },
        namespace: undefined,
        labelSelector: undefined,
        fieldSelector: undefined,
        resyncSeconds: 0,
        indexes: [],
        updatesWhen: [],
        enqueue: { tag: "none" },
      },
    ],
    reads: [],
    writes: [],
    recordsEvents: false,
    waitForSync: true,
    admission: [],
    queue: undefined,
  });
});

test("watches, reads, indexes, writes and Events all reach the record", () => {
  const deployments = new Resource("apps/v1", "Deployment");
  class Full extends Handler {
    init() {
      return {
        watches: [
          {
            apiVersion: "apps/v1",
            kind: "Deployment",
            namespace: "prod",
            labelSelector: "app=web",
            fieldSelector: "metadata.name!=x",
            resyncSeconds: 1.2,
            indexes: {
              app: IndexBy.label("app"),
              owner: IndexBy.ownerUid(),
              ownerName: IndexBy.ownerKindName(),
              team: IndexBy.annotation("example.com/team"),
              node: IndexBy.field("spec.nodeName"),
            },
          },
        ],
        reads: [{ apiVersion: "v1", kind: "ConfigMap", namespace: "kube-system" }],
        writes: [{ resource: deployments, verbs: ["patch", "update"] }],
        recordsEvents: true,
      };
    }
  }
  const r = plugin(Full).init("");
  assert.equal(r.watches[0].resyncSeconds, 2, "rounded up to whole seconds");
  assert.deepEqual(r.watches[0].resource, { apiVersion: "apps/v1", kind: "Deployment" });
  assert.deepEqual(
    [r.watches[0].namespace, r.watches[0].labelSelector, r.watches[0].fieldSelector],
    ["prod", "app=web", "metadata.name!=x"],
  );
  assert.deepEqual(r.watches[0].indexes, [
    { name: "app", by: { tag: "label", val: "app" } },
    { name: "owner", by: { tag: "owner-uid" } },
    { name: "ownerName", by: { tag: "owner-kind-name" } },
    { name: "team", by: { tag: "annotation", val: "example.com/team" } },
    { name: "node", by: { tag: "field", val: "spec.nodeName" } },
  ]);
  assert.deepEqual(r.reads, [
    {
      resource: { apiVersion: "v1", kind: "ConfigMap" },
      namespace: "kube-system",
      labelSelector: undefined,
      fieldSelector: undefined,
      indexes: [],
    },
  ]);
  assert.deepEqual(r.writes, [{ resource: { apiVersion: "apps/v1", kind: "Deployment" }, verbs: ["patch", "update"] }]);
  assert.ok(!(r.writes[0].resource instanceof Resource), "a plain record, not the class");
  assert.equal(r.recordsEvents, true);
});

test("a resync period past u32 is clamped", () => {
  class Forever extends Handler {
    init() {
      return { watches: [{ apiVersion: "v1", kind: "Pod", resyncSeconds: 1e12 }] };
    }
  }
  assert.equal(plugin(Forever).init("").watches[0].resyncSeconds, 2 ** 32 - 1);
});

test("init gets the config text; what it throws becomes the refusal's message", () => {
  class Picky extends Handler {
    init(text) {
      if (text !== "ok") throw new Error(`bad config: ${text}`);
      return {};
    }
  }
  assert.deepEqual(plugin(Picky).init("ok").watches, []);
  assert.throws(() => plugin(Picky).init("nope"), (thrown) => thrown === "bad config: nope");
  class ThrowsText extends Handler {
    init() {
      throw 42;
    }
  }
  assert.throws(() => plugin(ThrowsText).init(""), (thrown) => thrown === "42");
});

test("events reach the handler's methods, on one instance made at init, with keyed objects", () => {
  const seen = [];
  let made = 0;
  class Recorder extends Handler {
    constructor() {
      super();
      made++;
      this.count = 0;
    }
    init() {
      return {};
    }
    onAdd(obj, inInitialList) {
      seen.push(["add", obj.key, inInitialList, ++this.count, obj instanceof KubeObject]);
    }
    onUpdate(oldObj, newObj) {
      seen.push(["update", oldObj.key, newObj.key, oldObj.handle === newObj.handle, ++this.count]);
    }
    onDelete(obj, finalStateUnknown) {
      seen.push(["delete", obj.name, finalStateUnknown, ++this.count]);
    }
    onSynced() {
      seen.push(["synced", ++this.count]);
    }
  }
  const exp = plugin(Recorder);
  assert.equal(made, 0, "nothing is made before init");
  exp.init("");
  const a = host.handle("default/a");
  const b = host.handle("default/a");
  exp.onAdd(0, "default/a", a, true);
  exp.onSynced();
  exp.onUpdate(0, "default/a", a, b);
  exp.onDelete(0, "default/a", b, false);
  exp.onAdd(0, "default/c", host.handle("default/c"), false);
  exp.onDelete(0, "default/c", host.handle("default/c"), true);
  assert.equal(made, 1);
  assert.deepEqual(seen, [
    ["add", "default/a", true, 1, true],
    ["synced", 2],
    ["update", "default/a", "default/a", false, 3],
    ["delete", "a", false, 4],
    ["add", "default/c", false, 5, true],
    ["delete", "c", true, 6],
  ]);
  assert.deepEqual(host.called(), [], "the keys came with the events");
});

test("a handler that overrides only onAdd ignores the other events", () => {
  const adds = [];
  class OnlyAdds extends Handler {
    init() {
      return {};
    }
    onAdd(obj) {
      adds.push(obj.name);
    }
  }
  const exp = plugin(OnlyAdds);
  exp.init("");
  const h = host.handle("default/x");
  exp.onUpdate(0, "default/x", h, h);
  exp.onDelete(0, "default/x", h, false);
  exp.onSynced();
  exp.onAdd(0, "default/x", h, false);
  assert.deepEqual(adds, ["x"]);
});

test("an exception out of an event handler propagates (the host treats it as a crash)", () => {
  class Boom extends Handler {
    init() {
      return {};
    }
    onAdd() {
      throw new Error("boom");
    }
  }
  const exp = plugin(Boom);
  exp.init("");
  assert.throws(() => exp.onAdd(0, "default/x", host.handle("default/x"), false), /boom/);
});

test("config: empty text gives a copy of the defaults", () => {
  const defaults = { greeting: "hello", count: 1 };
  const c = config("  \n", defaults);
  assert.deepEqual(c, defaults);
  assert.notEqual(c, defaults);
});

test("config: a JSON object over the defaults", () => {
  assert.deepEqual(config('{"greeting": "hi"}', { greeting: "hello", count: 1 }), { greeting: "hi", count: 1 });
  assert.deepEqual(config('{"anything": [1]}', {}), { anything: [1] }, "no defaults: any field");
});

test("config: bad JSON, a non-object and an unknown field throw `bad config`", () => {
  assert.throws(() => config("{", { a: 1 }), /^Error: bad config: /);
  assert.throws(() => config("[1]", { a: 1 }), /bad config: not a JSON object/);
  assert.throws(() => config("null", { a: 1 }), /bad config: not a JSON object/);
  assert.throws(() => config('"a"', { a: 1 }), /bad config: not a JSON object/);
  assert.throws(() => config('{"b": 2}', { a: 1 }), /bad config: unknown field "b"/);
});

test("isResync: the same uid and resourceVersion", () => {
  const obj = (uid, resourceVersion) => new KubeObject(host.handle("default/x", { uid, resourceVersion }), "default/x");
  assert.equal(isResync(obj("u", "5"), obj("u", "5")), true);
  assert.equal(isResync(obj("u", "5"), obj("u", "6")), false);
  assert.equal(isResync(obj("u", "5"), obj("v", "5")), false);
});
