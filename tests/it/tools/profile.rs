//! The profiling tools docs/performance.md quotes, run small: each prints what the
//! page says it prints.

use std::process::Command;

use crate::doc_examples::root;

/// tools/profile/record_write.sh ("Why a lease change writes the whole record"):
/// every variant runs its change in Redis's Lua and prints nanoseconds per change.
/// The tool itself reads each variant's record back after its changes and fails if
/// it is not the changed record with its body intact, so a figure here timed the
/// change it names; the figures are the page's, from a full run.
#[test]
fn record_write_prints_each_layout_variant() {
    let out = Command::new("bash")
        .arg(root().join("tools/profile/record_write.sh"))
        .args(["redis-server", "2000"])
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "record_write.sh failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    for variant in ["getset", "whole", "front", "tail", "tail_claim"] {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(variant))
            .unwrap_or_else(|| panic!("no line for {variant} in:\n{stdout}"));
        let ns: u64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{variant}: no figure in {line:?}"));
        assert!(ns > 0, "{variant}: {line}");
    }
}
