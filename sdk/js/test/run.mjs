#!/usr/bin/env node
/**
 * The SDK's unit tests: `npm test` (or `node test/run.mjs`).
 *
 * esbuild bundles each `test/*.test.mjs` with the SDK's sources, the host's
 * interfaces (`wink:plugin/*`) resolved to the fakes of `test/stubs/`, into
 * `build/test/`; node's own runner (`node --test`) runs the bundles. esbuild
 * comes from this package's dependencies, or from the node_modules folder
 * named by $WINK_JS_TOOLS, as for `wink-build`.
 */

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const sdk = resolve(here, "..");

/** The folder of the installed package `spec`: this package (or a folder above it), then $WINK_JS_TOOLS. */
function tool(spec) {
  const bases = [];
  for (let d = sdk; ; d = dirname(d)) {
    bases.push(d);
    if (dirname(d) === d) break;
  }
  if (process.env.WINK_JS_TOOLS) bases.push(resolve(process.env.WINK_JS_TOOLS));
  for (const base of bases) {
    const dir = join(base, "node_modules", spec);
    if (existsSync(join(dir, "package.json"))) return dir;
  }
  console.error(`test/run.mjs: cannot find ${spec}: run npm install (or set WINK_JS_TOOLS to a node_modules' parent)`);
  process.exit(1);
}

/** Resolves `wink:plugin/<interface>@<version>` to `test/stubs/<interface>.mjs`. */
const stubs = {
  name: "wink-stubs",
  setup(build) {
    build.onResolve({ filter: /^wink:plugin\// }, (args) => {
      const iface = args.path.slice("wink:plugin/".length).split("@")[0];
      const path = join(here, "stubs", `${iface}.mjs`);
      if (!existsSync(path)) return { errors: [{ text: `no stub for ${args.path} (test/stubs/${iface}.mjs)` }] };
      return { path };
    });
  },
};

const tests = readdirSync(here)
  .filter((f) => f.endsWith(".test.mjs"))
  .sort()
  .map((f) => join(here, f));
const out = join(sdk, "build", "test");
rmSync(out, { recursive: true, force: true });
const esbuild = createRequire(import.meta.url)(tool("esbuild"));
await esbuild.build({
  entryPoints: tests,
  bundle: true,
  format: "esm",
  target: "es2022",
  platform: "node",
  outdir: out,
  outExtension: { ".js": ".mjs" },
  alias: { "wink-sdk": join(sdk, "src", "index.ts") },
  plugins: [stubs],
  logLevel: "warning",
});
const bundles = readdirSync(out)
  .filter((f) => f.endsWith(".test.mjs"))
  .sort()
  .map((f) => join(out, f));
const run = spawnSync(process.execPath, ["--test", ...bundles], { stdio: "inherit" });
process.exit(run.status ?? 1);
