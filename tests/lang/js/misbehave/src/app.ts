/**
 * A JavaScript plugin that throws: on the add of the pod named by its
 * config's `trigger` (default `bomb`) it throws an Error; the host must treat
 * it as any crash (restart, then quarantine) and log the message.
 */

import { Handler, type KubeObject, type Registration, config, log, plugin } from "wink-sdk";

class Misbehave extends Handler {
  trigger = "bomb";

  init(text: string): Registration {
    this.trigger = config(text, { trigger: "bomb" }).trigger;
    return { watches: [{ apiVersion: "v1", kind: "Pod" }] };
  }

  onAdd(obj: KubeObject): void {
    if (obj.name === this.trigger) throw new Error(`misbehave: throwing on ${obj.name}`);
    log.info(`OnAdd: ${obj.name}`);
  }
}

export const handler = plugin(Misbehave);
