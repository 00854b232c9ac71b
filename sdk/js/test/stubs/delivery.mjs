/** `wink:plugin/delivery@0.4.0` for the unit tests: each function records its call in `host.mjs`. */

import { call } from "./host.mjs";

export const begin = (...args) => call("delivery.begin", args);
