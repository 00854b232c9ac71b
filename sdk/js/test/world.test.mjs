/**
 * What wink:plugin@0.4.0 added: the registration's new fields and their
 * defaults, `obj.watch`, `onBatch` as the SDK loops it, write and Event
 * answers, and the `admission` and `reconciler` exports (`worldExports`)
 * with their defaults.
 */

import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import {
  Action,
  Change,
  Enqueue,
  Handler,
  KubeObject,
  QueueError,
  Resource,
  admission,
  events,
  plugin,
  queue,
  worldExports,
  write,
} from "wink-sdk";
import * as host from "./stubs/host.mjs";

beforeEach(host.reset);

const pods = new Resource("v1", "Pod");
const dispose = Symbol.dispose ?? Symbol.for("dispose");

class Plain extends Handler {
  init() {
    return { watches: [{ apiVersion: "v1", kind: "Pod" }] };
  }
}

class Recorder extends Handler {
  seen = [];
  init() {
    return {};
  }
  onAdd(obj, inInitialList) {
    this.seen.push(["add", obj.watch, obj.key, inInitialList]);
  }
  onUpdate(oldObj, newObj) {
    this.seen.push(["update", oldObj.watch, oldObj.key, oldObj.handle.tag, newObj.handle.tag]);
  }
  onDelete(obj, finalStateUnknown) {
    this.seen.push(["delete", obj.watch, obj.key, finalStateUnknown]);
  }
}

/** A `handler` export of `Recorder` after `init`, and the Recorder (the last one made). */
function started() {
  let made;
  class Kept extends Recorder {
    constructor() {
      super();
      made = this;
    }
  }
  const exp = plugin(Kept);
  exp.init("");
  return [exp, made];
}

/** A fake handle that says which it is and counts its disposal. */
function tagged(tag, disposed = []) {
  return { ...host.handle("default/x"), tag, [dispose]: () => disposed.push(tag) };
}

test("name, waitForSync, updatesWhen, enqueue, webhooks and the queue reach the record, defaults filled in", () => {
  class Full extends Handler {
    init() {
      return {
        name: "team-guard",
        waitForSync: false,
        watches: [
          {
            apiVersion: "apps/v1",
            kind: "Deployment",
            updatesWhen: [Change.generation(), Change.labels(), Change.annotations()],
            enqueue: Enqueue.ownKey(),
          },
          {
            apiVersion: "v1",
            kind: "ConfigMap",
            updatesWhen: [Change.label("a"), Change.annotation("b"), Change.field("data")],
            enqueue: Enqueue.byIndex("mounts"),
          },
        ],
        admission: [{ hook: "validate", rules: [{ operations: ["create"], apiGroups: ["apps"], apiVersions: ["v1"], resources: ["deployments"] }] }],
        queue: { resource: new Resource("apps/v1", "Deployment"), maxDelayMs: 60_000 },
      };
    }
  }
  const r = plugin(Full).init("");
  assert.equal(r.name, "team-guard");
  assert.equal(r.waitForSync, false);
  assert.deepEqual(r.watches[0].updatesWhen, [{ tag: "generation" }, { tag: "labels" }, { tag: "annotations" }]);
  assert.deepEqual(r.watches[1].updatesWhen, [
    { tag: "label", val: "a" },
    { tag: "annotation", val: "b" },
    { tag: "field", val: "data" },
  ]);
  assert.deepEqual([r.watches[0].enqueue, r.watches[1].enqueue], [{ tag: "own-key" }, { tag: "by-index", val: "mounts" }]);
  assert.deepEqual(r.admission, [
    {
      hook: "validate",
      rules: [{ operations: ["create"], apiGroups: ["apps"], apiVersions: ["v1"], resources: ["deployments"], scope: "any" }],
      namespaceSelector: undefined,
      objectSelector: undefined,
      failurePolicy: "fail",
      timeoutSeconds: 10,
      matchPolicy: "equivalent",
    },
  ]);
  assert.deepEqual(r.queue, {
    resource: { apiVersion: "apps/v1", kind: "Deployment" },
    baseDelayMs: 5,
    maxDelayMs: 60_000,
    qps: 10,
    burst: 100,
  });
  assert.deepEqual([Enqueue.none(), Enqueue.controllerOwner(), Enqueue.mapped()], [{ tag: "none" }, { tag: "controller-owner" }, { tag: "mapped" }]);
});

test("each call says its watch (obj.watch); cache objects have none; a clone keeps it", () => {
  const [exp, rec] = started();
  exp.onAdd(1, "default/cm", host.handle("default/cm"), false);
  exp.onUpdate(0, "default/web", tagged("old"), tagged("new"));
  exp.onDelete(1, "default/cm", host.handle("default/cm"), true);
  assert.deepEqual(rec.seen, [
    ["add", 1, "default/cm", false],
    ["update", 0, "default/web", "old", "new"],
    ["delete", 1, "default/cm", true],
  ]);
  assert.equal(new KubeObject(host.handle("default/x"), "default/x").watch, undefined);
  assert.equal(KubeObject.ofEvent(host.handle("default/x"), "default/x", 2).clone().watch, 2);
});

test("a batch is each event in order, after delivery.begin(i), and its objects' borrows end", () => {
  const [exp, rec] = started();
  host.answer("delivery.begin", (i) => rec.seen.push(["begin", i]));
  const disposed = [];
  const objects = ["a", "old", "new", "b", "c"].map((t) => tagged(t, disposed));
  exp.onBatch(
    [
      { tag: "add", val: { watch: 0, key: "default/a", inInitialList: true } },
      { tag: "update", val: { watch: 1, key: "default/cm" } },
      { tag: "delete", val: { watch: 0, key: "default/b", finalStateUnknown: true } },
      { tag: "add", val: { watch: 1, key: "default/c", inInitialList: false } },
    ],
    objects,
  );
  assert.deepEqual(rec.seen, [
    ["begin", 0],
    ["add", 0, "default/a", true],
    ["begin", 1],
    ["update", 1, "default/cm", "old", "new"],
    ["begin", 2],
    ["delete", 0, "default/b", true],
    ["begin", 3],
    ["add", 1, "default/c", false],
  ]);
  assert.deepEqual(disposed, ["a", "old", "new", "b", "c"]);
  exp.onBatch([], []);
  assert.equal(host.called().filter((n) => n === "delivery.begin").length, 4);
});

test("a batch whose objects do not match its events throws before any call, and still ends the borrows", () => {
  const [exp, rec] = started();
  const disposed = [];
  assert.throws(() => exp.onBatch([{ tag: "update", val: { watch: 0, key: "default/a" } }], [tagged("only", disposed)]), /need 2 objects, got 1/);
  assert.deepEqual(rec.seen, []);
  assert.deepEqual(host.called(), []);
  assert.deepEqual(disposed, ["only"]);
});

test("writes answer Written (the object, with dryRun); deletes answer {object, dryRun}; Events what became of them", () => {
  host.answer("write.patch", () => ({ object: host.handle("default/web"), dryRun: true }));
  const done = write.mergePatch(pods, "default/web", {});
  assert.ok(done instanceof write.Written && done instanceof KubeObject);
  assert.equal(done.dryRun, true);
  assert.equal(done.object, done);
  assert.equal(done.key, "default/web");
  host.answer("write.create", () => ({ object: host.handle("default/new"), dryRun: false }));
  assert.equal(write.create(pods, {}).dryRun, false);
  host.answer("write.delete", () => ({ object: undefined, dryRun: true }));
  assert.deepEqual(write.remove(pods, "default/web"), { object: undefined, dryRun: true });
  const answers = ["sent", "audit", "dropped"];
  host.answer("events.recordEvent", () => answers.shift());
  const obj = new KubeObject(host.handle("default/web"), "default/web");
  assert.deepEqual(
    [events.warning(obj, "R", "A", "n"), events.normal(obj, "R", "A", "n"), events.record(obj, "normal", "R", "A", "n")],
    ["sent", "audit", "dropped"],
  );
});

function request(object) {
  return {
    uid: "u-1",
    kind: { group: "", version: "v1", kind: "Pod" },
    resource: { group: "", version: "v1", resource: "pods" },
    name: "web",
    namespace: "default",
    operation: "create",
    userInfo: { username: "alice", uid: "u", groups: ["dev"], extra: [] },
    object,
    dryRun: false,
    options: "",
  };
}

const ALLOWED = { allowed: true, code: undefined, reason: undefined, message: "", warnings: [], auditAnnotations: [] };

test("a plugin that neither admits nor reconciles gets allowing, done defaults from its one export", () => {
  const world = worldExports({ handler: plugin(Plain) });
  assert.deepEqual(world.admission.validate(request(host.handle("default/web"))), ALLOWED);
  assert.deepEqual(world.admission.mutate(request(undefined)), { verdict: ALLOWED, object: undefined });
  assert.deepEqual(world.reconciler.reconcile("default/web"), { tag: "done" });
  assert.deepEqual(world.reconciler.mapToKeys(0, host.handle("default/web")), []);
  const bare = worldExports({ handler: { init: () => ({}) } });
  assert.deepEqual(bare.admission.validate(request(undefined)), ALLOWED, "a hand-written handler gets the defaults");
  assert.deepEqual(bare.reconciler.reconcile("k"), { tag: "done" });
  const own = { validate: () => ALLOWED, mutate: () => ({ verdict: ALLOWED }) };
  assert.equal(worldExports({ handler: plugin(Plain), admission: own }).admission, own, "a module's own export wins");
  assert.throws(() => worldExports({}), /exports no `handler`/);
  class Denies extends Plain {
    validate() {
      return admission.deny("no");
    }
  }
  const wrapped = { ...plugin(Denies), onSynced() {} };
  assert.equal(worldExports({ handler: wrapped }).admission.validate(request(undefined)).allowed, false, "a spread handler keeps its plugin's hooks");
});

test("the hooks answer for the plugin: verdicts, mutations, actions, keys", () => {
  class Guard extends Handler {
    init() {
      return {};
    }
    validate(req) {
      if (req.object && req.object.label("team") === undefined) return admission.deny(`${req.object.key} needs a team label`, { code: 422 });
      return admission.allow("checked");
    }
    mutate(req) {
      return { verdict: { auditAnnotations: { by: req.userInfo.username } }, object: { metadata: { labels: { team: "x" } } } };
    }
    reconcile(key) {
      if (key === "bad") throw new Error("cannot reach it");
      if (key === "wrong") return "done";
      if (key === "ms") return 1500;
      return key === "later" ? Action.requeueAfter(1500) : key === "again" ? Action.requeue() : undefined;
    }
    mapToKeys(obj) {
      return [`${obj.watch}:${obj.key}`];
    }
  }
  const { admission: adm, reconciler: rec } = worldExports({ handler: plugin(Guard) });
  assert.deepEqual(adm.validate(request(host.handle("default/web"))), {
    ...ALLOWED,
    allowed: false,
    code: 422,
    message: "default/web needs a team label",
  });
  assert.deepEqual(adm.validate(request(host.handle("default/web", { labels: { team: "a" } }))).warnings, ["checked"]);
  const m = adm.mutate(request(undefined));
  assert.equal(m.object, '{"metadata":{"labels":{"team":"x"}}}');
  assert.deepEqual(m.verdict.auditAnnotations, [["by", "alice"]]);
  assert.deepEqual(rec.reconcile("later"), { tag: "requeue-after", val: 1500n });
  assert.deepEqual(rec.reconcile("again"), { tag: "requeue" });
  assert.deepEqual(rec.reconcile("now"), Action.done());
  assert.throws(() => rec.reconcile("bad"), (thrown) => thrown === "cannot reach it");
  assert.throws(() => rec.reconcile("wrong"), (thrown) => thrown === 'reconcile answered "done": not an Action or undefined');
  assert.throws(() => rec.reconcile("ms"), (thrown) => thrown === "reconcile answered 1500: not an Action or undefined");
  assert.deepEqual(rec.mapToKeys(2, host.handle("default/web")), ["2:default/web"]);
});

test("queue: delays in milliseconds as the host's u64; a refusal is a QueueError", () => {
  queue.add("default/a");
  queue.addAfter("default/b", 250.2);
  assert.deepEqual(host.calls, [
    ["queue.add", ["default/a"]],
    ["queue.addAfter", ["default/b", 251n]],
  ]);
  host.answer("queue.add", () => host.refuse("no queue registered"));
  assert.throws(() => queue.add("k"), (e) => e instanceof QueueError && e.message === "no queue registered");
});
