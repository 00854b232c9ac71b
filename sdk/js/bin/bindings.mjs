/**
 * Leaner bindings for componentize-js 0.23: the JavaScript glue it generates
 * for a world (run by StarlingMonkey's interpreter on every call) rewritten
 * so that a call into the plugin does only what it must.
 *
 * - `_debugLog(...)` statements go: each built an object literal and looked
 *   up `globalThis.process` (absent in StarlingMonkey) to print nothing.
 * - Exports become plain functions returning one resolved promise: the
 *   embedding takes a promise from every export and drives the event loop
 *   until it settles, so an `async` export cost a promise, an async
 *   function's generator, an `await` and a resumption per call, none of which
 *   a synchronous handler needs. A throw out of a handler still fails the
 *   call (the embedding reports the exception and traps). The loop dropping
 *   the lent handles at the end indexes its array instead of iterating it
 *   (an iterator object and a result object per step, interpreted).
 * - Objects lent to an export (`borrow<object>`) are no longer registered
 *   with a FinalizationRegistry: the export drops them itself when the
 *   handler returns, and a registration outliving that drop would drop
 *   the handle's number again when collected.
 * - Lending an object to the host (`borrow<object>`, all that wink's WIT
 *   takes: methods' `self`, `record-event`, `set-results`) no longer
 *   unregisters it from its FinalizationRegistry: an owned handle (from the
 *   cache or `duplicate`) stays owned by its wrapper and is dropped with it.
 *
 * Each rewrite checks that it found what it expects; `rewrite` throws
 * otherwise (another componentize-js version), and the caller keeps the
 * generated text.
 */

/** Index just past the `)` that closes the `(` at `open`, skipping string literals. */
function closeParen(src, open) {
  let depth = 0;
  for (let i = open; i < src.length; i++) {
    const c = src[i];
    if (c === "'" || c === '"' || c === "`") {
      for (i++; i < src.length && src[i] !== c; i++) if (src[i] === "\\") i++;
    } else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i + 1;
  }
  throw new Error("unbalanced parentheses after _debugLog");
}

function dropDebugLog(src) {
  let out = "";
  let at = 0;
  let n = 0;
  for (;;) {
    const i = src.indexOf("_debugLog(", at);
    if (i < 0) break;
    const end = closeParen(src, i + "_debugLog".length);
    if (src[end] === ";") {
      out += src.slice(at, i);
      at = end + 1;
      n++;
    } else {
      out += src.slice(at, end);
      at = end;
    }
  }
  if (n === 0) throw new Error("no _debugLog statements");
  return out + src.slice(at);
}

const RESOLVED = "$winkResolved";

/** The rewritten bindings; throws when the text is not shaped as expected. */
export function rewrite(src) {
  if (src.includes(RESOLVED)) throw new Error(`${RESOLVED} already defined`);
  src = dropDebugLog(src);

  let unregistered = 0;
  src = src.replace(
    /(var handle\d+ = (arg\d+)\[symbolRscHandle\];\s*)finalizationRegistry_[\w$]+\.unregister\(\2\);/g,
    (_m, keep) => {
      unregistered++;
      return keep;
    },
  );
  if (unregistered === 0) throw new Error("no borrowed handle lowering found");

  let exports = 0;
  src = src.replace(/^async function (export_[\w$]+)\(([^)]*)\) \{\n([\s\S]*?)\n\}\n/gm, (_m, name, args, body) => {
    exports++;
    let b = body
      .replace(/\n[ \t]*finalizationRegistry_[\w$]+\.register\((rsc\d+), handle\d+, \1\);/g, "")
      .replace(
        /Object\.defineProperty\((rsc\d+), symbolRscHandle, \{ writable: true, value: (handle\d+)\}\);/g,
        "$1[symbolRscHandle] = $2;",
      )
      .replace(/for \(const entry of (borrows\d+)\) \{/g, "for (let i = 0; i < $1.length; i++) { const entry = $1[i];")
      .replace(/\bawait /g, "")
      .replace(/\breturn;/g, `return ${RESOLVED};`);
    if (/\breturn(?! \$winkResolved;)/.test(b) || /\bawait\b|\.register\(|\bof borrows/.test(b)) {
      throw new Error(`unexpected shape of ${name}`);
    }
    return `function ${name}(${args}) {\n${b}\n}\n`;
  });
  if (exports === 0) throw new Error("no async export functions found");
  if (/\basync function export_/.test(src)) throw new Error("an export was left async");

  return `const ${RESOLVED} = Promise.resolve();\n${src}`;
}
