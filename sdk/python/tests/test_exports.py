"""Unit tests of what wink:plugin@0.4.0 added to wink_sdk: the registration's
new fields and their defaults, ``obj.watch``, ``on_batch`` as the SDK loops
it, write and Event answers, and the ``admission`` and ``reconciler``
exports with their defaults. Run as ``test_sdk.py`` says.
"""

import unittest
from datetime import timedelta
from typing import Any, Dict, List, Optional, Tuple

from componentize_py_types import Err
from test_sdk import FakeHandle, Fakes
from wit_world.exports import admission as wit_admission
from wit_world.exports import handler as wit_handler
from wit_world.exports import reconciler as wit_reconciler
from wit_world.imports import delivery as wit_delivery
from wit_world.imports import events as wit_events
from wit_world.imports import queue as wit_queue
from wit_world.imports import types
from wit_world.imports import write as wit_write

import wink_sdk
from wink_sdk import Action, Change, Enqueue, Mutation, Object, Registration, Verdict, Watch, events, queue, write
from wink_sdk._export import exports
from wink_sdk.admission import Hook, Operation, Rule, Webhook

PODS = wink_sdk.Resource("v1", "Pod")


class Plain(wink_sdk.Handler):
    """A plugin that only watches pods: every new hook left to its default."""

    def init(self, config: str) -> Registration:
        return Registration(watches=[Watch("v1", "Pod")])


class RegistrationTest(unittest.TestCase):
    def test_the_defaults_wait_for_sync_and_declare_nothing_new(self) -> None:
        reg = exports(Plain)["Handler"]().init("")
        self.assertEqual((reg.name, reg.wait_for_sync, reg.admission, reg.queue), (None, True, [], None))
        self.assertEqual(reg.watches[0].updates_when, [])
        self.assertEqual(reg.watches[0].enqueue, types.Enqueue_None_())

    def test_name_wait_for_sync_update_filters_webhooks_and_queue_reach_the_record(self) -> None:
        class Full(wink_sdk.Handler):
            def init(self, config: str) -> Registration:
                deployments = Watch(
                    "apps/v1",
                    "Deployment",
                    updates_when=[Change.generation(), Change.label("team"), Change.field("spec")],
                    enqueue=Enqueue.own_key(),
                )
                hook = Webhook(Hook.VALIDATE, [Rule([Operation.CREATE], ["apps"], ["v1"], ["deployments"])])
                return Registration(
                    name="team-guard",
                    watches=[deployments, Watch("v1", "Pod", enqueue=Enqueue.by_index("mounts"))],
                    wait_for_sync=False,
                    admission=[hook],
                    queue=wink_sdk.Queue(wink_sdk.Resource("apps/v1", "Deployment"), max_delay_ms=60_000),
                )

        reg = exports(Full)["Handler"]().init("")
        self.assertEqual((reg.name, reg.wait_for_sync), ("team-guard", False))
        w = reg.watches[0]
        self.assertEqual(
            w.updates_when, [types.Change_Generation(), types.Change_Label("team"), types.Change_Field("spec")]
        )
        self.assertEqual((w.enqueue, reg.watches[1].enqueue), (types.Enqueue_OwnKey(), types.Enqueue_ByIndex("mounts")))
        rule = types.AdmissionRule([types.Operation.CREATE], ["apps"], ["v1"], ["deployments"], types.Scope.ANY)
        self.assertEqual(
            reg.admission,
            [types.Webhook(types.Hook.VALIDATE, [rule], None, None, types.FailurePolicy.FAIL, 10, types.MatchPolicy.EQUIVALENT)],
        )
        self.assertEqual(reg.queue, types.Queue(types.ResourceType("apps/v1", "Deployment"), 5, 60_000, 10, 100))


class Recorder(wink_sdk.Handler):
    """Records each call with the objects' keys and watches."""

    def __init__(self) -> None:
        self.seen: List[Tuple[Any, ...]] = []

    def init(self, config: str) -> Registration:
        return Registration(watches=[Watch("v1", "Pod"), Watch("v1", "ConfigMap")])

    def on_add(self, obj: Object, in_initial_list: bool) -> None:
        self.seen.append(("add", obj.watch, obj.key, in_initial_list))

    def on_update(self, old: Object, new: Object) -> None:
        self.seen.append(("update", old.watch, old.key, old.handle.labels, new.handle.labels))

    def on_delete(self, obj: Object, final_state_unknown: bool) -> None:
        self.seen.append(("delete", obj.watch, obj.key, final_state_unknown))


def started() -> Tuple[Any, Recorder]:
    """A ``handler`` export of :class:`Recorder` after ``init``, and the plugin."""
    made = exports(Recorder)
    export = made["Handler"]()
    export.init("")
    return export, _plugin_of(export)


def _plugin_of(export: Any) -> Recorder:
    """The plugin instance behind ``export`` (its state is private): the one
    ``on_synced`` is called on."""
    seen: List[Recorder] = []
    original = Recorder.on_synced

    def grab(self: Recorder) -> None:
        seen.append(self)

    Recorder.on_synced = grab  # type: ignore[method-assign]
    try:
        export.on_synced()
    finally:
        Recorder.on_synced = original  # type: ignore[method-assign]
    return seen[0]


class WatchTest(unittest.TestCase):
    def test_each_call_says_its_watch_and_the_signatures_stay(self) -> None:
        export, plugin = started()
        export.on_add(1, "default/cm", FakeHandle({}), False)
        export.on_update(0, "default/web", FakeHandle({"v": "1"}), FakeHandle({"v": "2"}))
        export.on_delete(1, "default/cm", FakeHandle({}), True)
        self.assertEqual(
            plugin.seen,
            [
                ("add", 1, "default/cm", False),
                ("update", 0, "default/web", {"v": "1"}, {"v": "2"}),
                ("delete", 1, "default/cm", True),
            ],
        )
        self.assertIsNone(Object(FakeHandle({}), "default/x").watch)  # type: ignore[arg-type]
        self.assertEqual(Object(FakeHandle({}), "a", watch=3).clone().watch, 3)  # type: ignore[arg-type]


class BatchTest(Fakes):
    def test_a_batch_is_each_event_in_order_after_delivery_begin(self) -> None:
        export, plugin = started()
        began: List[int] = []
        self.fake(wit_delivery, "begin", lambda i: (began.append(i), plugin.seen.append(("begin", i))))
        evs = [
            wit_handler.Event_Add(wit_handler.Added(0, "default/a", True)),
            wit_handler.Event_Update(wit_handler.Updated(1, "default/cm")),
            wit_handler.Event_Delete(wit_handler.Deleted(0, "default/b", True)),
            wit_handler.Event_Add(wit_handler.Added(1, "default/c", False)),
        ]
        objs = [FakeHandle({}), FakeHandle({"v": "old"}), FakeHandle({"v": "new"}), FakeHandle({}), FakeHandle({})]
        export.on_batch(evs, objs)
        self.assertEqual(began, [0, 1, 2, 3])
        self.assertEqual(
            plugin.seen,
            [
                ("begin", 0),
                ("add", 0, "default/a", True),
                ("begin", 1),
                ("update", 1, "default/cm", {"v": "old"}, {"v": "new"}),
                ("begin", 2),
                ("delete", 0, "default/b", True),
                ("begin", 3),
                ("add", 1, "default/c", False),
            ],
        )
        export.on_batch([], [])
        self.assertEqual(began, [0, 1, 2, 3])

    def test_a_batch_whose_objects_do_not_match_its_events_is_refused_before_any_call(self) -> None:
        export, plugin = started()
        self.fake(wit_delivery, "begin", lambda i: None)
        evs = [wit_handler.Event_Update(wit_handler.Updated(0, "default/a"))]
        with self.assertRaises(ValueError):
            export.on_batch(evs, [FakeHandle({})])
        self.assertEqual(plugin.seen, [])


class AnswersTest(Fakes):
    def test_writes_answer_written_with_dry_run_and_deletes_answer_deleted(self) -> None:
        self.fake(wit_write, "patch", lambda r, k, kind, body: wit_write.Written(FakeHandle({}), True))
        done = write.merge_patch(PODS, "default/web", {"metadata": {}})
        self.assertIsInstance(done, write.Written)
        self.assertIsInstance(done, Object, "a Written is still the answered object")
        self.assertTrue(done.dry_run)
        self.assertIs(done.object, done)
        self.assertEqual(done.key, "default/web")
        self.fake(wit_write, "create", lambda r, body: wit_write.Written(FakeHandle({}), False))
        self.assertFalse(write.create(PODS, {}).dry_run)
        self.fake(wit_write, "delete", lambda r, k, o: wit_write.Deleted(None, True))
        self.assertEqual(write.delete(PODS, "default/web"), write.Deleted(None, True))
        self.fake(wit_write, "delete", lambda r, k, o: wit_write.Deleted(FakeHandle({}), False))
        gone = write.delete(PODS, "default/web")
        self.assertEqual((gone.object.key if gone.object else None, gone.dry_run), ("default/web", False))

    def test_events_answer_what_became_of_them(self) -> None:
        answers = iter([wit_events.Recorded.SENT, wit_events.Recorded.AUDIT, wit_events.Recorded.DROPPED])
        self.fake(wit_events, "record_event", lambda *a: next(answers))
        obj = Object(FakeHandle({}), "default/web")  # type: ignore[arg-type]
        self.assertIs(events.warning(obj, "R", "A", "n"), wink_sdk.Recorded.SENT)
        self.assertIs(events.normal(obj, "R", "A", "n"), wink_sdk.Recorded.AUDIT)
        self.assertIs(events.record(obj, events.EventType.NORMAL, "R", "A", "n"), wink_sdk.Recorded.DROPPED)


def request(obj: Optional[FakeHandle]) -> wit_admission.Request:
    return wit_admission.Request(
        uid="u-1",
        kind=wit_admission.GroupVersionKind("", "v1", "Pod"),
        resource=wit_admission.GroupVersionResource("", "v1", "pods"),
        sub_resource=None,
        request_kind=None,
        request_resource=None,
        name="web",
        namespace="default",
        operation=types.Operation.CREATE,
        user_info=wit_admission.UserInfo("alice", "u", ["dev"], []),
        object=obj,  # type: ignore[arg-type]
        old_object=None,
        dry_run=False,
        options="",
    )


ALLOWED = wit_admission.Verdict(True, None, None, "", [], [])


class AdmissionAndReconcilerTest(Fakes):
    def test_a_plugin_that_neither_admits_nor_reconciles_gets_the_defaults(self) -> None:
        made = exports(Plain)
        self.assertEqual(made["Admission"]().validate(request(FakeHandle({}))), ALLOWED)
        self.assertEqual(made["Admission"]().mutate(request(None)), wit_admission.Mutation(ALLOWED, None))
        self.assertEqual(made["Reconciler"]().reconcile("default/web"), wit_reconciler.Action_Done())
        self.assertEqual(made["Reconciler"]().map_to_keys(0, FakeHandle({})), [])

    def test_the_one_export_line_gives_the_module_all_three_interfaces(self) -> None:
        module: Dict[str, Any] = {"wink_sdk": wink_sdk, "Plain": Plain}
        exec("Handler = wink_sdk.export(Plain)", module)
        self.assertEqual(
            [module[n].__name__ for n in ("Handler", "Admission", "Reconciler")], ["Handler", "Admission", "Reconciler"]
        )
        self.assertTrue(issubclass(module["Admission"], wit_admission.__dict__.get("Admission", object)))
        mine: Dict[str, Any] = {"wink_sdk": wink_sdk, "Plain": Plain, "Admission": "the author's"}
        exec("Handler = wink_sdk.export(Plain)", mine)
        self.assertEqual(mine["Admission"], "the author's", "a module's own export is kept")

    def test_the_hooks_answer_for_the_plugin(self) -> None:
        class Guard(wink_sdk.Handler):
            def init(self, config: str) -> Registration:
                return Registration()

            def validate(self, req: wink_sdk.Request) -> Optional[Verdict]:
                if req.object is not None and req.object.label("team") is None:
                    return Verdict.deny(f"{req.object.key} needs a team label", code=422)
                return Verdict.allow("checked")

            def mutate(self, req: wink_sdk.Request) -> Mutation:
                return Mutation(Verdict(audit_annotations={"by": req.user_info.username}), {"metadata": {"labels": {"team": "x"}}})

            def reconcile(self, key: str) -> Optional[Action]:
                if key == "bad":
                    raise RuntimeError("cannot reach it")
                if key == "wrong":
                    return "done"  # type: ignore[return-value]
                answers = {"later": Action.requeue_after(timedelta(seconds=1.5)), "again": Action.requeue()}
                return answers.get(key, Action.done() if key == "done" else None)

            def map_to_keys(self, obj: Object) -> List[str]:
                return [f"{obj.watch}:{obj.key}"]

        made = exports(Guard)
        adm, rec = made["Admission"](), made["Reconciler"]()
        denied = adm.validate(request(FakeHandle({})))
        self.assertEqual(denied, wit_admission.Verdict(False, 422, None, "default/web needs a team label", [], []))
        self.assertEqual(adm.validate(request(FakeHandle({"team": "a"}))).warnings, ["checked"])
        mutation = adm.mutate(request(None))
        self.assertEqual(mutation.object, '{"metadata":{"labels":{"team":"x"}}}')
        self.assertEqual(mutation.verdict.audit_annotations, [("by", "alice")])
        self.assertEqual(rec.reconcile("later"), wit_reconciler.Action_RequeueAfter(1500))
        self.assertEqual(rec.reconcile("now"), wit_reconciler.Action_Done())
        self.assertEqual(rec.reconcile("done"), wit_reconciler.Action_Done())
        self.assertEqual(rec.reconcile("again"), wit_reconciler.Action_Requeue())
        with self.assertRaises(Err) as e:
            rec.reconcile("bad")
        self.assertEqual(e.exception.value, "cannot reach it")
        with self.assertRaises(Err) as e:
            rec.reconcile("wrong")
        self.assertEqual(e.exception.value, "reconcile answered 'done': not an Action or None")
        self.assertEqual(Action.requeue_after(0.25), Action.requeue_after(timedelta(milliseconds=250)))
        self.assertNotEqual(Action.requeue(), Action.done())
        self.assertEqual(repr(Action.requeue_after(1.5)), "Action.requeue_after(1.5)")
        self.assertEqual(rec.map_to_keys(2, FakeHandle({})), ["2:default/web"])

    def test_the_queue_takes_delays_in_seconds_and_refusals_are_queue_errors(self) -> None:
        added: List[Tuple[str, int]] = []
        self.fake(wit_queue, "add_after", lambda k, ms: added.append((k, ms)))
        queue.add_after("default/a", 0.25)
        queue.add_after("default/b", timedelta(minutes=1))
        self.assertEqual(added, [("default/a", 250), ("default/b", 60_000)])

        def refuse(key: str) -> None:
            raise Err("no queue registered")

        self.fake(wit_queue, "add", refuse)
        with self.assertRaises(wink_sdk.QueueError) as e:
            queue.add("default/a")
        self.assertEqual(str(e.exception), "no queue registered")


if __name__ == "__main__":
    unittest.main()
