/** `wink:plugin/queue@0.4.0` for the unit tests: each function records its call in `host.mjs`. */

import { call } from "./host.mjs";

export const add = (...args) => call("queue.add", args);
export const addAfter = (...args) => call("queue.addAfter", args);
