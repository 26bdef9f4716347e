use super::{claimed_schedule, field, schedule};
use crate::{
    domain::{Overlap, ScheduleRecord, SCHEDULE_SCHEMA},
    store::{records::Fields, StoreError},
    timing::{CatchUp, CatchUpRule},
};

const SCHEDULE_LUA: &str = include_str!("../../../../lua/lib/schedule.lua");

/// The items of a Lua table constructor's text, split at its top-level commas.
fn table_items(text: &str) -> Vec<&str> {
    let (mut items, mut depth, mut quoted, mut start) = (Vec::new(), 0_i32, false, 0);
    for (i, c) in text.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' | '{' if !quoted => depth += 1,
            ')' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                items.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(text[start..].trim());
    items
}

/// The field names `sched_fields` writes, in order: every other item of the table it
/// returns.
fn lua_field_names() -> Vec<String> {
    let body = SCHEDULE_LUA
        .split_once("local function sched_fields(id, r)\n  return {")
        .and_then(|(_, rest)| rest.split_once("}\nend"))
        .map(|(body, _)| body)
        .unwrap_or_else(|| panic!("schedule.lua has no sched_fields returning a table"));
    table_items(body)
        .into_iter()
        .step_by(2)
        .map(|name| {
            name.strip_prefix('\'')
                .and_then(|n| n.strip_suffix('\''))
                .unwrap_or_else(|| panic!("not a quoted field name: {name}"))
                .to_owned()
        })
        .collect()
}

/// Every field `sched_fields` writes is one the decoder names, in the same order, and
/// the other way round; the marker is the one `sched_reply` writes.
#[test]
fn field_names_are_the_ones_schedule_lua_writes() {
    assert_eq!(
        lua_field_names(),
        field::ALL,
        "sched_fields against field::ALL"
    );
    assert!(SCHEDULE_LUA.contains(&format!("local SCHED_MARKER = '{}'\n", field::MARKER)));
}

/// A marked record as a script writes it, every field sound, with `changes`.
fn marked(changes: &[(&str, Option<&str>)]) -> Fields {
    let marker = SCHEDULE_SCHEMA.to_string();
    let mut values: Vec<(&str, Option<&str>)> = vec![(field::MARKER, Some(&marker))];
    for name in field::ALL {
        let value = match *name {
            "id" => "s",
            "kind" => "every",
            "every_ms" => "60000",
            "tz" => "UTC",
            "job_name" => "j",
            "status" => "active",
            "rev" | "created_ms" | "updated_ms" => "1",
            "next_ms" => "60000",
            "catchup" => "one",
            "overlap" => "allow_all",
            "limit" | "runs" | "catchup_limit" | "sk_catchup" | "sk_window" | "sk_overlap"
            | "max_attempts" | "jitter_ms" => "0",
            _ => "",
        };
        values.push((name, Some(value)));
    }
    let mut f = Fields::new("schedule s");
    for (name, value) in values {
        let value = changes
            .iter()
            .find(|(changed, _)| *changed == name)
            .map_or(value, |(_, v)| *v);
        if let Some(value) = value {
            f.insert(name.to_owned(), value.as_bytes().to_vec());
        }
    }
    f
}

fn decoded(f: &Fields) -> ScheduleRecord {
    schedule(f).unwrap_or_else(|e| panic!("{e}"))
}

fn claimed(f: &Fields) -> ScheduleRecord {
    claimed_schedule(f).unwrap_or_else(|e| panic!("{e}"))
}

fn is_corrupt(result: Result<ScheduleRecord, StoreError>) -> bool {
    matches!(result, Err(StoreError::Corrupt { .. }))
}

/// The marked version requires every field: none is read as a default.
#[test]
fn a_marked_record_lacking_any_field_is_corrupt() {
    let record = decoded(&marked(&[]));
    assert_eq!(record.def.id, "s");
    for name in field::ALL {
        assert!(
            is_corrupt(schedule(&marked(&[(name, None)]))),
            "{name} absent"
        );
    }
}

/// An unmarked copy (the previous version) may lack what issue 17 added: each reads
/// as its default. Schema 2's fields it must have.
#[test]
fn an_unmarked_copy_reads_absent_policies_as_their_defaults() {
    let base = field::ALL.iter().position(|name| *name == field::CATCHUP);
    let (base, added) = field::ALL.split_at(base.unwrap_or_else(|| panic!("no catchup")));
    let mut absent: Vec<(&str, Option<&str>)> = vec![(field::MARKER, None)];
    absent.extend(added.iter().map(|name| (*name, None)));
    assert!(
        is_corrupt(schedule(&marked(&absent))),
        "only a claim reads copies"
    );
    let copy = claimed(&marked(&absent));
    let full = decoded(&marked(&[]));
    assert_eq!(copy, full, "defaults are what a new schedule stores");
    assert_eq!(copy.def.catchup, CatchUpRule::default());
    assert_eq!(copy.def.overlap, Overlap::AllowAll);
    for name in base {
        absent.push((name, None));
        assert!(
            is_corrupt(claimed_schedule(&marked(&absent))),
            "{name} absent"
        );
        absent.pop();
    }
    // A copy keeps the policies it has.
    let all = claimed(&marked(&[(field::MARKER, None), ("catchup", Some("skip"))]));
    assert_eq!(all.def.catchup.policy, CatchUp::Skip);
}

#[test]
fn a_marker_of_another_version_is_corrupt() {
    for marker in ["2", "x"] {
        let f = marked(&[(field::MARKER, Some(marker))]);
        assert!(is_corrupt(schedule(&f)) && is_corrupt(claimed_schedule(&f)));
    }
}
