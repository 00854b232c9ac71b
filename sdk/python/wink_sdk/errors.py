"""Exceptions raised by the SDK: typed errors of the host's capabilities.

Every failure the host answers with a value (a WIT ``result`` error) becomes
an exception here, so a plugin handles it with ``try``/``except``:

- :class:`CacheError` (``cache`` queries): :class:`CacheNotPermitted`,
  :class:`UnknownIndex`, :class:`InvalidQuery`;
- :class:`WriteError` (``write`` and ``events``): :class:`AlreadyExists`,
  :class:`Conflict`, :class:`NotFound`, :class:`Invalid`, :class:`Forbidden`,
  :class:`TooManyRequests`, :class:`Timeout`, :class:`InternalError`,
  :class:`OtherStatus` (the server answered with a Status), and
  :class:`NotPermitted`, :class:`InvalidArgument`, :class:`Unavailable`;
- :class:`ReportError` (``report``);
- :class:`QueueError` (``queue``: the plugin registered no queue).

Each has ``kind``, the WIT case name in UpperCamelCase (``"NotPermitted"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type


class WinkError(Exception):
    """Base of every error the host answers with."""

    #: The WIT case name, e.g. ``"NotPermitted"``.
    kind: str = "Error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CacheError(WinkError):
    """A cache query the host refused."""


class CacheNotPermitted(CacheError):
    """The plugin neither watches nor reads this resource."""

    kind = "NotPermitted"


class UnknownIndex(CacheError):
    """The resource has no index of that name."""

    kind = "UnknownIndex"


class InvalidQuery(CacheError):
    """The key, namespace or selector is malformed."""

    kind = "InvalidArgument"


class ReportError(WinkError):
    """Policy results the host refused (an empty rule, too many results)."""

    kind = "Refused"


class QueueError(WinkError):
    """A key the host refused to queue (the plugin registered no queue)."""

    kind = "Refused"


@dataclass(frozen=True)
class StatusCause:
    """One cause of an ``Invalid`` answer (``details.causes[]``)."""

    reason: str
    message: str
    field: str


@dataclass(frozen=True)
class ApiStatus:
    """The API server's ``Status`` answer to a failed request."""

    code: int
    reason: str
    message: str
    causes: List[StatusCause] = field(default_factory=list)
    retry_after_seconds: Optional[int] = None


class WriteError(WinkError):
    """A write or an Event the host refused or the API server failed.

    ``status`` is the server's answer when it gave one, else ``None``.
    """

    def __init__(self, message: str, status: Optional[ApiStatus] = None) -> None:
        super().__init__(message)
        self.status = status

    def __str__(self) -> str:
        if self.status is not None:
            return f"{self.status.code} {self.status.reason}: {self.status.message}"
        return self.message


class AlreadyExists(WriteError):
    """409 AlreadyExists: create of a name in use."""

    kind = "AlreadyExists"


class Conflict(WriteError):
    """409 Conflict: a stale resourceVersion or a failed precondition."""

    kind = "Conflict"


class NotFound(WriteError):
    """404 NotFound."""

    kind = "NotFound"


class Invalid(WriteError):
    """422 Invalid; ``causes`` lists what is wrong."""

    kind = "Invalid"

    @property
    def causes(self) -> List[StatusCause]:
        """``details.causes`` of the Status."""
        return list(self.status.causes) if self.status else []


class Forbidden(WriteError):
    """403 Forbidden (the cluster's RBAC or admission)."""

    kind = "Forbidden"


class TooManyRequests(WriteError):
    """429 TooManyRequests; ``retry_after`` is the server's advice, seconds."""

    kind = "TooManyRequests"

    @property
    def retry_after(self) -> Optional[int]:
        """The server's Retry-After, seconds, when it gave one."""
        return self.status.retry_after_seconds if self.status else None


class Timeout(WriteError):
    """504 or a request timeout."""

    kind = "Timeout"


class InternalError(WriteError):
    """500 InternalError."""

    kind = "InternalError"


class OtherStatus(WriteError):
    """Any other failure status the server answered with."""

    kind = "Other"


class NotPermitted(WriteError):
    """Not declared by the plugin, or not granted by the operator."""

    kind = "NotPermitted"


class InvalidArgument(WriteError):
    """Malformed JSON, an unknown resource, a missing name."""

    kind = "InvalidArgument"


class Unavailable(WriteError):
    """The API server could not be reached or did not answer in time."""

    kind = "Unavailable"


_WRITE_ERRORS: Dict[str, Type[WriteError]] = {
    "WriteError_AlreadyExists": AlreadyExists,
    "WriteError_Conflict": Conflict,
    "WriteError_NotFound": NotFound,
    "WriteError_Invalid": Invalid,
    "WriteError_Forbidden": Forbidden,
    "WriteError_TooManyRequests": TooManyRequests,
    "WriteError_Timeout": Timeout,
    "WriteError_InternalError": InternalError,
    "WriteError_Other": OtherStatus,
    "WriteError_NotPermitted": NotPermitted,
    "WriteError_InvalidArgument": InvalidArgument,
    "WriteError_Unavailable": Unavailable,
}

_CACHE_ERRORS: Dict[str, Type[CacheError]] = {
    "CacheError_NotPermitted": CacheNotPermitted,
    "CacheError_UnknownIndex": UnknownIndex,
    "CacheError_InvalidArgument": InvalidQuery,
}


def write_error(value: Any) -> WriteError:
    """The exception for a WIT ``write-error`` value."""
    cls = _WRITE_ERRORS.get(type(value).__name__, WriteError)
    payload = value.value
    if isinstance(payload, str):
        return cls(payload)
    status = ApiStatus(
        code=payload.code,
        reason=payload.reason,
        message=payload.message,
        causes=[StatusCause(c.reason, c.message, c.field) for c in payload.causes],
        retry_after_seconds=payload.retry_after_seconds,
    )
    return cls(payload.message, status)


def cache_error(value: Any) -> CacheError:
    """The exception for a WIT ``cache-error`` value."""
    cls = _CACHE_ERRORS.get(type(value).__name__, CacheError)
    return cls(value.value)
