/**
 * The language benchmark's JavaScript plugin. Config `{"mode": "meta"}`:
 * each event reads the object's name and one label (the metadata, no JSON);
 * `{"mode": "parse"}`: each event parses the whole object (`toJSON`). It
 * counts what it saw and logs nothing per event.
 */

import { Handler, type HandlerExport, type KubeObject, type Registration, config, plugin } from "wink-sdk";

class Bench extends Handler {
  mode = "meta";
  seen = 0;

  init(text: string): Registration {
    this.mode = config(text, { mode: "meta" }).mode;
    return { watches: [{ apiVersion: "v1", kind: "Pod" }] };
  }

  touch(obj: KubeObject): void {
    if (this.mode === "none") return;
    if (this.mode === "parse") {
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

const sdk = plugin(Bench);
let bare = false;

/**
 * Mode `bare` returns from the export itself, before the SDK makes objects:
 * the floor of a call into the runtime. Mode `none` goes through the SDK
 * and reads nothing.
 */
export const handler: HandlerExport = {
  ...sdk,
  init(text) {
    bare = text.includes('"bare"');
    return sdk.init(text);
  },
  onUpdate(watch, key, oldObj, newObj) {
    if (!bare) sdk.onUpdate(watch, key, oldObj, newObj);
  },
};
