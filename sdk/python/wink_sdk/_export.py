"""The world's exports (``handler``, ``admission``, ``reconciler``) as
componentize-py binds them: one class per interface, looked up in the app
module by name (``Handler``, ``Admission``, ``Reconciler``). :func:`exports`
makes the three around one plugin class; ``wink_sdk.export`` assigns them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Type

from componentize_py_types import Err
from wit_world import exports as _exports
from wit_world.exports import admission as _admission
from wit_world.exports import handler as _handler
from wit_world.exports import reconciler as _reconciler
from wit_world.imports import delivery as _delivery
from wit_world.imports import types as _types

from .admission import Request, _mutation, _verdict
from .object import Object
from .queue import _action

if TYPE_CHECKING:
    from . import Handler as _Plugin


def on_batch(h: "_Plugin", events: List[_handler.Event], objects: List[_types.Object]) -> None:
    """``handler.on-batch``: for each event ``i``, ``delivery.begin(i)``, then
    the plugin's ``on_add``/``on_update``/``on_delete`` with the event's
    objects (in event order; an update takes two: old, then new)."""
    need = sum(2 if isinstance(e, _handler.Event_Update) else 1 for e in events)
    if need != len(objects):
        raise ValueError(f"on_batch: {len(events)} events need {need} objects, got {len(objects)}")
    j = 0
    for i, event in enumerate(events):
        _delivery.begin(i)
        v = event.value
        if isinstance(event, _handler.Event_Add):
            h.on_add(Object(objects[j], v.key, watch=v.watch), v.in_initial_list)
            j += 1
        elif isinstance(event, _handler.Event_Update):
            old = Object(objects[j], v.key, watch=v.watch)
            h.on_update(old, Object(objects[j + 1], v.key, watch=v.watch))
            j += 2
        else:
            h.on_delete(Object(objects[j], v.key, watch=v.watch), v.final_state_unknown)
            j += 1


def exports(plugin: Type["_Plugin"]) -> Dict[str, type]:
    """The classes componentize-py exports, by name, running ``plugin``
    (instantiated once per instance, with no arguments: at ``init``, or at
    the first admission or reconciler call of an instance that had none)."""

    state: Dict[str, Any] = {}

    def instance() -> "_Plugin":
        h = state.get("h")
        if h is None:
            h = state["h"] = plugin()
        return h

    class Handler(_exports.Handler):
        """Adapter from the WIT ``handler`` interface to the plugin."""

        def init(self, config: str) -> _types.Registration:
            try:
                h = plugin()
                registration = h.init(config)
            except Exception as e:  # noqa: BLE001 - any error refuses the plugin
                raise Err(str(e) or type(e).__name__) from None
            state["h"] = h
            return registration._to_wit()

        def on_add(self, watch: int, key: str, obj: _types.Object, in_initial_list: bool) -> None:
            state["h"].on_add(Object(obj, key, watch=watch), in_initial_list)

        def on_update(self, watch: int, key: str, old: _types.Object, new: _types.Object) -> None:
            state["h"].on_update(Object(old, key, watch=watch), Object(new, key, watch=watch))

        def on_delete(self, watch: int, key: str, obj: _types.Object, final_state_unknown: bool) -> None:
            state["h"].on_delete(Object(obj, key, watch=watch), final_state_unknown)

        def on_synced(self) -> None:
            state["h"].on_synced()

        def on_batch(self, events: List[_handler.Event], objects: List[_types.Object]) -> None:
            on_batch(state["h"], events, objects)

    class Admission(_exports.Admission):
        """Adapter from the WIT ``admission`` interface: allowed unless the
        plugin's ``validate``/``mutate`` say otherwise."""

        def validate(self, request: _admission.Request) -> _admission.Verdict:
            return _verdict(instance().validate(Request(request)))

        def mutate(self, request: _admission.Request) -> _admission.Mutation:
            return _mutation(instance().mutate(Request(request)))

    class Reconciler(_exports.Reconciler):
        """Adapter from the WIT ``reconciler`` interface: done, and no keys,
        unless the plugin's ``reconcile``/``map_to_keys`` say otherwise."""

        def reconcile(self, key: str) -> _reconciler.Action:
            try:
                return _action(instance().reconcile(key))
            except Exception as e:  # noqa: BLE001 - an error requeues the key
                raise Err(str(e) or type(e).__name__) from None

        def map_to_keys(self, watch: int, obj: _types.Object) -> List[str]:
            return list(instance().map_to_keys(Object(obj, None, watch=watch)))

    return {"Handler": Handler, "Admission": Admission, "Reconciler": Reconciler}
