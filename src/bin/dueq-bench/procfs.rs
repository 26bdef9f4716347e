//! What Linux's /proc tells about a process (CPU time, resident memory) and the
//! machine (CPU model, memory); zeros and empty strings where it cannot be read. Read
//! with tokio's file API: the bench measures while it reads, and a blocking read would
//! stall the runtime it measures with.

/// `/proc/<pid>/<name>` (or this process's), if readable.
async fn proc_file(pid: Option<u32>, name: &str) -> Option<String> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/{name}"),
        None => format!("/proc/self/{name}"),
    };
    tokio::fs::read_to_string(path).await.ok()
}

/// CPU seconds (user + system) of a process; `None`: this one. Clock ticks are
/// 100 Hz on Linux.
pub(crate) async fn process_cpu_s(pid: Option<u32>) -> f64 {
    proc_file(pid, "stat")
        .await
        .and_then(|t| {
            // The command name in parentheses may hold spaces: count fields after it.
            let rest = t.rsplit_once(')')?.1.to_owned();
            let f: Vec<&str> = rest.split_whitespace().collect();
            let u = f.get(11)?.parse::<f64>().ok()?;
            let s = f.get(12)?.parse::<f64>().ok()?;
            Some((u + s) / 100.0)
        })
        .unwrap_or(0.0)
}

/// Resident set size of a process in MB; `None`: this one.
pub(crate) async fn process_rss_mb(pid: Option<u32>) -> f64 {
    proc_file(pid, "status")
        .await
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// The value of the first `field: value` line of a /proc file such as
/// /proc/cpuinfo, or "".
pub(crate) async fn machine_field(file: &str, field: &str) -> String {
    tokio::fs::read_to_string(file)
        .await
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_default()
}
