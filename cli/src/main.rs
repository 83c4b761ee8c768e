//! The `tabwire` binary: runs [`tabwire_cli::run`] with the command line and exits with its
//! code (0 ok, 1 the tool failed, 2 usage or connection error).

fn main() -> std::process::ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = runtime.block_on(tabwire_cli::run(std::env::args_os().skip(1)));
    // Leave at once: nothing of the session needs tearing down beyond what `run` closed, and
    // a runtime shutting down would wait for rmcp's background tasks.
    std::process::ExitCode::from(code)
}
