"""Unit tests of wink_sdk on the host, against the bindings componentize-py
generates for the world (``componentize-py -d wit -w plugin bindings DIR``,
DIR on PYTHONPATH) with the host's imports replaced by fakes.

Run: ``PYTHONPATH=DIR:sdk/python python3 -m unittest discover -s sdk/python/tests``
(the ``languages`` end-to-end test does).
"""

import logging
import unittest
from typing import Any, Dict, List, Optional, Tuple

from componentize_py_types import Err
from wit_world.imports import cache as wit_cache
from wit_world.imports import log as wit_log
from wit_world.imports import types
from wit_world.imports import write as wit_write

import wink_sdk
from wink_sdk import cache, errors, write
from wink_sdk.object import Object


class FakeHandle:
    """A host object handle counting the crossings."""

    def __init__(self, labels: Dict[str, str]) -> None:
        self.labels = labels
        self.calls: List[str] = []

    def key(self) -> str:
        self.calls.append("key")
        return "default/web"

    def label(self, key: str) -> Optional[str]:
        self.calls.append(f"label:{key}")
        return self.labels.get(key)

    def meta(self) -> types.ObjectMeta:
        self.calls.append("meta")
        return types.ObjectMeta("v1", "Pod", "default", "web", "u1", "7", sorted(self.labels.items()))

    def duplicate(self) -> "FakeHandle":
        self.calls.append("duplicate")
        return FakeHandle(self.labels)

    def json(self) -> str:
        self.calls.append("json")
        return '{"kind": "Pod", "spec": {"containers": [1, 2]}}'


class ObjectTest(unittest.TestCase):
    def test_the_key_costs_no_crossing_and_each_answer_is_kept(self) -> None:
        h = FakeHandle({"app": "web"})
        obj = Object(h, "default/web")  # type: ignore[arg-type]
        self.assertEqual((obj.key, obj.name, obj.namespace), ("default/web", "web", "default"))
        self.assertEqual(h.calls, [])
        self.assertEqual(obj.label("app"), "web")
        self.assertEqual(obj.label("app"), "web")
        self.assertIsNone(obj.label("tier"))
        self.assertEqual(h.calls, ["label:app", "label:tier"])
        self.assertEqual(obj.labels, {"app": "web"})
        self.assertEqual((obj.uid, obj.resource_version, obj.kind), ("u1", "7", "Pod"))
        self.assertEqual(obj.to_dict()["spec"]["containers"], [1, 2])
        obj.to_dict()
        obj.json()
        self.assertEqual(h.calls, ["label:app", "label:tier", "meta", "json"])

    def test_a_cluster_scoped_key_has_no_namespace(self) -> None:
        obj = Object(FakeHandle({}), "node-1")  # type: ignore[arg-type]
        self.assertEqual((obj.name, obj.namespace), ("node-1", None))


class Fakes(unittest.TestCase):
    """Replaces host imports for one test."""

    def fake(self, module: Any, name: str, f: Any) -> None:
        old = getattr(module, name)
        setattr(module, name, f)
        self.addCleanup(setattr, module, name, old)


class CacheTest(Fakes):
    def test_index_keys_and_typed_refusals(self) -> None:
        self.fake(wit_cache, "index_keys", lambda r, i, v: "default/a\ndefault/b\n")
        self.assertEqual(cache.index_keys(wink_sdk.Resource("v1", "Pod"), "app", "web"), ["default/a", "default/b"])

        def refuse(r: Any, i: str, v: str) -> str:
            raise Err(types.CacheError_UnknownIndex("no index app"))

        self.fake(wit_cache, "index_keys", refuse)
        with self.assertRaises(errors.UnknownIndex) as e:
            cache.index_keys(wink_sdk.Resource("v1", "Pod"), "app", "web")
        self.assertIsInstance(e.exception, wink_sdk.CacheError)
        self.assertEqual((e.exception.kind, str(e.exception)), ("UnknownIndex", "no index app"))


class CacheFirstTest(Fakes):
    def test_first_passes_the_query_and_wraps_the_handle(self) -> None:
        asked: List[Tuple[Any, ...]] = []

        def first(r: Any, ns: Any, sel: Any) -> Any:
            asked.append((r.kind, ns, sel))
            return FakeHandle({"app": "web"}) if ns == "default" else None

        self.fake(wit_cache, "first", first)
        pods = wink_sdk.Resource("v1", "Pod")
        found = cache.first(pods, "default", "app=web")
        assert found is not None
        self.assertEqual((found.key, found.label("app")), ("default/web", "web"))
        self.assertIsNone(cache.first(pods, "other", "app=web"))
        self.assertEqual(asked, [("Pod", "default", "app=web"), ("Pod", "other", "app=web")])


class WriteTest(Fakes):
    def test_a_patch_sends_compact_json_and_errors_are_exceptions(self) -> None:
        sent: List[Tuple[Any, ...]] = []

        def patch(r: Any, key: str, kind: Any, body: str) -> Any:
            sent.append((r.kind, key, type(kind).__name__, body))
            status = types.ApiStatus(409, "Conflict", "stale", [], None)
            raise Err(types.WriteError_Conflict(status))

        self.fake(wit_write, "patch", patch)
        deployments = wink_sdk.Resource("apps/v1", "Deployment")
        with self.assertRaises(wink_sdk.Conflict) as e:
            write.merge_patch(deployments, "default/web", {"metadata": {"labels": {"team": "x"}}})
        self.assertEqual(sent, [("Deployment", "default/web", "PatchType_Merge", '{"metadata":{"labels":{"team":"x"}}}')])
        self.assertIsInstance(e.exception, wink_sdk.WriteError)
        self.assertEqual(e.exception.status.code if e.exception.status else 0, 409)
        self.assertEqual(str(e.exception), "409 Conflict: stale")

        def refuse(r: Any, key: str, kind: Any, body: str) -> Any:
            raise Err(types.WriteError_NotPermitted("no grant"))

        self.fake(wit_write, "patch", refuse)
        with self.assertRaises(wink_sdk.NotPermitted) as e2:
            write.merge_patch(deployments, "default/web", "{}")
        self.assertEqual((e2.exception.kind, e2.exception.message, e2.exception.status), ("NotPermitted", "no grant", None))


class HandlerTest(unittest.TestCase):
    def test_init_errors_are_the_results_error_and_registrations_become_wit(self) -> None:
        class Bad(wink_sdk.Handler):
            def init(self, config: str) -> wink_sdk.Registration:
                wink_sdk.config(config, {"tag": ""})
                return wink_sdk.Registration()

        with self.assertRaises(Err) as e:
            wink_sdk.export(Bad)().init('{"nope": 1}')
        self.assertEqual(e.exception.value, "bad config: unknown field 'nope'")

        seen: List[str] = []

        class Good(wink_sdk.Handler):
            def init(self, config: str) -> wink_sdk.Registration:
                pods = wink_sdk.Watch("v1", "Pod", namespace="x", resync=30.5, indexes={"app": wink_sdk.IndexBy.label("app")})
                return wink_sdk.Registration(
                    watches=[pods],
                    writes=[wink_sdk.Writes(wink_sdk.Resource("apps/v1", "Deployment"), [wink_sdk.Verb.PATCH])],
                    records_events=True,
                )

            def on_add(self, obj: Object, in_initial_list: bool) -> None:
                seen.append(f"{obj.name} {in_initial_list}")

        export = wink_sdk.export(Good)()
        reg = export.init("")
        self.assertEqual(reg.watches[0].resource, types.ResourceType("v1", "Pod"))
        self.assertEqual((reg.watches[0].namespace, reg.watches[0].resync_seconds), ("x", 31))
        self.assertEqual(reg.watches[0].indexes, [types.Index("app", types.IndexBy_Label("app"))])
        self.assertEqual(reg.writes[0].verbs, [types.Verb.PATCH])
        self.assertTrue(reg.records_events)
        export.on_add(0, "default/web", FakeHandle({}), True)  # type: ignore[arg-type]
        self.assertEqual(seen, ["web True"])


class LoggingTest(Fakes):
    def test_the_logging_module_reaches_the_host_at_its_level(self) -> None:
        lines: List[Tuple[Any, str]] = []
        self.fake(wit_log, "log", lambda level, message: lines.append((level, message)))
        log = logging.getLogger("test")
        log.info("hello %s", "world")
        log.warning("careful")
        log.debug("detail")
        log.log(wink_sdk.log.TRACE, "fine")
        self.assertEqual(
            lines,
            [
                (types.Level.INFO, "hello world"),
                (types.Level.WARN, "careful"),
                (types.Level.DEBUG, "detail"),
                (types.Level.TRACE, "fine"),
            ],
        )


if __name__ == "__main__":
    unittest.main()
