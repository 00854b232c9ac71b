/**
 * pod-logger in TypeScript: logs every pod event, like the Rust example.
 *
 * Config (`pod-logger.json` beside the component, optional):
 * `{"tag": "second"}` logs `OnAdd:second <name>`; `{"namespace": "default"}`
 * narrows the watch; `{"tag": "t", "instance_id": true}` logs
 * `OnAdd:t#<random id> <name>`, so tests can tell two instances apart.
 */

import { Handler, type KubeObject, type Registration, config, log, plugin } from "wink-sdk";

/** WASI's random source (StarlingMonkey's Web Crypto). */
declare const crypto: { getRandomValues(array: Uint32Array): Uint32Array };

interface Config {
  tag?: string;
  namespace?: string;
  instance_id?: boolean;
}

class PodLogger extends Handler {
  prefix = " ";

  init(text: string): Registration {
    const cfg = config<Config>(text, {});
    if (typeof cfg.tag === "string" && cfg.instance_id === true) {
      const id = new Uint32Array(1);
      crypto.getRandomValues(id);
      this.prefix = `${cfg.tag}#${id[0]} `;
    } else if (typeof cfg.tag === "string") {
      this.prefix = `${cfg.tag} `;
    }
    return { watches: [{ apiVersion: "v1", kind: "Pod", namespace: cfg.namespace }] };
  }

  onAdd(obj: KubeObject): void {
    log.info(`OnAdd:${this.prefix}${obj.name}`);
  }

  onUpdate(_old: KubeObject, obj: KubeObject): void {
    log.info(`OnUpdate:${this.prefix}${obj.name}`);
  }

  onDelete(obj: KubeObject): void {
    log.info(`OnDelete:${this.prefix}${obj.name}`);
  }
}

export const handler = plugin(PodLogger);
