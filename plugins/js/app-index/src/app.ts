/**
 * app-index in TypeScript: pods indexed by their `app` label in the host's
 * indexer; on each event it logs the keys of every pod sharing the object's
 * `app` value (`IndexKeys("app", value)`), like the Rust example.
 */

import { CacheError, Handler, IndexBy, type KubeObject, type Registration, Resource, cache, log, plugin } from "wink-sdk";

const PODS = new Resource("v1", "Pod");

function show(event: string, obj: KubeObject): void {
  const app = obj.label("app");
  if (app === undefined) {
    log.info(`${event}: ${obj.key} (no app label)`);
    return;
  }
  try {
    const keys = cache.indexKeys(PODS, "app", app);
    log.info(`${event}: ${obj.key} app=${app} -> [${keys.join(" ")}]`);
  } catch (e) {
    if (!(e instanceof CacheError)) throw e;
    log.info(`${event}: ${obj.key} app=${app} -> error ${e.message}`);
  }
}

class AppIndex extends Handler {
  init(): Registration {
    return { watches: [{ apiVersion: "v1", kind: "Pod", indexes: { app: IndexBy.label("app") } }] };
  }

  onAdd(obj: KubeObject): void {
    show("add", obj);
  }

  onUpdate(_old: KubeObject, obj: KubeObject): void {
    show("update", obj);
  }

  onDelete(obj: KubeObject): void {
    show("delete", obj);
  }
}

export const handler = plugin(AppIndex);
