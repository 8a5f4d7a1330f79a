//! The `docent` binary: see the `docent_cli` library.

fn main() {
    std::process::exit(docent_cli::main());
}
