/**
 * The language benchmark's JavaScript plugin. Config `{"mode": "meta"}`:
 * each event reads the object's name and one label (the metadata, no JSON);
 * `{"mode": "parse"}`: each event parses the whole object (`toJSON`). It
 * counts what it saw and logs nothing per event.
 */

import { Handler, type KubeObject, type Registration, config, plugin } from "wink-sdk";

class Bench extends Handler {
  parse = false;
  seen = 0;

  init(text: string): Registration {
    this.parse = config(text, { mode: "meta" }).mode === "parse";
    return { watches: [{ apiVersion: "v1", kind: "Pod" }] };
  }

  touch(obj: KubeObject): void {
    if (this.parse) {
      const pod = obj.toJSON<{ spec: { containers: unknown[] } }>();
      this.seen += pod.spec.containers.length;
    } else {
      this.seen += obj.name.length + (obj.label("app") === undefined ? 0 : 1);
    }
  }

  onAdd(obj: KubeObject): void {
    this.touch(obj);
  }

  onUpdate(_old: KubeObject, obj: KubeObject): void {
    this.touch(obj);
  }
}

export const handler = plugin(Bench);
