//! The console in a real browser: Debian's Chromium driven by playwright-core from
//! tests/browser/ (`node --test`), against the service this test starts.
