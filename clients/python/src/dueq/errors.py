"""dueq's errors: `DueqError` and one subclass per gRPC status code.

Every failed call raises the subclass named after its gRPC code (`NotFound`,
`PermissionDenied`, `Unavailable`, ...), with the service's message kept. Bad input
found before anything is sent (an empty queue name, a payload over
`max_payload_size`) raises `InvalidArgument` naming the field, as the service would.

`NonRetryable` is not a call's error: a job handler raises it to make its job dead at
once instead of being retried.
"""

import grpc

__all__ = [
    "DueqError",
    "Cancelled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
    "NonRetryable",
    "from_code",
    "from_rpc_error",
]


class DueqError(Exception):
    """A call to dueq failed. `code` is the `grpc.StatusCode`, `code_number` its
    number (e.g. 5 for NOT_FOUND), `message` the service's (or the client's) text."""

    #: The gRPC status code of this class (None for the base class).
    status = None

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        self.code = code or self.status or grpc.StatusCode.UNKNOWN

    @property
    def code_number(self):
        """The numeric gRPC code (google.rpc.Code)."""
        return self.code.value[0]

    def __str__(self):
        return f"{self.code.name}: {self.message}"


def _subclass(name, status, doc):
    return type(name, (DueqError,), {"status": status, "__doc__": doc, "__module__": __name__})


Cancelled = _subclass("Cancelled", grpc.StatusCode.CANCELLED, "The call was cancelled.")
Unknown = _subclass("Unknown", grpc.StatusCode.UNKNOWN, "An error with no better code.")
InvalidArgument = _subclass(
    "InvalidArgument", grpc.StatusCode.INVALID_ARGUMENT, "Bad input; the message names the field."
)
DeadlineExceeded = _subclass(
    "DeadlineExceeded", grpc.StatusCode.DEADLINE_EXCEEDED, "No answer within the timeout."
)
NotFound = _subclass("NotFound", grpc.StatusCode.NOT_FOUND, "No such job, schedule or occurrence.")
AlreadyExists = _subclass("AlreadyExists", grpc.StatusCode.ALREADY_EXISTS, "It exists already.")
PermissionDenied = _subclass(
    "PermissionDenied",
    grpc.StatusCode.PERMISSION_DENIED,
    "The token's principal may not make this call in this namespace.",
)
ResourceExhausted = _subclass(
    "ResourceExhausted",
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    "Too large (a payload over the service's limit) or too many.",
)
FailedPrecondition = _subclass(
    "FailedPrecondition",
    grpc.StatusCode.FAILED_PRECONDITION,
    "Not possible in the record's current state; the message says how to fix it.",
)
Aborted = _subclass(
    "Aborted", grpc.StatusCode.ABORTED, "A stale lease token or an expired lease: nothing changed."
)
OutOfRange = _subclass("OutOfRange", grpc.StatusCode.OUT_OF_RANGE, "Out of range.")
Unimplemented = _subclass(
    "Unimplemented", grpc.StatusCode.UNIMPLEMENTED, "The service does not offer this call."
)
Internal = _subclass("Internal", grpc.StatusCode.INTERNAL, "The service failed.")
Unavailable = _subclass(
    "Unavailable",
    grpc.StatusCode.UNAVAILABLE,
    "The service (or its Redis) cannot be reached, or TLS failed; retry later.",
)
DataLoss = _subclass("DataLoss", grpc.StatusCode.DATA_LOSS, "Data was lost.")
Unauthenticated = _subclass(
    "Unauthenticated", grpc.StatusCode.UNAUTHENTICATED, "No token, or one the service does not know."
)

_BY_CODE = {
    cls.status: cls
    for cls in (
        Cancelled,
        Unknown,
        InvalidArgument,
        DeadlineExceeded,
        NotFound,
        AlreadyExists,
        PermissionDenied,
        ResourceExhausted,
        FailedPrecondition,
        Aborted,
        OutOfRange,
        Unimplemented,
        Internal,
        Unavailable,
        DataLoss,
        Unauthenticated,
    )
}
_BY_NUMBER = {code.value[0]: code for code in grpc.StatusCode}


def from_code(code, message):
    """The error for a gRPC code (a `grpc.StatusCode` or its number) and message."""
    if isinstance(code, int):
        code = _BY_NUMBER.get(code, grpc.StatusCode.UNKNOWN)
    return _BY_CODE.get(code, DueqError)(message, code)


def from_rpc_error(err):
    """The `DueqError` for a `grpc.RpcError` (sync or asyncio), cause kept."""
    try:
        code, message = err.code(), err.details() or ""
    except Exception:  # an RpcError without status (should not happen)
        code, message = grpc.StatusCode.UNKNOWN, str(err)
    return from_code(code, message)


class NonRetryable(Exception):
    """Raised by a job handler: the job fails and is dead at once (not retried),
    with this message recorded in its error history."""
