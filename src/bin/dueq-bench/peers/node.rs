//! The Node side of the peers: a scratch package with the peer scripts, npm
//! install, and running one script for the one JSON line it prints.

use std::{path::Path, process::Stdio, time::Duration};

use serde_json::Value;
use tokio::process::Command;

use crate::Result;

/// The scripts, as files beside this one so they read (and lint) as JavaScript.
/// @boringnode/queue 0.6 imports `fs/promises.glob`, which Node 20 lacks; the shim
/// hands it a stub (only job autoloading, switched off here, would call it).
const FILES: [(&str, &str); 6] = [
    (
        "package.json",
        "{\"name\":\"dueq-bench-peers\",\"private\":true,\"type\":\"module\"}\n",
    ),
    ("node20-shim.mjs", include_str!("node20-shim.mjs")),
    (
        "node20-shim-hooks.mjs",
        include_str!("node20-shim-hooks.mjs"),
    ),
    (
        "node20-fs-promises.mjs",
        include_str!("node20-fs-promises.mjs"),
    ),
    ("bullmq.mjs", include_str!("bullmq.mjs")),
    ("boringnode.mjs", include_str!("boringnode.mjs")),
];

/// Writes the package into `dir` and installs the peers into it.
pub(crate) async fn install(dir: &Path) -> Result<()> {
    for (name, text) in FILES {
        tokio::fs::write(dir.join(name), text).await?;
    }
    let install = tokio::time::timeout(
        Duration::from_secs(300),
        Command::new("npm")
            .current_dir(dir)
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .args(["bullmq", "@boringnode/queue@0.6.0", "ioredis"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .map_err(|_| "npm install timed out")??;
    if !install.status.success() {
        return Err(format!(
            "npm install failed: {}",
            String::from_utf8_lossy(&install.stderr).trim()
        )
        .into());
    }
    Ok(())
}

/// Runs `script` of the package in `dir` with `envs`; the last JSON line it printed.
pub(crate) async fn run_script(
    dir: &Path,
    script: &str,
    envs: &[(&str, String)],
    timeout: Duration,
) -> Result<Value> {
    let mut cmd = Command::new("node");
    cmd.current_dir(dir)
        .arg("--import")
        .arg("./node20-shim.mjs")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(timeout, cmd.output())
        .await
        .map_err(|_| format!("{script} timed out after {timeout:?}"))??;
    if !out.status.success() {
        return Err(format!(
            "{script} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| format!("{script} printed no JSON"))?;
    Ok(serde_json::from_str(line)?)
}
