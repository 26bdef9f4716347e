//! One error type for every call: the gRPC status code and message the service
//! answered (or that validation chose before sending), with [`Error::kind`] to match
//! on.

use std::fmt;

use tonic::Code;

/// What went wrong, by gRPC status code: the classes every dueq client shares
/// (`InvalidArgument`, `NotFound`, `PermissionDenied`, ...). The names are the gRPC
/// codes in CamelCase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// CANCELLED (1): the call was cancelled, usually by the caller.
    Cancelled,
    /// UNKNOWN (2).
    Unknown,
    /// INVALID_ARGUMENT (3): bad input; the message names the field. Also what
    /// this library's own checks raise before anything is sent.
    InvalidArgument,
    /// DEADLINE_EXCEEDED (4): the call's timeout ran out.
    DeadlineExceeded,
    /// NOT_FOUND (5).
    NotFound,
    /// ALREADY_EXISTS (6).
    AlreadyExists,
    /// PERMISSION_DENIED (7): the token's role may not do this.
    PermissionDenied,
    /// RESOURCE_EXHAUSTED (8): a limit (payload size, a quota, a full Redis).
    ResourceExhausted,
    /// FAILED_PRECONDITION (9): the record is in the wrong state; the message says
    /// how to fix it.
    FailedPrecondition,
    /// ABORTED (10): a lease was lost, or a compare-and-set guard moved.
    Aborted,
    /// OUT_OF_RANGE (11).
    OutOfRange,
    /// UNIMPLEMENTED (12).
    Unimplemented,
    /// INTERNAL (13).
    Internal,
    /// UNAVAILABLE (14): the service (or its Redis) cannot be reached; retry.
    Unavailable,
    /// DATA_LOSS (15).
    DataLoss,
    /// UNAUTHENTICATED (16): no token, or an unknown one.
    Unauthenticated,
}

impl ErrorKind {
    /// The kind of a gRPC code; `None` for OK.
    pub fn from_code(code: Code) -> Option<ErrorKind> {
        use ErrorKind::*;
        Some(match code {
            Code::Ok => return None,
            Code::Cancelled => Cancelled,
            Code::Unknown => Unknown,
            Code::InvalidArgument => InvalidArgument,
            Code::DeadlineExceeded => DeadlineExceeded,
            Code::NotFound => NotFound,
            Code::AlreadyExists => AlreadyExists,
            Code::PermissionDenied => PermissionDenied,
            Code::ResourceExhausted => ResourceExhausted,
            Code::FailedPrecondition => FailedPrecondition,
            Code::Aborted => Aborted,
            Code::OutOfRange => OutOfRange,
            Code::Unimplemented => Unimplemented,
            Code::Internal => Internal,
            Code::Unavailable => Unavailable,
            Code::DataLoss => DataLoss,
            Code::Unauthenticated => Unauthenticated,
        })
    }

    /// The gRPC code of this kind.
    pub fn code(self) -> Code {
        use ErrorKind::*;
        match self {
            Cancelled => Code::Cancelled,
            Unknown => Code::Unknown,
            InvalidArgument => Code::InvalidArgument,
            DeadlineExceeded => Code::DeadlineExceeded,
            NotFound => Code::NotFound,
            AlreadyExists => Code::AlreadyExists,
            PermissionDenied => Code::PermissionDenied,
            ResourceExhausted => Code::ResourceExhausted,
            FailedPrecondition => Code::FailedPrecondition,
            Aborted => Code::Aborted,
            OutOfRange => Code::OutOfRange,
            Unimplemented => Code::Unimplemented,
            Internal => Code::Internal,
            Unavailable => Code::Unavailable,
            DataLoss => Code::DataLoss,
            Unauthenticated => Code::Unauthenticated,
        }
    }

    /// The name shared by every dueq client: the gRPC code in CamelCase
    /// (`"PermissionDenied"`).
    pub fn name(self) -> &'static str {
        use ErrorKind::*;
        match self {
            Cancelled => "Cancelled",
            Unknown => "Unknown",
            InvalidArgument => "InvalidArgument",
            DeadlineExceeded => "DeadlineExceeded",
            NotFound => "NotFound",
            AlreadyExists => "AlreadyExists",
            PermissionDenied => "PermissionDenied",
            ResourceExhausted => "ResourceExhausted",
            FailedPrecondition => "FailedPrecondition",
            Aborted => "Aborted",
            OutOfRange => "OutOfRange",
            Unimplemented => "Unimplemented",
            Internal => "Internal",
            Unavailable => "Unavailable",
            DataLoss => "DataLoss",
            Unauthenticated => "Unauthenticated",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An error of a dueq call: the gRPC status the service answered, or one this
/// library chose before sending (`InvalidArgument` for bad input, naming the field;
/// `Unavailable` when the service cannot be reached).
///
/// ```no_run
/// # async fn f(client: dueq_client::Client) {
/// use dueq_client::ErrorKind;
/// match client.get_job("j-1").await {
///     Ok(job) => println!("{:?}", job.state()),
///     Err(e) if e.kind() == ErrorKind::NotFound => println!("no such job"),
///     Err(e) => eprintln!("{e}"), // e.g. "PermissionDenied: ..."
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// Bad input, found before anything was sent: `field` names what was wrong
    /// (`"queue: must not be empty"`).
    pub fn invalid(field: &str, problem: impl fmt::Display) -> Error {
        Error::new(ErrorKind::InvalidArgument, format!("{field}: {problem}"))
    }

    /// The error of a gRPC status code and message; `code` 0 (OK) becomes Unknown.
    pub fn from_code(code: i32, message: impl Into<String>) -> Error {
        let kind = ErrorKind::from_code(Code::from(code)).unwrap_or(ErrorKind::Unknown);
        Error::new(kind, message)
    }

    /// What went wrong, by gRPC code.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The gRPC status code.
    pub fn code(&self) -> Code {
        self.kind.code()
    }

    /// The status message (for INVALID_ARGUMENT it names the field).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether calling again may succeed: UNAVAILABLE (the service or its Redis is
    /// down or restarting) and DEADLINE_EXCEEDED.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Unavailable | ErrorKind::DeadlineExceeded
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Error {}

impl From<tonic::Status> for Error {
    fn from(status: tonic::Status) -> Error {
        let mut kind = ErrorKind::from_code(status.code()).unwrap_or(ErrorKind::Unknown);
        // A status with a source was made here, from a transport failure (a
        // connection closed during or after the TLS handshake comes as CANCELLED
        // "operation was canceled"): the service was not reached, UNAVAILABLE as
        // gRPC defines it. A status the service sent has no source.
        let transport = std::error::Error::source(&status).is_some();
        if transport && matches!(kind, ErrorKind::Cancelled | ErrorKind::Unknown) {
            kind = ErrorKind::Unavailable;
        }
        let mut message = status.message().to_owned();
        // A transport failure ("transport error") says why only in its source chain.
        let mut cause = std::error::Error::source(&status);
        while let Some(inner) = cause {
            let text = inner.to_string();
            if !message.contains(&text) {
                message = format!("{message}: {text}");
            }
            cause = inner.source();
        }
        Error::new(kind, message)
    }
}

/// A `Result` whose error is the client's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_maps_to_its_kind_and_back() {
        for n in 1..=16 {
            let code = Code::from(n);
            let kind = ErrorKind::from_code(code).expect("not OK");
            assert_eq!(kind.code(), code);
            assert_eq!(kind.code() as i32, n);
        }
        assert_eq!(ErrorKind::from_code(Code::Ok), None);
    }

    #[test]
    fn a_status_keeps_its_code_and_message() {
        let e = Error::from(tonic::Status::permission_denied(
            "role reader may not enqueue",
        ));
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
        assert_eq!(e.code() as i32, 7);
        assert_eq!(e.message(), "role reader may not enqueue");
        assert_eq!(
            e.to_string(),
            "PermissionDenied: role reader may not enqueue"
        );
    }

    #[test]
    fn a_transport_failure_is_unavailable_and_a_service_answer_keeps_its_code() {
        let closed = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection closed");
        let local = tonic::Status::from_error(Box::new(closed));
        let e = Error::from(local);
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
        assert!(e.message().contains("connection closed"), "{e}");
        let sent = Error::from(tonic::Status::cancelled("cancelled by the service"));
        assert_eq!(sent.kind(), ErrorKind::Cancelled);
    }

    #[test]
    fn names_are_the_codes_in_camel_case() {
        assert_eq!(ErrorKind::Unauthenticated.name(), "Unauthenticated");
        assert_eq!(ErrorKind::FailedPrecondition.name(), "FailedPrecondition");
        assert_eq!(Error::from_code(14, "x").kind(), ErrorKind::Unavailable);
        assert_eq!(Error::from_code(0, "x").kind(), ErrorKind::Unknown);
    }

    #[test]
    fn validation_names_the_field() {
        let e = Error::invalid("queue", "must not be empty");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(e.message(), "queue: must not be empty");
    }
}
