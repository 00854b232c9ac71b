/**
 * `KubeObject`: one Kubernetes object as a handler receives it or the cache
 * returns it. It wraps a host handle (WIT `resource object`): nothing is
 * copied into the plugin until an accessor asks, and each answer is kept.
 * The key (hence `name` and `namespace`) comes with every event and every
 * cache answer, so reading it costs no call; `labels` fetches the metadata
 * once, without parsing JSON; `json()` copies the text, `toJSON()` parses it.
 */

import type { Answer, Object as Handle, ObjectList, ObjectMeta } from "wink:plugin/types@0.3.0";

/** A Kubernetes object delivered to a handler or returned by the cache. */
export class KubeObject {
  #handle: Handle | undefined;
  #key: string | undefined;
  #list: ObjectList | undefined;
  #index = 0;
  #meta: ObjectMeta | undefined;
  #json: string | undefined;
  #parsed: unknown;
  #labels: Record<string, string> | undefined;
  #asked: Map<string, string | undefined> | undefined;

  /** @internal */
  constructor(handle: Handle | undefined, key: string | undefined, list?: ObjectList, index = 0) {
    this.#handle = handle;
    this.#key = key;
    this.#list = list;
    this.#index = index;
  }

  /** @internal The objects of a list answer, each with its key. */
  static fromAnswer(answer: Answer): KubeObject[] {
    const keys = answer.keys.split("\n");
    keys.pop();
    return keys.map((key, i) => new KubeObject(undefined, key, answer.objects, i));
  }

  /** The host handle, made on first use for a list member. */
  get handle(): Handle {
    if (this.#handle === undefined) {
      const h = this.#list?.get(this.#index);
      if (h === undefined) throw new Error(`the cache answer lost ${this.#key}`);
      this.#handle = h;
    }
    return this.#handle;
  }

  /** The cache key: `namespace/name`, or `name` when cluster-scoped. */
  get key(): string {
    if (this.#key === undefined) this.#key = this.handle.key();
    return this.#key;
  }

  /** `metadata.name`. */
  get name(): string {
    const key = this.key;
    return key.slice(key.indexOf("/") + 1);
  }

  /** `metadata.namespace`; undefined when cluster-scoped. */
  get namespace(): string | undefined {
    const key = this.key;
    const slash = key.indexOf("/");
    return slash < 0 ? undefined : key.slice(0, slash);
  }

  #metadata(): ObjectMeta {
    if (this.#meta === undefined) this.#meta = this.handle.meta();
    return this.#meta;
  }

  /** `apiVersion`, e.g. `apps/v1`. */
  get apiVersion(): string {
    return this.#metadata().apiVersion;
  }

  /** `kind`, e.g. `Pod`. */
  get kind(): string {
    return this.#metadata().kind;
  }

  /** `metadata.uid`. */
  get uid(): string {
    return this.#metadata().uid;
  }

  /** `metadata.resourceVersion` (opaque: compare for equality only). */
  get resourceVersion(): string {
    return this.#metadata().resourceVersion;
  }

  /** `metadata.labels`, fetched once (do not change it). */
  get labels(): Readonly<Record<string, string>> {
    if (this.#labels === undefined) this.#labels = Object.fromEntries(this.#metadata().labels);
    return this.#labels;
  }

  /**
   * One label's value, or undefined: from the metadata when it was fetched,
   * else asked of the host alone (one string crosses, not every label), and
   * kept.
   */
  label(key: string): string | undefined {
    if (this.#meta !== undefined) {
      return Object.prototype.hasOwnProperty.call(this.labels, key) ? this.labels[key] : undefined;
    }
    this.#asked ??= new Map();
    if (!this.#asked.has(key)) this.#asked.set(key, this.handle.label(key));
    return this.#asked.get(key);
  }

  /** The whole object as JSON text, as the host's cache holds it. */
  json(): string {
    if (this.#json === undefined) this.#json = this.handle.json();
    return this.#json;
  }

  /** The whole object, parsed once (do not change it). */
  toJSON<T = Record<string, unknown>>(): T {
    if (this.#parsed === undefined) this.#parsed = JSON.parse(this.json());
    return this.#parsed as T;
  }

  /** An owned handle to the same object version, to keep past a call. */
  clone(): KubeObject {
    const other = new KubeObject(this.handle.duplicate(), this.#key);
    other.#meta = this.#meta;
    other.#json = this.#json;
    other.#parsed = this.#parsed;
    return other;
  }

  toString(): string {
    return `KubeObject(${this.key})`;
  }
}
