//! Flow control (issue 32): a job's flow keys, a queue's policy and one key's own
//! limits, each with the one text the scripts store it as (lua/lib/flow.lua reads
//! them; the library tests below pin the shapes).

/// Longest fairness, concurrency or rate key, in bytes.
pub(crate) const MAX_FLOW_KEY_LEN: usize = 128;
/// Largest `limit` or `burst` of a rate, and largest job cost.
pub(crate) const MAX_RATE: u32 = 1_000_000;
/// Longest rate period, ms (one day).
pub(crate) const MAX_RATE_PERIOD_MS: i64 = 86_400_000;
/// Largest fairness weight.
pub(crate) const MAX_WEIGHT: u32 = 10_000;
/// Most entries of a policy's `weights`.
pub(crate) const MAX_WEIGHTS: usize = 1_000;
/// Longest ThrottleKey, ms (one day).
pub(crate) const MAX_THROTTLE_MS: i64 = 86_400_000;

/// A job's flow keys and cost; all empty and cost 1 for a job without flow control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowKeys {
    pub(crate) fairness: String,
    pub(crate) concurrency: String,
    pub(crate) rate: String,
    /// Units one start counts against rate limits (0: none).
    pub(crate) cost: u32,
}

impl Default for FlowKeys {
    fn default() -> Self {
        FlowKeys {
            fairness: String::new(),
            concurrency: String::new(),
            rate: String::new(),
            cost: 1,
        }
    }
}

impl FlowKeys {
    fn keyless(&self) -> bool {
        self.fairness.is_empty() && self.concurrency.is_empty() && self.rate.is_empty()
    }

    /// The lane (lib/flow.lua `flow.lane`): the three keys, the first two prefixed
    /// by their length, so no two combinations compose the same text.
    pub(crate) fn lane(&self) -> String {
        format!(
            "{}:{}{}:{}{}",
            self.fairness.len(),
            self.fairness,
            self.concurrency.len(),
            self.concurrency,
            self.rate
        )
    }

    /// enqueue_jobs.lua's `flow` value: "" for no keys and cost 1, else
    /// "<cost>:<lane>" (cost "" for 1, lane "" for no keys).
    pub(crate) fn record_text(&self) -> String {
        if self.keyless() && self.cost == 1 {
            return String::new();
        }
        let cost = if self.cost == 1 {
            String::new()
        } else {
            self.cost.to_string()
        };
        let lane = if self.keyless() {
            String::new()
        } else {
            self.lane()
        };
        format!("{cost}:{lane}")
    }
}

/// A rate: at most `limit` starts per `period_ms`, plus `burst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rate {
    pub(crate) limit: u32,
    pub(crate) period_ms: i64,
    pub(crate) burst: u32,
}

/// How a queue takes turns between lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Fairness {
    #[default]
    Fifo,
    RoundRobin,
    Weighted,
}

impl Fairness {
    fn letter(self) -> &'static str {
        match self {
            Fairness::Fifo => "f",
            Fairness::RoundRobin => "r",
            Fairness::Weighted => "w",
        }
    }

    fn from_letter(text: &str) -> Self {
        match text {
            "r" => Fairness::RoundRobin,
            "w" => Fairness::Weighted,
            _ => Fairness::Fifo,
        }
    }
}

/// A queue's flow policy (validated). `weights` are stored apart (the queue's
/// weights hash, lib/flow.lua `g`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct QueuePolicy {
    pub(crate) max_running: u32,
    pub(crate) rate: Option<Rate>,
    pub(crate) per_key_max_running: u32,
    pub(crate) per_key_rate: Option<Rate>,
    pub(crate) fairness: Fairness,
    pub(crate) weights: std::collections::BTreeMap<String, u32>,
    /// 1 when unset.
    pub(crate) default_weight: u32,
}

fn rate_parts(rate: Option<Rate>) -> [String; 3] {
    match rate {
        Some(r) => [
            r.limit.to_string(),
            r.period_ms.to_string(),
            r.burst.to_string(),
        ],
        None => [String::new(), String::new(), String::new()],
    }
}

fn rate_of(limit: &str, period: &str, burst: &str) -> Option<Rate> {
    let limit: u32 = limit.parse().ok().filter(|&l| l > 0)?;
    Some(Rate {
        limit,
        period_ms: period.parse().ok()?,
        burst: burst.parse().unwrap_or(0),
    })
}

impl QueuePolicy {
    /// Whether it limits nothing and is FIFO: no policy at all.
    pub(crate) fn is_empty(&self) -> bool {
        *self
            == QueuePolicy {
                default_weight: self.default_weight,
                ..QueuePolicy::default()
            }
    }

    /// The queue state's `flow` field (lib/flow.lua `flow.parse`):
    /// "mr,rl,rp,rb,kmr,krl,krp,krb,fairness,dw"; "" for no policy.
    pub(crate) fn record_text(&self) -> String {
        if self.is_empty() {
            return String::new();
        }
        let [rl, rp, rb] = rate_parts(self.rate);
        let [krl, krp, krb] = rate_parts(self.per_key_rate);
        format!(
            "{},{rl},{rp},{rb},{},{krl},{krp},{krb},{},{}",
            self.max_running,
            self.per_key_max_running,
            self.fairness.letter(),
            self.default_weight.max(1)
        )
    }

    /// The policy a `flow` field holds (weights left empty: they are stored apart).
    pub(crate) fn parse(text: &str) -> Self {
        let v: Vec<&str> = text.split(',').collect();
        let at = |i: usize| v.get(i).copied().unwrap_or("");
        QueuePolicy {
            max_running: at(0).parse().unwrap_or(0),
            rate: rate_of(at(1), at(2), at(3)),
            per_key_max_running: at(4).parse().unwrap_or(0),
            per_key_rate: rate_of(at(5), at(6), at(7)),
            fairness: Fairness::from_letter(at(8)),
            weights: Default::default(),
            default_weight: at(9).parse().unwrap_or(1),
        }
    }
}

/// One key's own limits (SetKeyLimit): each part unset falls back to the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct KeyLimit {
    pub(crate) max_running: Option<u32>,
    pub(crate) rate: Option<Rate>,
}

impl KeyLimit {
    /// The overrides hash's value (lib/flow.lua `flow.limits`):
    /// "max_running,limit,period_ms,burst", '' for an unset part.
    pub(crate) fn record_text(&self) -> String {
        let mr = self.max_running.map(|m| m.to_string()).unwrap_or_default();
        let [rl, rp, rb] = rate_parts(self.rate);
        format!("{mr},{rl},{rp},{rb}")
    }

    pub(crate) fn parse(text: &str) -> Self {
        let v: Vec<&str> = text.split(',').collect();
        let at = |i: usize| v.get(i).copied().unwrap_or("");
        KeyLimit {
            max_running: at(0).parse().ok(),
            rate: rate_of(at(1), at(2), at(3)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_without_keys_or_cost_sends_nothing() {
        assert_eq!(FlowKeys::default().record_text(), "");
        let cost_only = FlowKeys {
            cost: 5,
            ..FlowKeys::default()
        };
        assert_eq!(cost_only.record_text(), "5:");
    }

    #[test]
    fn lanes_are_unambiguous() {
        let a = FlowKeys {
            fairness: "a:1".into(),
            concurrency: "b".into(),
            ..FlowKeys::default()
        };
        let b = FlowKeys {
            fairness: "a".into(),
            concurrency: "1b".into(),
            ..FlowKeys::default()
        };
        assert_ne!(a.lane(), b.lane());
        assert_eq!(a.record_text(), ":3:a:11:b");
    }

    #[test]
    fn a_policy_round_trips_its_text() {
        let policy = QueuePolicy {
            max_running: 10,
            rate: Some(Rate {
                limit: 100,
                period_ms: 1000,
                burst: 5,
            }),
            per_key_max_running: 2,
            per_key_rate: None,
            fairness: Fairness::Weighted,
            weights: Default::default(),
            default_weight: 3,
        };
        assert_eq!(policy.record_text(), "10,100,1000,5,2,,,,w,3");
        assert_eq!(QueuePolicy::parse(&policy.record_text()), policy);
        assert_eq!(QueuePolicy::default().record_text(), "");
        let limit = KeyLimit {
            max_running: Some(1),
            rate: None,
        };
        assert_eq!(KeyLimit::parse(&limit.record_text()), limit);
    }
}
