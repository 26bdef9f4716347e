//! The log filter and format of the `dueq` binary.

use std::io::IsTerminal;

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
            .init(),
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_ansi(false)
            .init(),
    }
}

#[cfg(test)]
mod tests {
    use super::directives;

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
