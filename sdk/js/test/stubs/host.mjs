/**
 * The host's imports (`wink:plugin/*`) as the unit tests fake them: every
 * call is recorded in `calls` as `[name, args]` (`name`: `interface.function`,
 * e.g. `cache.get`), and answered by the function a test gave with
 * `answer(name, f)`, else undefined. `refuse(error)` throws a WIT error the
 * way componentize-js's bindings do: the error value in `payload`.
 */

/** @type {Array<[string, unknown[]]>} */
export const calls = [];

/** @type {Map<string, (...args: any[]) => unknown>} */
const answers = new Map();

/** Answer the import `name` with `f` from now on. */
export function answer(name, f) {
  answers.set(name, f);
}

/** Forget every call and answer (call it before each test). */
export function reset() {
  calls.length = 0;
  answers.clear();
}

/** The names of the calls so far. */
export function called() {
  return calls.map(([name]) => name);
}

/** @internal Record and answer one call of an import. */
export function call(name, args) {
  calls.push([name, args]);
  const f = answers.get(name);
  return f ? f(...args) : undefined;
}

/** What an import whose `result` is an error throws (componentize-js's `ComponentError`). */
export class ComponentError extends Error {
  constructor(payload) {
    super("component error");
    this.payload = payload;
  }
}

/** Throw `error` (a WIT error value) as an import does. */
export function refuse(error) {
  throw new ComponentError(error);
}

/**
 * A fake host object handle (WIT `resource object`) for `key`, with `labels`
 * and `json`; its calls are recorded as `object.<method>`.
 */
export function handle(key, { labels = {}, json = "{}", uid = "u-1", resourceVersion = "7" } = {}) {
  const slash = key.indexOf("/");
  const h = {
    key: () => call("object.key", []) ?? key,
    name: () => call("object.name", []) ?? key.slice(slash + 1),
    namespace: () => call("object.namespace", []) ?? (slash < 0 ? undefined : key.slice(0, slash)),
    uid: () => call("object.uid", []) ?? uid,
    resourceVersion: () => call("object.resourceVersion", []) ?? resourceVersion,
    label: (k) => call("object.label", [k]) ?? labels[k],
    meta: () =>
      call("object.meta", []) ?? {
        apiVersion: "v1",
        kind: "Pod",
        namespace: slash < 0 ? undefined : key.slice(0, slash),
        name: key.slice(slash + 1),
        uid,
        resourceVersion,
        labels: Object.entries(labels),
      },
    json: () => call("object.json", []) ?? json,
    duplicate: () => call("object.duplicate", []) ?? handle(key, { labels, json, uid, resourceVersion }),
  };
  return h;
}

/** A fake list answer (WIT `answer`): the keys as the host sends them, the handles made on `get`. */
export function answerOf(keys) {
  return {
    keys: keys.map((k) => `${k}\n`).join(""),
    objects: {
      len: () => keys.length,
      get: (i) => (call("list.get", [i]), i < keys.length ? handle(keys[i]) : undefined),
    },
  };
}
