//! Field-by-field checks of a cron expression before croner parses it, so an error
//! names the field and its range ("cron field 1 (minute) value 61 is out of range
//! 0-59") instead of croner's "Component error: Number out of bounds.".
//!
//! Only what can be said precisely is checked here: the field count, the aliases and
//! every plain number (a value, a range end, a step). Names (`JAN`, `MON`) and the
//! modifiers (`L`, `W`, `#`) are left to croner.

use super::TimingError;

/// The aliases croner expands (case-insensitive).
const ALIASES: [&str; 6] = [
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@hourly",
];

/// Names and value ranges of the six fields, seconds first.
const FIELDS: [(&str, u32, u32); 6] = [
    ("second", 0, 59),
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
];

/// Longest cron expression, in bytes: far more than any real one needs, and small
/// enough that a schedule message stays within `domain::limits::MAX_RECORD_OVERHEAD`.
pub(crate) const MAX_CRON_LEN: usize = 1024;

/// Checks `expr` (trimmed, non-empty).
pub(super) fn check(expr: &str) -> Result<(), TimingError> {
    if expr.len() > MAX_CRON_LEN {
        return Err(TimingError::CronTooLong { len: expr.len() });
    }
    if expr.starts_with('@') {
        let alias = expr.split_whitespace().next().unwrap_or(expr);
        if ALIASES.iter().any(|a| a.eq_ignore_ascii_case(alias)) && alias.len() == expr.len() {
            return Ok(());
        }
        return Err(TimingError::CronUnknownAlias {
            expr: expr.to_owned(),
        });
    }
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let layout = match fields.len() {
        5 => &FIELDS[1..],
        6 => &FIELDS[..],
        found => return Err(TimingError::CronFieldCount { found }),
    };
    for (index, (field, &(name, min, max))) in fields.iter().zip(layout).enumerate() {
        let at = Field {
            position: index + 1,
            name,
            min,
            max,
        };
        for part in field.split(',') {
            at.check_part(part)?;
        }
    }
    Ok(())
}

struct Field {
    position: usize,
    name: &'static str,
    min: u32,
    max: u32,
}

impl Field {
    /// One comma-separated part: `range[/step]`, the range `*`, `?`, `a` or `a-b`.
    fn check_part(&self, part: &str) -> Result<(), TimingError> {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => (range, Some(step)),
            None => (part, None),
        };
        if let Some(step) = step {
            if number(step) == Some(0) {
                return Err(self.error(format!("step {step} must be at least 1")));
            }
        }
        let (low, high) = range.split_once('-').unwrap_or((range, ""));
        for end in [low, high].into_iter().filter(|e| !e.is_empty()) {
            // `5L` and `5#3` (day of week), `15W` (day of month): the number part.
            let value = end.trim_end_matches(['L', 'W', 'l', 'w']);
            let value = value.split('#').next().unwrap_or(value);
            if let Some(n) = number(value) {
                if !(self.min..=self.max).contains(&n) {
                    return Err(self.error(format!(
                        "value {n} is out of range {}-{}",
                        self.min, self.max
                    )));
                }
            }
        }
        Ok(())
    }

    fn error(&self, problem: String) -> TimingError {
        TimingError::CronField {
            position: self.position,
            name: self.name,
            problem,
        }
    }
}

/// A plain decimal number (no sign); huge ones saturate so they still read out of
/// range.
fn number(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.parse().unwrap_or(u32::MAX))
}
