/** `wink:plugin/cache@0.4.0` for the unit tests: each function records its call in `host.mjs`. */

import { call } from "./host.mjs";

export const get = (...args) => call("cache.get", args);
export const list = (...args) => call("cache.list", args);
export const byIndex = (...args) => call("cache.byIndex", args);
export const indexKeys = (...args) => call("cache.indexKeys", args);
export const listIndexValues = (...args) => call("cache.listIndexValues", args);
export const first = (...args) => call("cache.first", args);
