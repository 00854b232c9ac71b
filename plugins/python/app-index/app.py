"""app-index in Python: pods indexed by their ``app`` label in the host's
indexer; on each event it logs the keys of every pod sharing the object's
``app`` value (``IndexKeys("app", value)``), like the Rust example.
"""

import logging

import wink_sdk
from wink_sdk import CacheError, IndexBy, Object, Registration, Resource, Watch, cache

log = logging.getLogger("app-index")
PODS = Resource("v1", "Pod")


def show(event: str, obj: Object) -> None:
    """Log the keys of the pods sharing ``obj``'s app label."""
    app = obj.label("app")
    if app is None:
        log.info("%s: %s (no app label)", event, obj.key)
        return
    try:
        keys = cache.index_keys(PODS, "app", app)
    except CacheError as e:
        log.info("%s: %s app=%s -> error %s", event, obj.key, app, e)
        return
    log.info("%s: %s app=%s -> [%s]", event, obj.key, app, " ".join(keys))


class AppIndex(wink_sdk.Handler):
    """Shows the index on every event."""

    def init(self, config: str) -> Registration:
        pods = Watch("v1", "Pod", indexes={"app": IndexBy.label("app")})
        return Registration(watches=[pods])

    def on_add(self, obj: Object, in_initial_list: bool) -> None:
        show("add", obj)

    def on_update(self, old: Object, new: Object) -> None:
        show("update", new)

    def on_delete(self, obj: Object, final_state_unknown: bool) -> None:
        show("delete", obj)


Handler = wink_sdk.export(AppIndex)
