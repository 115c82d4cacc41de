//! The `warren` binary: everything happens in the library.

// Compiling a large spec makes hundreds of thousands of small allocations; mimalloc
// makes them (and freeing them) markedly cheaper than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    warren::commands::run()
}
