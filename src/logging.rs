//! The log filter and format of the `dueq` binary.

use std::io::{self, IsTerminal, Write};

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

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
/// only when stdout is a terminal (escape codes in a file or a log shipper are noise).
pub fn init(format: LogFormat) {
    let wanted = directives(std::env::var("DUEQ_LOG").ok().as_deref());
    let filter = EnvFilter::try_new(&wanted).unwrap_or_else(|error| {
        eprintln!("dueq: DUEQ_LOG={wanted:?} is not a valid filter ({error}); using info");
        EnvFilter::new(directives(None))
    });
    let ansi = std::io::stdout().is_terminal();
    match format {
        LogFormat::Text => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(ansi)
            .with_writer(move || OneLine {
                inner: std::io::stdout(),
                ansi,
            })
            .init(),
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_ansi(false)
            .init(),
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
    use std::io::Write;

    use super::{directives, OneLine};

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
