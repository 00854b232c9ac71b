"""pod-logger in Python: logs every pod event, like the Rust example.

Config (``pod-logger.json`` beside the component, optional):
``{"tag": "second"}`` logs ``OnAdd:second <name>``; ``{"namespace": "default"}``
narrows the watch; ``{"tag": "t", "instance_id": true}`` logs
``OnAdd:t#<random id> <name>``, so tests can tell two instances apart.
"""

import logging
import os

import wink_sdk
from wink_sdk import Object, Registration, Watch

log = logging.getLogger("pod-logger")


class PodLogger(wink_sdk.Handler):
    """Logs ``OnAdd``/``OnUpdate``/``OnDelete`` with each pod's name."""

    prefix = " "

    def init(self, config: str) -> Registration:
        cfg = wink_sdk.config(config)
        tag = cfg.get("tag")
        if isinstance(tag, str) and cfg.get("instance_id") is True:
            # os.urandom at run time: a module-level random seed would be
            # frozen into the component when it is built.
            self.prefix = f"{tag}#{int.from_bytes(os.urandom(4), 'little')} "
        elif isinstance(tag, str):
            self.prefix = f"{tag} "
        namespace = cfg.get("namespace")
        return Registration(watches=[Watch("v1", "Pod", namespace=namespace)])

    def on_add(self, obj: Object, in_initial_list: bool) -> None:
        log.info("OnAdd:%s%s", self.prefix, obj.name)

    def on_update(self, old: Object, new: Object) -> None:
        log.info("OnUpdate:%s%s", self.prefix, new.name)

    def on_delete(self, obj: Object, final_state_unknown: bool) -> None:
        log.info("OnDelete:%s%s", self.prefix, obj.name)


Handler = wink_sdk.export(PodLogger)
