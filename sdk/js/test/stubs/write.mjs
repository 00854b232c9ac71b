/** `wink:plugin/write@0.4.0` for the unit tests: each function records its call in `host.mjs`. */

import { call } from "./host.mjs";

export const create = (...args) => call("write.create", args);
export const replace = (...args) => call("write.replace", args);
export const patch = (...args) => call("write.patch", args);
export const replaceStatus = (...args) => call("write.replaceStatus", args);
export const patchStatus = (...args) => call("write.patchStatus", args);
const delete_ = (...args) => call("write.delete", args);
export { delete_ as delete };
