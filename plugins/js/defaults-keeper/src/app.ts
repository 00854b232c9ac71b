/**
 * defaults-keeper in TypeScript: every namespace has the ConfigMap
 * `wink-defaults`, its data from the plugin's config: a reconciler over
 * namespaces' keys, like the Rust example.
 *
 * Namespaces feed the queue with their own keys; the ConfigMaps feed it
 * through `mapToKeys` (a deleted `wink-defaults` enqueues its namespace).
 * `reconcile` reads the cache and creates what is missing; a failed create
 * throws, and the host retries the key with backoff, with no new event
 * needed. With `recheck_ms` each namespace is looked at again that long
 * after its last reconcile (`Action.requeueAfter`).
 *
 * Config: `{"data": {"owner": "platform"}, "recheck_ms": 60000}` (default:
 * no data, no recheck). It declares `create` on ConfigMaps; the operator
 * grants it.
 */

import {
  Action,
  AlreadyExists,
  Enqueue,
  Handler,
  type KubeObject,
  type Registration,
  Resource,
  WriteError,
  cache,
  config,
  log,
  plugin,
  write,
} from "wink-sdk";

/** The ConfigMap kept in every namespace. */
const NAME = "wink-defaults";
const NAMESPACES = new Resource("v1", "Namespace");
const CONFIG_MAPS = new Resource("v1", "ConfigMap");

class DefaultsKeeper extends Handler {
  data: Record<string, string> = {};
  recheckMs = 0;

  init(text: string): Registration {
    const cfg = config(text, { data: {} as Record<string, string>, recheck_ms: 0 });
    this.data = { ...cfg.data };
    this.recheckMs = Number(cfg.recheck_ms);
    // ANCHOR: queue
    return {
      name: "defaults-keeper",
      queue: { resource: NAMESPACES, baseDelayMs: 50, maxDelayMs: 30_000 },
      watches: [
        { apiVersion: "v1", kind: "Namespace", enqueue: Enqueue.ownKey() },
        { apiVersion: "v1", kind: "ConfigMap", enqueue: Enqueue.mapped() },
      ],
      writes: [{ resource: CONFIG_MAPS, verbs: ["create"] }],
    };
    // ANCHOR_END: queue
  }

  /** What a reconcile that left things right answers. */
  settled(): Action {
    return this.recheckMs === 0 ? Action.done() : Action.requeueAfter(this.recheckMs);
  }

  // ANCHOR: reconcile
  /** A `wink-defaults` ConfigMap concerns its namespace. */
  mapToKeys(cm: KubeObject): string[] {
    return cm.name === NAME && cm.namespace !== undefined ? [cm.namespace] : [];
  }

  reconcile(ns: string): Action {
    const namespace = cache.get(NAMESPACES, ns);
    if (namespace === undefined) return Action.done(); // gone: nothing to keep
    if (namespace.json().includes('"deletionTimestamp"')) return Action.done(); // terminating: nothing may be created
    const key = `${ns}/${NAME}`;
    if (cache.get(CONFIG_MAPS, key) !== undefined) {
      log.info(`defaults-keeper: ${key} checked`);
      return this.settled();
    }
    const body = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: NAME, namespace: ns }, data: this.data };
    try {
      const written = write.create(CONFIG_MAPS, body);
      log.info(written.dryRun ? `defaults-keeper: would create ${key} (audit mode: dry run)` : `defaults-keeper: ${key} created`);
    } catch (e) {
      // Created meanwhile; the cache has not seen it yet.
      if (e instanceof AlreadyExists) log.info(`defaults-keeper: ${key} exists`);
      else if (e instanceof WriteError) throw new Error(`${key} not created: ${e.message}`);
      else throw e;
    }
    return this.settled();
  }
  // ANCHOR_END: reconcile
}

export const handler = plugin(DefaultsKeeper);
