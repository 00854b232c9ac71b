/**
 * `KubeObject`: one Kubernetes object as a handler receives it or the cache
 * returns it. It wraps a host handle (WIT `resource object`): nothing is
 * copied into the plugin until an accessor asks, and each answer is kept.
 * The key (hence `name` and `namespace`) comes with every event and every
 * cache answer, so reading it costs no call; `labels` fetches the metadata
 * once, without parsing JSON; `json()` copies the text, `toJSON()` parses it.
 * In a handler, `watch` is the index of the event's watch in the registration.
 */

import type { Answer, Object as Handle, ObjectList, ObjectMeta } from "wink:plugin/types@0.4.0";

/** A Kubernetes object delivered to a handler or returned by the cache. */
export class KubeObject {
  // Plain (TypeScript-private) fields, not `#private` ones: StarlingMonkey
  // interprets, and every field set costs; those fetched later start unset.
  // An event's objects set two fields and allocate nothing else: a list
  // member also sets `_list` and `_index`; the rest is set when fetched.
  private _handle: Handle | undefined;
  private _key: string | undefined;
  private declare _list?: ObjectList;
  private declare _index?: number;
  private declare _meta?: ObjectMeta;
  private declare _json?: string;
  private declare _parsed?: unknown;
  private declare _labels?: Record<string, string>;
  // The last label asked of the host alone, and its value.
  private declare _labelKey?: string;
  private declare _labelValue?: string;
  private declare _watch?: number;

  /** @internal */
  constructor(handle: Handle | undefined, key: string | undefined, list?: ObjectList, index?: number) {
    this._handle = handle;
    this._key = key;
    if (list !== undefined) {
      this._list = list;
      this._index = index;
    }
  }

  /** @internal The objects of a list answer, each with its key. */
  static fromAnswer(answer: Answer): KubeObject[] {
    const keys = answer.keys.split("\n");
    keys.pop();
    return keys.map((key, i) => new KubeObject(undefined, key, answer.objects, i));
  }

  /** @internal An object a handler receives from the watch at index `watch`. */
  static ofEvent(handle: Handle, key: string | undefined, watch: number): KubeObject {
    const o = new KubeObject(handle, key);
    o._watch = watch;
    return o;
  }

  /**
   * In a handler call, the index in `Registration.watches` of the watch the
   * event came from (0 for a plugin with one watch); undefined for an object
   * the cache or a write answered.
   */
  get watch(): number | undefined {
    return this._watch;
  }

  /** The host handle, made on first use for a list member. */
  get handle(): Handle {
    if (this._handle === undefined) {
      const h = this._list?.get(this._index ?? 0);
      if (h === undefined) throw new Error(`the cache answer lost ${this._key}`);
      this._handle = h;
    }
    return this._handle;
  }

  /** The cache key: `namespace/name`, or `name` when cluster-scoped. */
  get key(): string {
    if (this._key === undefined) this._key = this.handle.key();
    return this._key;
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

  private metadata(): ObjectMeta {
    if (this._meta === undefined) this._meta = this.handle.meta();
    return this._meta;
  }

  /** `apiVersion`, e.g. `apps/v1`. */
  get apiVersion(): string {
    return this.metadata().apiVersion;
  }

  /** `kind`, e.g. `Pod`. */
  get kind(): string {
    return this.metadata().kind;
  }

  /** `metadata.uid`. */
  get uid(): string {
    return this.metadata().uid;
  }

  /** `metadata.resourceVersion` (opaque: compare for equality only). */
  get resourceVersion(): string {
    return this.metadata().resourceVersion;
  }

  /** `metadata.labels`, fetched once (do not change it). */
  get labels(): Readonly<Record<string, string>> {
    if (this._labels === undefined) this._labels = Object.fromEntries(this.metadata().labels);
    return this._labels;
  }

  /**
   * One label's value, or undefined: from the metadata when it was fetched,
   * else asked of the host alone (one string crosses, not every label); the
   * last one asked is kept.
   */
  label(key: string): string | undefined {
    if (this._meta !== undefined) {
      return Object.prototype.hasOwnProperty.call(this.labels, key) ? this.labels[key] : undefined;
    }
    if (this._labelKey !== key) {
      this._labelValue = this.handle.label(key);
      this._labelKey = key;
    }
    return this._labelValue;
  }

  /** The whole object as JSON text, as the host's cache holds it. */
  json(): string {
    if (this._json === undefined) this._json = this.handle.json();
    return this._json;
  }

  /** The whole object, parsed once (do not change it). */
  toJSON<T = Record<string, unknown>>(): T {
    if (this._parsed === undefined) this._parsed = JSON.parse(this.json());
    return this._parsed as T;
  }

  /** An owned handle to the same object version, to keep past a call. */
  clone(): KubeObject {
    const other = new KubeObject(this.handle.duplicate(), this._key);
    other._meta = this._meta;
    other._json = this._json;
    other._parsed = this._parsed;
    if (this._watch !== undefined) other._watch = this._watch;
    return other;
  }

  toString(): string {
    return `KubeObject(${this.key})`;
  }
}
