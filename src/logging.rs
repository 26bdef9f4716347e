//! The log filter and format of the `dueq` binary.

use std::{
    fmt,
    io::{self, IsTerminal, Write},
};

use tracing::{
    field::{Field, Visit},
    Level,
};
use tracing_subscriber::{
    field::RecordFields,
    filter::Targets,
    fmt::{format::Writer, FormatFields, MakeWriter},
    layer::SubscriberExt,
    registry::LookupSpan,
    util::SubscriberInitExt,
    EnvFilter, Layer,
};

use crate::{config::LogFormat, telemetry::Traces};

/// Levels a bare `DUEQ_LOG` may name.
const LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];

/// The `EnvFilter` directives for a `DUEQ_LOG` value (`None`: unset).
///
/// A bare level is about dueq: `DUEQ_LOG=debug` means `dueq=debug,warn`, because
/// h2, hyper and tonic at debug log every frame of every call and bury dueq's own
/// lines. Anything else (`dueq=debug,h2=trace`) is an `EnvFilter` directive list
/// and is taken as written.
pub fn directives(value: Option<&str>) -> String {
    let value = value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or("info");
    let level = value.to_ascii_lowercase();
    match level.as_str() {
        "trace" | "debug" | "info" => format!("dueq={level},warn"),
        _ if LEVELS.contains(&level.as_str()) => level,
        _ => value.to_owned(),
    }
}

/// Installs the global subscriber: `DUEQ_LOG` as above, on stdout, with ANSI colours
/// only when stdout is a terminal (escape codes in a file or a log shipper are noise);
/// with `traces`, the spans of dueq at info and above are exported too, whatever
/// `DUEQ_LOG` keeps of them in the log.
pub fn init(format: LogFormat, traces: Option<&Traces>) {
    let wanted = directives(std::env::var("DUEQ_LOG").ok().as_deref());
    let filter = EnvFilter::try_new(&wanted).unwrap_or_else(|error| {
        eprintln!("dueq: DUEQ_LOG={wanted:?} is not a valid filter ({error}); using info");
        EnvFilter::new(directives(None))
    });
    let ansi = std::io::stdout().is_terminal();
    let log = match format {
        LogFormat::Text => text_layer(ansi, move || OneLine {
            inner: std::io::stdout(),
            ansi,
        })
        .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_ansi(false)
            .boxed(),
    };
    let exported = traces.map(|traces| {
        traces
            .layer()
            .with_filter(Targets::new().with_target("dueq", Level::INFO))
    });
    tracing_subscriber::registry()
        .with(log.with_filter(filter))
        .with(exported)
        .init();
}

/// The text format's subscriber, writing to `writer`.
#[cfg(test)]
fn text<W>(filter: EnvFilter, ansi: bool, writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::registry().with(text_layer(ansi, writer).with_filter(filter))
}

/// The text format, writing to `writer`: every field value (a job id, a namespace, a
/// worker id, a message's arguments, a span's fields) goes through [`EscapedFields`],
/// so no value a caller sends reaches the log with a control character in it,
/// whatever the call site.
fn text_layer<S, W>(ansi: bool, writer: W) -> impl Layer<S> + Send + Sync
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .fmt_fields(EscapedFields)
        .with_writer(writer)
}

/// The text format's fields, `name=value` separated by spaces (the message first,
/// bare), as tracing's default writes them, with every control character in a value
/// written as an escape (`\n`, `\r`, `\x1b`, `\u{9b}`): a newline cannot start a
/// forged line (an audit line above all) and an escape code cannot drive the
/// terminal, even with colours on. The formatter's own colour codes are not values.
struct EscapedFields;

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = Escaping {
            ansi: writer.has_ansi_escapes(),
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

/// Writes one event's (or span's) fields for [`EscapedFields`].
struct Escaping<'writer> {
    writer: Writer<'writer>,
    ansi: bool,
    first: bool,
    result: fmt::Result,
}

impl Escaping<'_> {
    fn field(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        let name = field.name();
        // The `log` crate's metadata, which the formatter writes itself, and the span
        // name and kind the trace exporter reads (`layers::trace`).
        if self.result.is_err() || name.starts_with("log.") || name.starts_with("otel.") {
            return;
        }
        let space = if std::mem::take(&mut self.first) {
            ""
        } else {
            " "
        };
        let value = Escaped(value);
        let name = name.strip_prefix("r#").unwrap_or(name);
        self.result = match (name, self.ansi) {
            ("message", _) => write!(self.writer, "{space}{value}"),
            (name, true) => write!(
                self.writer,
                "{space}\x1b[3m{name}\x1b[0m\x1b[2m=\x1b[0m{value}"
            ),
            (name, false) => write!(self.writer, "{space}{name}={value}"),
        };
    }
}

impl Visit for Escaping<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.field(field, format_args!("{value}"));
        } else {
            self.field(field, format_args!("{value:?}"));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.field(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.field(field, format_args!("{value:?}"));
    }
}

/// A value with its control characters escaped.
struct Escaped<'a>(fmt::Arguments<'a>);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::write(&mut EscapeWriter(f), self.0)
    }
}

/// Passes text on with each control character (C0, DEL, C1) but tab, and each
/// Unicode line or paragraph separator, written as an escape.
struct EscapeWriter<'a, 'b>(&'a mut fmt::Formatter<'b>);

impl fmt::Write for EscapeWriter<'_, '_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for c in text.chars() {
            match c {
                '\n' => self.0.write_str("\\n")?,
                '\r' => self.0.write_str("\\r")?,
                '\t' => self.0.write_char(c)?,
                c if u32::from(c) < 0x80 && c.is_control() => {
                    write!(self.0, "\\x{:02x}", u32::from(c))?
                }
                c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                    write!(self.0, "\\u{{{:x}}}", u32::from(c))?
                }
                c => self.0.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// Keeps each event of the text format on one line of its own: control characters
/// inside it (a newline or an escape code in a job id, a worker id, a message) are
/// written as `\n`, `\r` or `\xNN`, so no value a caller sends can forge a log
/// line (an audit line above all) or drive a terminal. The formatter writes an event
/// in one call, ending with its newline, which is kept. With colours on (a
/// terminal), the escape byte the formatter's own colour codes use passes. The JSON
/// format needs none of this: JSON escapes control characters itself.
struct OneLine<W> {
    inner: W,
    ansi: bool,
}

impl<W: Write> OneLine<W> {
    fn escapes(&self, byte: u8) -> bool {
        (byte < 0x20 && byte != b'\t' && !(self.ansi && byte == 0x1b)) || byte == 0x7f
    }
}

impl<W: Write> Write for OneLine<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (body, newline) = match buf.strip_suffix(b"\n") {
            Some(body) => (body, true),
            None => (buf, false),
        };
        if !body.iter().any(|&b| self.escapes(b)) {
            self.inner.write_all(buf)?;
            return Ok(buf.len());
        }
        let mut line = Vec::with_capacity(buf.len() + 16);
        for &byte in body {
            match byte {
                b'\n' => line.extend_from_slice(b"\\n"),
                b'\r' => line.extend_from_slice(b"\\r"),
                _ if self.escapes(byte) => write!(line, "\\x{byte:02x}")?,
                _ => line.push(byte),
            }
        }
        if newline {
            line.push(b'\n');
        }
        self.inner.write_all(&line)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::{
        io::Write,
        sync::{Arc, Mutex},
    };

    use tracing_subscriber::EnvFilter;

    use super::{directives, text, OneLine};

    /// What the text format writes for the events `log` makes, colours on or off.
    fn logged(ansi: bool, log: impl FnOnce()) -> String {
        let out: Arc<Mutex<Vec<u8>>> = Arc::default();
        let sink = out.clone();
        let writer = move || OneLine {
            inner: Sink(sink.clone()),
            ansi,
        };
        let subscriber = text(EnvFilter::new("trace"), ansi, writer);
        tracing::subscriber::with_default(subscriber, log);
        let bytes = out.lock().expect("log buffer").clone();
        String::from_utf8(bytes).expect("utf-8")
    }

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("log buffer").extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Pins issue 29 item 8 with colours on (a terminal), where the escape byte of the
    /// formatter's own colour codes must pass: a caller's value still cannot carry
    /// one, nor a newline, nor a C1 control, in a field, a message or a span.
    #[test]
    fn a_callers_value_is_escaped_in_every_field_with_colours_on_or_off() {
        let forged = "x\n2026-12-05T00:00:00Z  INFO dueq::audit: forged\r\x1b[2J\u{9b}31m";
        for ansi in [true, false] {
            let out = logged(ansi, || {
                let span = tracing::info_span!("rpc", namespace = %forged);
                let _entered = span.enter();
                tracing::info!(job_id = %forged, worker = forged, "enqueued {forged}");
            });
            assert_eq!(out.matches('\n').count(), 1, "one line: {out:?}");
            assert!(
                !out.contains("\x1b[2J") && !out.contains('\u{9b}'),
                "raw: {out:?}"
            );
            let escaped = "x\\n2026-12-05T00:00:00Z  INFO dueq::audit: forged\\r\\x1b[2J\\u{9b}31m";
            assert_eq!(out.matches(escaped).count(), 3, "{out:?}");
            assert!(out.contains("enqueued x\\n"), "{out:?}");
        }
    }

    fn written(ansi: bool, event: &[u8]) -> String {
        let mut writer = OneLine {
            inner: Vec::new(),
            ansi,
        };
        writer.write_all(event).expect("write");
        String::from_utf8(writer.inner).expect("utf-8")
    }

    #[test]
    fn a_value_cannot_break_an_event_onto_a_second_line() {
        let forged =
            b"INFO enqueued job_id=x\n2026-12-05T00:00:00Z INFO dueq::audit: forged\r\x1b[2J\x7f\n";
        assert_eq!(
            written(false, forged),
            "INFO enqueued job_id=x\\n2026-12-05T00:00:00Z INFO dueq::audit: forged\\r\\x1b[2J\\x7f\n"
        );
        // Colour codes pass on a terminal; newlines inside the event still do not.
        assert_eq!(
            written(true, b"\x1b[32mINFO\x1b[0m a\nb\n"),
            "\x1b[32mINFO\x1b[0m a\\nb\n"
        );
        assert_eq!(written(false, b"plain\tline\n"), "plain\tline\n");
    }

    #[test]
    fn a_bare_level_is_about_dueq_and_directives_are_taken_as_written() {
        assert_eq!(directives(None), "dueq=info,warn");
        assert_eq!(directives(Some("")), "dueq=info,warn");
        assert_eq!(directives(Some("debug")), "dueq=debug,warn");
        assert_eq!(directives(Some("TRACE")), "dueq=trace,warn");
        assert_eq!(directives(Some("warn")), "warn");
        assert_eq!(directives(Some("off")), "off");
        assert_eq!(directives(Some("dueq=debug")), "dueq=debug");
        assert_eq!(directives(Some("debug,h2=trace")), "debug,h2=trace");
    }
}
