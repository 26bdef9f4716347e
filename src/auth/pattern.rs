//! A namespace pattern of the auth file: an exact name, or a glob where `*` stands
//! for any run of characters (`shop-*`, `*`).

#[derive(Debug, Clone)]
pub(super) struct Pattern(String);

impl Pattern {
    pub(super) fn new(pattern: &str) -> Pattern {
        Pattern(pattern.to_owned())
    }

    /// The pattern `*`: every namespace, and the only one that grants calls over all
    /// of them at once.
    /// The one namespace this pattern names, if it has no wildcard.
    pub(super) fn exact(&self) -> Option<&str> {
        (!self.0.contains('*')).then_some(self.0.as_str())
    }

    pub(super) fn is_all(&self) -> bool {
        self.0 == "*"
    }

    pub(super) fn matches(&self, namespace: &str) -> bool {
        glob(self.0.as_bytes(), namespace.as_bytes())
    }
}

/// `*`-only glob; iterative with one backtrack point, so linear-ish and no recursion.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn exact_prefix_and_all() {
        let m = |p: &str, n: &str| Pattern::new(p).matches(n);
        assert!(m("shop", "shop"));
        assert!(!m("shop", "shop-eu"));
        assert!(!m("shop", "sho"));
        assert!(m("shop-*", "shop-eu"));
        assert!(m("shop-*", "shop-"));
        assert!(!m("shop-*", "shop"));
        assert!(!m("shop-*", "billing"));
        assert!(m("*-eu", "shop-eu"));
        assert!(m("a*b*c", "axxbyyc"));
        assert!(!m("a*b*c", "axxbyy"));
        assert!(m("*", "anything"));
        assert!(Pattern::new("*").is_all());
        assert!(!Pattern::new("shop-*").is_all());
    }
}
