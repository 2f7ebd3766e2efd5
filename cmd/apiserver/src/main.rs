//! `kapi-apiserver`: the kapi binary. Flags in, a serving API server out; SIGINT or SIGTERM
//! drain in-flight requests and exit 0.

mod audit_options;
mod cli;
mod compat_options;
mod feature_gates;
mod goparse;
mod log_file;
mod options;
mod pflag;
mod upstream_flags;

use tracing_subscriber::EnvFilter;

/// glibc's malloc keeps what a burst of requests freed in per-thread arenas (tens of MB after
/// the OpenAPI build, several KB per object created); jemalloc with its background thread gives
/// freed pages back within seconds, idle or not (docs/benchmarks.md, "Memory and restart").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn init_logging(verbosity: u8) {
    let level = match verbosity {
        0..=2 => "info",
        3..=4 => "debug",
        _ => "trace",
    };
    // RUST_LOG, when set, wins; otherwise -v sets kapi's level and keeps dependencies quieter.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!("warn,kapi_server={level},kapi_apiserver={level},kapi_endpoints={level},kapi_registry={level},kapi_resources={level},kapi_storage={level}"))
    });
    use std::io::IsTerminal;
    use tracing_subscriber::fmt::writer::{BoxMakeWriter, MakeWriterExt};
    let (writer, ansi) = match log_file::open() {
        Some(file) => (
            BoxMakeWriter::new(std::io::stderr.and(std::sync::Mutex::new(file))),
            false,
        ),
        None => (
            BoxMakeWriter::new(std::io::stderr),
            std::io::stderr().is_terminal(),
        ),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(writer)
        .init();
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot listen for SIGTERM");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("received SIGINT"),
        _ = term.recv() => tracing::info!("received SIGTERM"),
    }
    // A second signal stops at once, as kube-apiserver does.
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::warn!("received a second signal; exiting without draining");
        std::process::exit(1);
    });
}

fn main() -> std::process::ExitCode {
    // Purging runs on allocation activity otherwise: an idle server would keep what its last
    // burst freed.
    if let Err(e) = tikv_jemalloc_ctl::background_thread::write(true) {
        eprintln!("warning: jemalloc's background thread: {e}");
    }
    // kube-apiserver's flags and errors: `Error: ...` and exit 1 for a bad command line.
    let cli = match cli::parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(stop) => return stop.exit(),
    };
    init_logging(cli.options.verbosity);
    let gates = match cli.feature_gates() {
        Ok(gates) => gates,
        Err(e) => return cli::Stop::Error(e).exit(),
    };
    if let Some(version) = cli.version() {
        println!("{version}");
        return std::process::ExitCode::SUCCESS;
    }
    let config = match cli.validate(gates) {
        Ok(c) => c,
        Err(errors) => {
            let text: String = errors.iter().map(|e| format!("Error: {e}\n")).collect();
            eprint!("{text}");
            log_file::record_refusal(&text);
            return std::process::ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("Error: starting the runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let result = runtime.block_on(kapi_server::run(config, shutdown_signal()));
    // The server has drained and stopped; blocking work still running (an OpenAPI document
    // being built ahead of its first request) has nothing left to serve, so exit without
    // waiting for it (dropping the runtime would).
    runtime.shutdown_background();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("Error: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
