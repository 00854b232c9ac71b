"""The language benchmark's Python plugin. Config ``{"mode": "meta"}``:
each event reads the object's name and one label (the metadata, no JSON);
``{"mode": "parse"}``: each event parses the whole object (``to_dict``).
It counts what it saw and logs nothing per event."""

import wink_sdk
from wink_sdk import Object, Registration, Watch


class Bench(wink_sdk.Handler):
    """Touches each object as its mode says."""

    mode = "meta"
    seen = 0

    def init(self, config: str) -> Registration:
        self.mode = wink_sdk.config(config, {"mode": "meta"})["mode"]
        return Registration(watches=[Watch("v1", "Pod")])

    def touch(self, obj: Object) -> None:
        """Read what the mode asks for."""
        if self.mode == "none":
            return
        if self.mode == "parse":
            self.seen += len(obj.to_dict()["spec"]["containers"])
        else:
            self.seen += len(obj.name) + (obj.label("app") is not None)

    def on_add(self, obj: Object, in_initial_list: bool) -> None:
        self.touch(obj)

    def on_update(self, old: Object, new: Object) -> None:
        self.touch(new)


_Sdk = wink_sdk.export(Bench)
_bare = False


class Handler(_Sdk):  # type: ignore[misc, valid-type]
    """Mode ``bare`` returns from the export itself, before the SDK makes
    objects: the floor of a call into the runtime. Mode ``none`` goes
    through the SDK and reads nothing."""

    def init(self, config: str):  # type: ignore[no-untyped-def]
        global _bare
        _bare = '"bare"' in config
        return super().init(config)

    def on_update(self, watch, key, old, new) -> None:  # type: ignore[no-untyped-def]
        if not _bare:
            super().on_update(watch, key, old, new)
