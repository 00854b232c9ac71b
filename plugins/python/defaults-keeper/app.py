"""defaults-keeper in Python: every namespace has the ConfigMap
``wink-defaults``, its data from the plugin's config: a reconciler over
namespaces' keys, like the Rust example.

Namespaces feed the queue with their own keys; the ConfigMaps feed it
through ``map_to_keys`` (a deleted ``wink-defaults`` enqueues its
namespace). ``reconcile`` reads the cache and creates what is missing; a
failed create raises, and the host retries the key with backoff, with no
new event needed. With ``recheck_ms`` each namespace is looked at again
that long after its last reconcile (``Action.requeue_after``).

Config: ``{"data": {"owner": "platform"}, "recheck_ms": 60000}`` (default:
no data, no recheck). It declares ``create`` on ConfigMaps; the operator
grants it.
"""

import logging
from datetime import timedelta
from typing import Dict, List, Optional

import wink_sdk
from wink_sdk import (
    Action,
    AlreadyExists,
    Enqueue,
    Object,
    Queue,
    Registration,
    Resource,
    Verb,
    Watch,
    WriteError,
    Writes,
    cache,
    write,
)

log = logging.getLogger("defaults-keeper")

#: The ConfigMap kept in every namespace.
NAME = "wink-defaults"
NAMESPACES = Resource("v1", "Namespace")
CONFIG_MAPS = Resource("v1", "ConfigMap")


class DefaultsKeeper(wink_sdk.Handler):
    """Creates ``wink-defaults`` where it is missing."""

    data: Dict[str, str]
    recheck_ms: int

    def init(self, config: str) -> Registration:
        cfg = wink_sdk.config(config, {"data": {}, "recheck_ms": 0})
        self.data = {str(k): str(v) for k, v in cfg["data"].items()}
        self.recheck_ms = int(cfg["recheck_ms"])
        # ANCHOR: queue
        return Registration(
            name="defaults-keeper",
            queue=Queue(NAMESPACES, base_delay_ms=50, max_delay_ms=30_000),
            watches=[
                Watch("v1", "Namespace", enqueue=Enqueue.own_key()),
                Watch("v1", "ConfigMap", enqueue=Enqueue.mapped()),
            ],
            writes=[Writes(CONFIG_MAPS, [Verb.CREATE])],
        )
        # ANCHOR_END: queue

    def settled(self) -> Optional[Action]:
        """What a reconcile that left things right answers (``None``: done)."""
        if self.recheck_ms == 0:
            return None
        return Action.requeue_after(timedelta(milliseconds=self.recheck_ms))

    # ANCHOR: reconcile
    def map_to_keys(self, obj: Object) -> List[str]:
        """A ``wink-defaults`` ConfigMap concerns its namespace."""
        if obj.name == NAME and obj.namespace is not None:
            return [obj.namespace]
        return []

    def reconcile(self, key: str) -> Optional[Action]:
        namespace = cache.get(NAMESPACES, key)
        if namespace is None:
            return None  # gone: nothing to keep
        if '"deletionTimestamp"' in namespace.json():
            return None  # terminating: nothing may be created
        cm = f"{key}/{NAME}"
        if cache.get(CONFIG_MAPS, cm) is not None:
            log.info("defaults-keeper: %s checked", cm)
            return self.settled()
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": key},
            "data": self.data,
        }
        try:
            written = write.create(CONFIG_MAPS, body)
        except AlreadyExists:
            # Created meanwhile; the cache has not seen it yet.
            log.info("defaults-keeper: %s exists", cm)
        except WriteError as e:
            raise RuntimeError(f"{cm} not created: {e}") from None
        else:
            if written.dry_run:
                log.info("defaults-keeper: would create %s (audit mode: dry run)", cm)
            else:
                log.info("defaults-keeper: %s created", cm)
        return self.settled()
    # ANCHOR_END: reconcile


Handler = wink_sdk.export(DefaultsKeeper)
