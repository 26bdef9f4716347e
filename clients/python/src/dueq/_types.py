"""Plain values the client takes and returns, and their conversion to and from the
generated messages (`dueq.v1`)."""

import dataclasses
import datetime
import json

from google.protobuf import duration_pb2, timestamp_pb2

from .errors import InvalidArgument
from .v1 import jobs_pb2

__all__ = ["Backoff", "Enqueued", "Json", "JobSpec", "to_duration", "to_timestamp", "from_timestamp"]

_BACKOFF_KINDS = {"fixed": jobs_pb2.BACKOFF_KIND_FIXED, "exponential": jobs_pb2.BACKOFF_KIND_EXPONENTIAL}
_DEDUP_MODES = {
    "skip": jobs_pb2.DEDUP_MODE_SKIP,
    "replace": jobs_pb2.DEDUP_MODE_REPLACE,
    "extend": jobs_pb2.DEDUP_MODE_EXTEND,
}
#: How long a dedup key holds when `dedup_ttl` is not given: one day.
DEFAULT_DEDUP_TTL = 86400.0


class Json:
    """A value to encode as JSON: return `Json(value)` from a handler to ack with a
    JSON result (a bare value is never encoded behind your back)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def encode(self, field="result"):
        return json_bytes(self.value, field)


def json_bytes(value, field):
    """`value` as compact UTF-8 JSON; `InvalidArgument` naming `field` if it cannot be."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    except (TypeError, ValueError) as err:
        raise InvalidArgument(f"{field}: not JSON-serialisable: {err}") from None


@dataclasses.dataclass(frozen=True)
class Backoff:
    """The wait between a failed attempt and the next: `kind` "fixed" (always
    `base`) or "exponential" (base * 2^(attempt-1), at most `cap`); seconds or
    `timedelta`; `jitter` 0.0-1.0 shortens each wait by up to that fraction."""

    kind: str = "exponential"
    base: float = 1.0
    cap: float = None
    jitter: float = 0.0

    def to_proto(self, field="backoff"):
        kind = _BACKOFF_KINDS.get(self.kind)
        if kind is None:
            raise InvalidArgument(f"{field}.kind: {self.kind!r} is not 'fixed' or 'exponential'")
        msg = jobs_pb2.Backoff(kind=kind, base=to_duration(self.base, f"{field}.base"), jitter=self.jitter)
        if self.cap is not None:
            msg.cap.CopyFrom(to_duration(self.cap, f"{field}.cap"))
        return msg


@dataclasses.dataclass(frozen=True)
class Enqueued:
    """What an enqueue did: the job's id (the existing job's for a duplicate), the
    `outcome` ("created", "duplicate", "replaced", "extended") and the job's `state`
    after the call ("pending", "delayed", ...)."""

    job_id: str
    outcome: str
    state: str

    @property
    def duplicate(self):
        """True when nothing new was stored (a job with this id or dedup key exists)."""
        return self.outcome != "created"

    @classmethod
    def from_proto(cls, msg):
        outcome = jobs_pb2.EnqueueOutcome.Name(msg.outcome).removeprefix("ENQUEUE_OUTCOME_").lower()
        state = jobs_pb2.JobState.Name(msg.state).removeprefix("JOB_STATE_").lower()
        return cls(msg.job_id, outcome, state)


@dataclasses.dataclass
class JobSpec:
    """One job of `enqueue_batch`: the arguments `enqueue` takes, as a value.
    `JobSpec.json(queue, name, value, ...)` encodes a JSON payload."""

    queue: str
    name: str
    payload: bytes = b""
    priority: int = 0
    delay: object = None
    run_at: object = None
    job_id: str = None
    dedup: str = None
    dedup_ttl: object = None
    dedup_mode: str = None
    max_attempts: int = None
    backoff: Backoff = None
    headers: dict = None
    lease: object = None

    @classmethod
    def json(cls, queue, name, value, **options):
        return cls(queue, name, json_bytes(value, "payload"), **options)


def to_duration(value, field):
    """Seconds (int/float) or a `timedelta` as a `Duration`."""
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(f"{field}: must be seconds or a timedelta, got {type(value).__name__}")
    seconds = int(value // 1)
    return duration_pb2.Duration(seconds=seconds, nanos=int(round((value - seconds) * 1e9)))


def to_timestamp(value, field):
    """A `datetime` (naive means UTC) or Unix seconds as a `Timestamp`."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        value = value.timestamp()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(f"{field}: must be a datetime or Unix seconds, got {type(value).__name__}")
    seconds = int(value // 1)
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=int(round((value - seconds) * 1e9)))


def from_timestamp(ts):
    """A `Timestamp` as an aware UTC `datetime` (None when unset)."""
    if ts is None or (ts.seconds == 0 and ts.nanos == 0):
        return None
    return datetime.datetime.fromtimestamp(ts.seconds + ts.nanos / 1e9, datetime.timezone.utc)


def check_name(value, field):
    if not isinstance(value, str):
        raise InvalidArgument(f"{field}: must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidArgument(f"{field}: must not be empty")
    if len(value.encode()) > 256:
        raise InvalidArgument(f"{field}: longer than 256 bytes")


def check_payload(payload, limit, field="payload"):
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise InvalidArgument(
            f"{field}: must be bytes, got {type(payload).__name__} (use enqueue_json for a JSON value)"
        )
    if len(payload) > limit:
        raise InvalidArgument(f"{field}: {len(payload)} bytes is over the limit of {limit} bytes")
    return bytes(payload)


def enqueue_request(spec, namespace, limit, prefix=""):
    """The `EnqueueRequest` of a `JobSpec`, checked; errors name `prefix` + field."""
    check_name(spec.queue, prefix + "queue")
    check_name(spec.name, prefix + "name")
    req = jobs_pb2.EnqueueRequest(
        namespace=namespace,
        queue=spec.queue,
        name=spec.name,
        payload=check_payload(spec.payload, limit, prefix + "payload"),
        priority=spec.priority,
    )
    if spec.delay is not None and spec.run_at is not None:
        raise InvalidArgument(f"{prefix}delay: give delay or run_at, not both")
    if spec.delay is not None:
        req.delay.CopyFrom(to_duration(spec.delay, prefix + "delay"))
    if spec.run_at is not None:
        req.run_at.CopyFrom(to_timestamp(spec.run_at, prefix + "run_at"))
    if spec.job_id is not None:
        check_name(spec.job_id, prefix + "job_id")
        req.job_id = spec.job_id
    _dedup(req, spec, prefix)
    if spec.max_attempts is not None:
        req.max_attempts = spec.max_attempts
    if spec.backoff is not None:
        req.backoff.CopyFrom(spec.backoff.to_proto(prefix + "backoff"))
    if spec.headers:
        for key, value in spec.headers.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidArgument(f"{prefix}headers: keys and values must be strings ({key!r})")
            req.headers[key] = value
    if spec.lease is not None:
        req.lease.CopyFrom(to_duration(spec.lease, prefix + "lease"))
    return req


def _dedup(req, spec, prefix):
    if spec.dedup is None:
        if spec.dedup_ttl is not None or spec.dedup_mode is not None:
            raise InvalidArgument(f"{prefix}dedup: dedup_ttl and dedup_mode need a dedup key")
        return
    check_name(spec.dedup, prefix + "dedup")
    req.dedup_key = spec.dedup
    ttl = DEFAULT_DEDUP_TTL if spec.dedup_ttl is None else spec.dedup_ttl
    req.dedup_ttl.CopyFrom(to_duration(ttl, prefix + "dedup_ttl"))
    if spec.dedup_mode is not None:
        mode = _DEDUP_MODES.get(spec.dedup_mode)
        if mode is None:
            raise InvalidArgument(f"{prefix}dedup_mode: {spec.dedup_mode!r} is not skip, replace or extend")
        req.dedup_mode = mode
