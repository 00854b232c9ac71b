/**
 * service-selector-guard in TypeScript: a context-aware policy, like the
 * Rust example. A Service whose selector matches no Pod of its namespace
 * routes nowhere.
 *
 * - At the door (a validating webhook on Service create and update): such a
 *   Service is refused, naming its selector. The Pods are looked up in
 *   wink's informer cache (the plugin reads v1 Pods), so an admission
 *   request costs no request to the API server.
 * - In the background: every Service gets the policy result
 *   `selector-matches-pods` (`fail` naming the selector, or `pass`), kept
 *   current as Services change; Pods coming and going are seen at the next
 *   resync (every 5 minutes).
 *
 * A Service without a selector (one with manual Endpoints) passes. No config.
 */

import {
  CacheError,
  Handler,
  type KubeObject,
  type Outcome,
  type Registration,
  Resource,
  WinkError,
  admission,
  cache,
  log,
  plugin,
  report,
} from "wink-sdk";

const PODS = new Resource("v1", "Pod");

interface Service {
  spec?: { selector?: Record<string, string> | null };
}

/** The selector as label-selector text (keys sorted), or undefined when the Service has none. */
function selector(service: Service): string | undefined {
  const pairs = Object.entries(service.spec?.selector ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`);
  return pairs.length > 0 ? pairs.join(",") : undefined;
}

/** Whether some Pod of `namespace` matches `sel`, from the cache (throws a `CacheError`). */
function matchesPods(namespace: string, sel: string): boolean {
  return cache.first(PODS, namespace, sel) !== undefined;
}

/** An error as the Rust example prints it (`NotPermitted("...")`). */
function describe(e: CacheError): string {
  return `${e.kind}(${JSON.stringify(e.message)})`;
}

/** The Service in `obj`, or undefined when its JSON is not one. */
function decode(obj: KubeObject): Service | undefined {
  try {
    return obj.toJSON<Service>();
  } catch {
    return undefined;
  }
}

class Guard extends Handler {
  init(): Registration {
    return {
      // One name everywhere (grants, reports, Events), whatever the
      // component's file is called.
      name: "service-selector-guard",
      watches: [{ apiVersion: "v1", kind: "Service", resyncSeconds: 300 }],
      reads: [{ apiVersion: "v1", kind: "Pod" }],
      admission: [
        {
          hook: "validate",
          rules: [{ operations: ["create", "update"], apiGroups: [""], apiVersions: ["v1"], resources: ["services"] }],
        },
      ],
    };
  }

  onAdd(obj: KubeObject): void {
    reportOn(obj);
  }

  onUpdate(_old: KubeObject, obj: KubeObject): void {
    reportOn(obj);
  }

  validate(req: admission.Request): admission.Verdict {
    const service = req.object && decode(req.object);
    const namespace = req.namespace;
    if (service === undefined || namespace === undefined) return admission.allow();
    const sel = selector(service);
    if (sel === undefined) return admission.allow();
    try {
      if (matchesPods(namespace, sel)) return admission.allow();
    } catch (e) {
      if (!(e instanceof CacheError)) throw e;
      return admission.allow(`service-selector-guard: Pods not looked up: ${describe(e)}`);
    }
    return admission.deny(`service-selector-guard: the selector ${sel} matches no Pod in namespace ${namespace}`);
  }
}

function reportOn(obj: KubeObject): void {
  const service = decode(obj);
  if (service === undefined) return;
  const sel = selector(service);
  const namespace = obj.namespace;
  let outcome: Outcome = "pass";
  let message = "no selector";
  if (sel !== undefined && namespace !== undefined) {
    try {
      [outcome, message] = matchesPods(namespace, sel)
        ? ["pass", `the selector ${sel} matches Pods`]
        : ["fail", `the selector ${sel} matches no Pod`];
    } catch (e) {
      if (!(e instanceof CacheError)) throw e;
      [outcome, message] = ["error", `Pods not looked up: ${describe(e)}`];
    }
  }
  try {
    report.set(obj, [{ rule: "selector-matches-pods", outcome, message, severity: "medium", category: "Services" }]);
  } catch (e) {
    if (!(e instanceof WinkError)) throw e;
    log.warn(`service-selector-guard: results about ${obj.key} not given: ${e.message}`);
  }
}

export const handler = plugin(Guard);
