#!/usr/bin/env node
/**
 * wink-build: a wink plugin component from a JavaScript or TypeScript entry.
 *
 *   wink-build src/app.ts -o build/my_plugin.wasm [--wit DIR]
 *
 * 1. esbuild bundles the entry and the SDK (`wink-sdk` resolves to this
 *    package's sources) into one ES module, leaving the host's interfaces
 *    (`wink:plugin/*`) as imports;
 * 2. componentize-js's CLI turns it into a component of the world `plugin`
 *    (`-d http fetch-event`: the component imports no wasi:http, which wink
 *    does not provide).
 *
 * esbuild and @bytecodealliance/componentize-js come from this package's
 * dependencies, or from the node_modules folder named by $WINK_JS_TOOLS.
 * The WIT defaults to the wink checkout this SDK is in (`../../wit`).
 */

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** @param {string[]} argv */
function parse(argv) {
  /** @type {{entry?: string, out?: string, wit: string}} */
  const opts = { wit: resolve(here, "../../../wit") };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "-o" || a === "--out") opts.out = argv[++i];
    else if (a === "--wit") opts.wit = resolve(argv[++i]);
    else if (a === "-h" || a === "--help") {
      console.log("usage: wink-build ENTRY -o OUT.wasm [--wit DIR]");
      process.exit(0);
    } else opts.entry = a;
  }
  if (!opts.entry || !opts.out) {
    console.error("usage: wink-build ENTRY -o OUT.wasm [--wit DIR]");
    process.exit(2);
  }
  return opts;
}

/** Where tools are looked for: this package (and the folders above it), then $WINK_JS_TOOLS. */
function bases() {
  const dirs = [];
  for (let d = resolve(here, ".."); ; d = dirname(d)) {
    dirs.push(d);
    if (dirname(d) === d) break;
  }
  if (process.env.WINK_JS_TOOLS) dirs.push(resolve(process.env.WINK_JS_TOOLS));
  return dirs;
}

/** The folder of an installed tool package. @param {string} spec */
function tool(spec) {
  for (const base of bases()) {
    const dir = join(base, "node_modules", spec);
    if (existsSync(join(dir, "package.json"))) return dir;
  }
  console.error(`wink-build: cannot find ${spec}: run npm install (or set WINK_JS_TOOLS to a node_modules' parent)`);
  process.exit(1);
}

const opts = parse(process.argv.slice(2));
const out = resolve(opts.out);
mkdirSync(dirname(out), { recursive: true });
const bundle = out.replace(/\.wasm$/, "") + ".bundle.js";

const esbuild = createRequire(import.meta.url)(tool("esbuild"));
await esbuild.build({
  entryPoints: [resolve(opts.entry)],
  bundle: true,
  format: "esm",
  target: "es2022",
  platform: "neutral",
  outfile: bundle,
  external: ["wink:*"],
  alias: { "wink-sdk": join(here, "..", "src", "index.ts") },
  logLevel: "warning",
});

const cli = join(tool("@bytecodealliance/componentize-js"), "src", "cli.js");
const run = spawnSync(
  process.execPath,
  [cli, bundle, "--wit", opts.wit, "-n", "plugin", "-d", "http", "fetch-event", "-o", out],
  { stdio: "inherit" },
);
process.exit(run.status ?? 1);
