//! The command line, end to end: read as kube-apiserver's pflag reads it ([`crate::pflag`],
//! against every kube-apiserver 1.33 flag in [`crate::upstream_flags`]), then handed to clap in
//! canonical `--name=value` form: [`Options`] for what kapi implements, the table's arguments
//! for `--feature-gates`, `--version` and the flags kapi accepts and ignores.
//!
//! Errors are kube-apiserver's: `Error: <pflag's or cobra's text>` on stderr and exit code 1
//! (clap's own usage errors, exit 2, no longer reach the user); `--help` is clap's.

use crate::options::Options;
use crate::{feature_gates, pflag, upstream_flags};
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use kapi_server::ServerConfig;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::ExitCode;

/// The clap command: `Options` plus the table's arguments; a repeated flag keeps its last
/// value (or, for lists, all of them), as pflag does.
pub fn command() -> clap::Command {
    upstream_flags::add_args(
        Options::command()
            .disable_version_flag(true)
            .args_override_self(true),
    )
}

/// A command line that parsed.
#[derive(Debug)]
pub struct Cli {
    pub options: Options,
    matches: ArgMatches,
}

/// A command line that does not start a server.
#[derive(Debug)]
pub enum Stop {
    /// `--help`: clap's text, exit 0.
    Help(clap::Error),
    /// `Error: <text>`, exit 1.
    Error(String),
}

impl Stop {
    pub fn exit(self) -> ExitCode {
        match self {
            Stop::Help(e) => {
                let _ = e.print();
                ExitCode::SUCCESS
            }
            Stop::Error(e) => {
                let text = format!("Error: {e}\n");
                eprint!("{text}");
                crate::log_file::record_refusal(&text);
                ExitCode::from(1)
            }
        }
    }
}

/// Parses a command line (program name first).
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Cli, Stop> {
    let mut args = args.into_iter();
    let program = args
        .next()
        .and_then(|p| {
            std::path::Path::new(&p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "kapi-apiserver".into());
    let args = args
        .map(|a| {
            a.into_string()
                .map_err(|a| Stop::Error(format!("argument {a:?} is not valid UTF-8")))
        })
        .collect::<Result<Vec<String>, Stop>>()?;
    let mut scanned = pflag::Scanned::default();
    let refused = pflag::scan(&program, &args, &mut scanned);
    for notice in &scanned.notices {
        eprintln!("{notice}");
    }
    refused.map_err(Stop::Error)?;
    let matches = command()
        .try_get_matches_from(std::iter::once(program).chain(scanned.args))
        .map_err(clap_stop)?;
    let options = Options::from_arg_matches(&matches).map_err(clap_stop)?;
    Ok(Cli { options, matches })
}

/// clap's refusal of a value pflag accepted (one kapi keeps in a narrower type, such as
/// `--secure-port=70000`), in pflag's form.
fn clap_stop(e: clap::Error) -> Stop {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return Stop::Help(e);
    }
    let context = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let arg = context(ContextKind::InvalidArg);
    let value = context(ContextKind::InvalidValue);
    if let (Some(arg), Some(value)) = (arg, value) {
        let flag = arg.split([' ', '=']).next().unwrap_or_default().to_string();
        let why = std::error::Error::source(&e)
            .map(|s| s.to_string())
            .unwrap_or_else(|| "not accepted by kapi".into());
        return Stop::Error(format!(
            "invalid argument {} for {} flag: {why}",
            crate::goparse::quote(&value),
            crate::goparse::quote(&flag)
        ));
    }
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    Stop::Error(first.trim_start_matches("error: ").to_string())
}

impl Cli {
    /// The `--feature-gates` given, checked against kube-apiserver 1.33's gates.
    pub fn feature_gates(&self) -> Result<BTreeMap<String, bool>, String> {
        let values: Vec<String> = self
            .matches
            .get_many::<String>("feature-gates")
            .map(|v| v.cloned().collect())
            .unwrap_or_default();
        feature_gates::resolve(&values)
    }

    /// What `--version` (or `--version=raw`) asks to print.
    pub fn version(&self) -> Option<String> {
        let asked = self
            .matches
            .get_many::<String>("version")
            .and_then(|mut v| v.next_back())
            .is_some_and(|v| v == "true" || v == "raw");
        asked.then(|| {
            let cmd = command();
            format!(
                "{} {}",
                cmd.get_name(),
                cmd.get_version().unwrap_or(pflag::BINARY_VERSION)
            )
        })
    }

    /// Logs the flags kapi ignores, then checks and applies the rest ([`Options::validate`]);
    /// `gates` from [`Cli::feature_gates`].
    pub fn validate(&self, gates: BTreeMap<String, bool>) -> Result<ServerConfig, Vec<String>> {
        upstream_flags::log_ignored(&self.matches);
        if let Some(line) = feature_gates::ignored_line(&gates) {
            tracing::info!("{line}");
        }
        let mut config = self.options.validate_with_gates(&gates)?;
        config.feature_gates = gates;
        Ok(config)
    }

    /// The lines [`Cli::validate`] logs for the ignored flags.
    #[cfg(test)]
    pub fn ignored_lines(&self) -> Vec<String> {
        upstream_flags::ignored_lines(&self.matches)
    }
}

#[cfg(test)]
#[path = "cli_tests.rs"]
pub(crate) mod tests;
