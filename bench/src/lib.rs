//! docent-bench: the OpenAI upstream test double ([`double`]) and the proxy load generator
//! ([`loadgen`]). Binaries: `docent-upstream-double`, `docent-loadgen`.

pub mod double;
pub mod loadgen;
