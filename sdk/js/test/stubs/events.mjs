/** `wink:plugin/events@0.4.0` for the unit tests: each function records its call in `host.mjs`. */

import { call } from "./host.mjs";

export const recordEvent = (...args) => call("events.recordEvent", args);
