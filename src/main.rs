//! The `warren` binary: everything happens in the library.

fn main() -> std::process::ExitCode {
    warren::commands::run()
}
