// Typed errors: one class per gRPC status code, all DueqError, each keeping the
// code and the service's message.

import { status, type ServiceError } from "@grpc/grpc-js";

/** Any error from dueq: a gRPC status (`code`, `details`) turned into a class. */
export class DueqError extends Error {
  /** The gRPC status code number (e.g. 7 for PERMISSION_DENIED). */
  readonly code: number;
  /** The service's message (or the client's, for validation). */
  readonly details: string;
  constructor(code: number, details: string, options?: { cause?: unknown }) {
    super(`${status[code] ?? `code ${code}`}: ${details}`, options);
    this.code = code;
    this.details = details;
    this.name = new.target.name;
  }
}

/** CANCELLED (1): the call was cancelled, usually by the caller. */
export class Cancelled extends DueqError {}
/** UNKNOWN (2). */
export class Unknown extends DueqError {}
/** INVALID_ARGUMENT (3): the request is malformed; the message names the field. */
export class InvalidArgument extends DueqError {}
/** DEADLINE_EXCEEDED (4): no answer within the timeout. */
export class DeadlineExceeded extends DueqError {}
/** NOT_FOUND (5): no such job, schedule or queue. */
export class NotFound extends DueqError {}
/** ALREADY_EXISTS (6). */
export class AlreadyExists extends DueqError {}
/** PERMISSION_DENIED (7): the token's role may not do this. */
export class PermissionDenied extends DueqError {}
/** RESOURCE_EXHAUSTED (8): a limit was hit (payload size, Redis memory, rate). */
export class ResourceExhausted extends DueqError {}
/** FAILED_PRECONDITION (9): the job or schedule is not in a state that allows it. */
export class FailedPrecondition extends DueqError {}
/** ABORTED (10): the lease is gone (expired, or the job moved on). */
export class Aborted extends DueqError {}
/** OUT_OF_RANGE (11). */
export class OutOfRange extends DueqError {}
/** UNIMPLEMENTED (12). */
export class Unimplemented extends DueqError {}
/** INTERNAL (13). */
export class Internal extends DueqError {}
/** UNAVAILABLE (14): the service cannot be reached (retry later). */
export class Unavailable extends DueqError {}
/** DATA_LOSS (15). */
export class DataLoss extends DueqError {}
/** UNAUTHENTICATED (16): no token, or a token the service does not know. */
export class Unauthenticated extends DueqError {}

const CLASSES: Record<number, new (code: number, details: string, options?: { cause?: unknown }) => DueqError> = {
  [status.CANCELLED]: Cancelled,
  [status.UNKNOWN]: Unknown,
  [status.INVALID_ARGUMENT]: InvalidArgument,
  [status.DEADLINE_EXCEEDED]: DeadlineExceeded,
  [status.NOT_FOUND]: NotFound,
  [status.ALREADY_EXISTS]: AlreadyExists,
  [status.PERMISSION_DENIED]: PermissionDenied,
  [status.RESOURCE_EXHAUSTED]: ResourceExhausted,
  [status.FAILED_PRECONDITION]: FailedPrecondition,
  [status.ABORTED]: Aborted,
  [status.OUT_OF_RANGE]: OutOfRange,
  [status.UNIMPLEMENTED]: Unimplemented,
  [status.INTERNAL]: Internal,
  [status.UNAVAILABLE]: Unavailable,
  [status.DATA_LOSS]: DataLoss,
  [status.UNAUTHENTICATED]: Unauthenticated,
};

/** The DueqError subclass for a gRPC status code and message. */
export function errorFor(code: number, details: string, cause?: unknown): DueqError {
  const Class = CLASSES[code] ?? DueqError;
  return new Class(code, details, cause === undefined ? undefined : { cause });
}

/** Turns what a grpc-js call failed with into a DueqError (other errors pass through). */
export function fromGrpc(error: unknown): unknown {
  if (error instanceof DueqError) return error;
  const e = error as Partial<ServiceError>;
  if (e && typeof e.code === "number") return errorFor(e.code, e.details ?? e.message ?? "", error);
  return error;
}

/** An InvalidArgument raised by the client before anything is sent. */
export function invalid(field: string, why: string): InvalidArgument {
  return new InvalidArgument(status.INVALID_ARGUMENT, `${field}: ${why}`);
}

/**
 * Thrown by a job handler: the job is failed as non-retryable, so it is dead at
 * once whatever attempts it has left.
 */
export class NonRetryable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NonRetryable";
  }
}
