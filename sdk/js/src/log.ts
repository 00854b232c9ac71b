/**
 * Logging into the host's log, prefixed there with the plugin's name:
 * `log.info("...")`, `log.warn(...)`, ... (`console.log` reaches it too, at
 * info level).
 */

import { log as hostLog } from "wink:plugin/log@0.4.0";
import type { Level } from "wink:plugin/types@0.4.0";

export type { Level };

function line(args: unknown[]): string {
  return args.map((a) => (typeof a === "string" ? a : a instanceof Error ? (a.stack ?? String(a)) : JSON.stringify(a))).join(" ");
}

/** Write one line at `level`. */
export function write(level: Level, ...args: unknown[]): void {
  hostLog(level, line(args));
}
/** Log at trace level. */
export const trace = (...args: unknown[]): void => write("trace", ...args);
/** Log at debug level. */
export const debug = (...args: unknown[]): void => write("debug", ...args);
/** Log at info level. */
export const info = (...args: unknown[]): void => write("info", ...args);
/** Log at warn level. */
export const warn = (...args: unknown[]): void => write("warn", ...args);
/** Log at error level. */
export const error = (...args: unknown[]): void => write("error", ...args);
