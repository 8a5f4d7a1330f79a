//! `docent licenses`: the license notices of the third-party crates built into this binary.
//!
//! The text is `licenses/docent/THIRD-PARTY-LICENSES.txt`, which `tools/licenses/licenses.py`
//! writes from Cargo.lock (every crate the binary links on its release platforms, with the full
//! text of its license files), embedded at build time. The tool's `--check`, run by
//! `scripts/test` (suite `licenses`), fails when Cargo.lock and that file disagree. The CycloneDX
//! SBOM beside it ships next to the binary in the npm platform packages.

/// The notices, as generated (the binary's own crates are MIT OR Apache-2.0).
pub const NOTICES: &str = include_str!("../../../licenses/docent/THIRD-PARTY-LICENSES.txt");

/// `docent licenses` takes no options.
#[derive(Debug, clap::Args)]
pub struct LicensesArgs {}

/// Print the notices to stdout.
pub fn run(_: LicensesArgs) -> anyhow::Result<()> {
    out!("{NOTICES}");
    Ok(())
}
