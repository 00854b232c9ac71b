#!/usr/bin/env node
/**
 * wink-build: a wink plugin component from a JavaScript or TypeScript entry.
 *
 *   wink-build src/app.ts -o build/my_plugin.wasm [--wit DIR] [--plain]
 *
 * 1. esbuild bundles the entry and the SDK (`wink-sdk` resolves to this
 *    package's sources) into one ES module, leaving the host's interfaces
 *    (`wink:plugin/*`) as imports. The bundle's own entry exports the
 *    world's three interfaces, `handler`, `admission` and `reconciler`,
 *    from the app module through the SDK's `worldExports`: the app exports
 *    only `handler = plugin(MyHandler)`, and the other two come from that
 *    unless the app exports its own;
 * 2. componentize-js (its `componentize` function, with what its CLI's
 *    `-d http fetch-event` passes: the component imports no wasi:http, which
 *    wink does not provide) turns it into a component of the world `plugin`,
 *    with two changes for the cost of a call (`--plain` builds without
 *    them):
 *    - the bindings it generates are rewritten by `bindings.mjs` before
 *      StarlingMonkey runs them (synchronous exports, no per-call debug
 *      logging or finalizer registration for lent objects);
 *    - SpiderMonkey's portable baseline interpreter (inline caches, no
 *      machine code) runs the JavaScript instead of the plain interpreter,
 *      set through its `JIT_OPTION_*` environment at build time (the
 *      snapshot keeps it).
 *
 * esbuild and @bytecodealliance/componentize-js come from the project's
 * node_modules (a project lists them beside `wink-sdk`: npm installs no
 * dependencies of a `file:` SDK outside the project), else this package's,
 * else the node_modules folder named by $WINK_JS_TOOLS.
 * The WIT defaults to the wink checkout this SDK is in (`../../wit`).
 */

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import fsPromises from "node:fs/promises";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { rewrite } from "./bindings.mjs";

const here = dirname(fileURLToPath(import.meta.url));

/** @param {string[]} argv */
function parse(argv) {
  /** @type {{entry?: string, out?: string, wit: string, plain: boolean}} */
  const opts = { wit: resolve(here, "../../../wit"), plain: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "-o" || a === "--out") opts.out = argv[++i];
    else if (a === "--wit") opts.wit = resolve(argv[++i]);
    else if (a === "--plain") opts.plain = true;
    else if (a === "-h" || a === "--help") {
      console.log("usage: wink-build ENTRY -o OUT.wasm [--wit DIR] [--plain]");
      process.exit(0);
    } else opts.entry = a;
  }
  if (!opts.entry || !opts.out) {
    console.error("usage: wink-build ENTRY -o OUT.wasm [--wit DIR] [--plain]");
    process.exit(2);
  }
  return opts;
}

/** A folder and the folders above it. @param {string} from */
function upwards(from) {
  const dirs = [];
  for (let d = resolve(from); ; d = dirname(d)) {
    dirs.push(d);
    if (dirname(d) === d) return dirs;
  }
}

/**
 * Where tools are looked for: the project being built (the current folder,
 * where `npm run build` runs, and the folders above it: its own `npm
 * install` put them there), this package (and the folders above it), then
 * $WINK_JS_TOOLS.
 */
function bases() {
  const dirs = [...upwards(process.cwd()), ...upwards(resolve(here, ".."))];
  if (process.env.WINK_JS_TOOLS) dirs.push(resolve(process.env.WINK_JS_TOOLS));
  return dirs;
}

/** The versions of the tools this SDK is built and tested with (its package.json). */
const pinned = JSON.parse(readFileSync(join(here, "..", "package.json"), "utf8")).dependencies;

/** The folder of an installed tool package. @param {string} spec */
function tool(spec) {
  for (const base of bases()) {
    const dir = join(base, "node_modules", spec);
    if (!existsSync(join(dir, "package.json"))) continue;
    const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    if (pinned[spec] && version !== pinned[spec]) {
      console.warn(`wink-build: ${spec} ${version} (in ${base}); this SDK is tested with ${pinned[spec]}`);
    }
    return dir;
  }
  console.error(`wink-build: cannot find ${spec}: run npm install (or set WINK_JS_TOOLS to a node_modules' parent)`);
  process.exit(1);
}

/**
 * Build `bundle` into the component `out`. componentize-js writes the
 * bindings it generates to `initializer.js` before running StarlingMonkey on
 * them; that write goes through `rewrite` (fs/promises' `writeFile`, which
 * it imports, wrapped for the duration of the build).
 * @param {string} bundle
 * @param {{wit: string, plain: boolean}} opts
 * @param {string} out
 */
async function componentize(bundle, opts, out) {
  const dir = tool("@bytecodealliance/componentize-js");
  const { componentize } = await import(pathToFileURL(join(dir, "src", "componentize.js")).href);
  const writeFile = fsPromises.writeFile;
  if (!opts.plain) {
    fsPromises.writeFile = (path, data, ...rest) => {
      if (typeof path === "string" && path.endsWith("initializer.js") && typeof data === "string") {
        try {
          data = rewrite(data);
        } catch (e) {
          console.warn(`wink-build: bindings kept as generated (${/** @type {Error} */ (e).message})`);
        }
      }
      return writeFile(path, data, ...rest);
    };
    syncBuiltinESMExports();
  }
  try {
    const { component } = await componentize({
      sourcePath: bundle,
      witPath: opts.wit,
      worldName: "plugin",
      disableFeatures: ["http", "fetch-event"],
      ...(opts.plain ? {} : { env: { ...process.env, JIT_OPTION_portableBaselineInterpreter: "true" } }),
    });
    await writeFile(out, component);
  } finally {
    fsPromises.writeFile = writeFile;
    syncBuiltinESMExports();
  }
}

const opts = parse(process.argv.slice(2));
const out = resolve(opts.out);
mkdirSync(dirname(out), { recursive: true });
const bundle = out.replace(/\.wasm$/, "") + ".bundle.js";

const esbuild = createRequire(import.meta.url)(tool("esbuild"));
// esbuild prints its own errors (file, line, the line quoted); a failed
// bundle then ends the build with nothing more to say.
const entry = resolve(opts.entry);
await esbuild.build({
  stdin: {
    contents: [
      `import * as app from ${JSON.stringify(entry)};`,
      `import { worldExports } from "wink-sdk";`,
      `export const { handler, admission, reconciler } = worldExports(app);`,
    ].join("\n"),
    resolveDir: dirname(entry),
    sourcefile: "wink-world.js",
    loader: "js",
  },
  bundle: true,
  format: "esm",
  target: "es2022",
  platform: "neutral",
  outfile: bundle,
  external: ["wink:*"],
  alias: { "wink-sdk": join(here, "..", "src", "index.ts") },
  logLevel: "warning",
}).catch(() => process.exit(1));

await componentize(bundle, opts, out);
