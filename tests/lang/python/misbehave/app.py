"""A Python plugin that raises: on the add of the pod named by its config's
``trigger`` (default ``bomb``) it raises ``RuntimeError``; the host must
treat it as any crash (restart, then quarantine) and log the message."""

import logging

import wink_sdk
from wink_sdk import Object, Registration, Watch

log = logging.getLogger("misbehave")


class Misbehave(wink_sdk.Handler):
    """Logs every add; raises on the trigger."""

    trigger = "bomb"

    def init(self, config: str) -> Registration:
        self.trigger = wink_sdk.config(config, {"trigger": "bomb"})["trigger"]
        return Registration(watches=[Watch("v1", "Pod")])

    def on_add(self, obj: Object, in_initial_list: bool) -> None:
        if obj.name == self.trigger:
            raise RuntimeError(f"misbehave: raising on {obj.name}")
        log.info("OnAdd: %s", obj.name)


Handler = wink_sdk.export(Misbehave)
