//! The `process_*` metrics every Prometheus client library exports (CPU time,
//! memory, open file descriptors, start time), read from `/proc/self` when scraped.
//! Where there is no `/proc` (not Linux) they are left out, not reported as zero.

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{counter::ConstCounter, gauge::ConstGauge},
};

/// The collector registered with the service's registry.
#[derive(Debug)]
pub(super) struct Process;

/// What one read of `/proc/self` found.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    cpu_seconds: f64,
    resident_bytes: f64,
    virtual_bytes: f64,
    start_time_seconds: f64,
    open_fds: f64,
    max_fds: f64,
}

impl Collector for Process {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(s) = sample() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(s.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            cpu.metric_type(),
        )?)?;
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                s.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                s.virtual_bytes,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                s.start_time_seconds,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                s.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                s.max_fds,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

/// The unit of the times in `/proc/self/stat`: USER_HZ, 100 on every Linux
/// architecture (as Prometheus's own procfs reader assumes).
const TICKS_PER_SECOND: f64 = 100.0;

fn sample() -> Option<Sample> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count();
    parse(
        &read("/proc/self/stat")?,
        &read("/proc/self/status")?,
        &read("/proc/stat")?,
        &read("/proc/self/limits")?,
        open_fds,
    )
}

/// The sample from the texts of `/proc/self/stat`, `/proc/self/status`,
/// `/proc/stat` and `/proc/self/limits`.
fn parse(stat: &str, status: &str, boot: &str, limits: &str, open_fds: usize) -> Option<Sample> {
    // The command name (field 2) is in parentheses and may hold spaces: the fields
    // after it start after the last ')'; field 3 (state) is the first of them.
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
    let boot_time = boot
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse::<f64>()
        .ok()?;
    let max_fds = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))?
        .split_whitespace()
        .nth(3)?
        .parse::<f64>()
        .ok()?;
    let resident_kb = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()?;
    Some(Sample {
        cpu_seconds: (field(14)? + field(15)?) / TICKS_PER_SECOND,
        start_time_seconds: boot_time + field(22)? / TICKS_PER_SECOND,
        virtual_bytes: field(23)?,
        resident_bytes: resident_kb * 1024.0,
        open_fds: open_fds as f64,
        max_fds,
    })
}

#[cfg(test)]
mod tests {
    use super::{parse, sample, Sample};

    #[test]
    fn the_fields_are_read_after_the_command_name() {
        let stat = "4242 (dueq (serve) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    250 150 0 0 20 0 9 0 5000 1048576 300 18446744073709551615";
        let boot = "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n";
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        let status = "Name:\tdueq\nVmSize:\t1024 kB\nVmRSS:\t    1200 kB\n";
        let got = parse(stat, status, boot, limits, 12).expect("parsed");
        assert_eq!(
            got,
            Sample {
                cpu_seconds: 4.0,
                start_time_seconds: 1_700_000_050.0,
                virtual_bytes: 1_048_576.0,
                resident_bytes: 1200.0 * 1024.0,
                open_fds: 12.0,
                max_fds: 1024.0,
            }
        );
        assert_eq!(parse("garbage", status, boot, limits, 1), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_sampled() {
        let s = sample().expect("a sample on Linux");
        assert!(s.resident_bytes > 0.0 && s.open_fds >= 3.0 && s.max_fds >= s.open_fds);
    }
}
