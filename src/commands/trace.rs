//! `warren trace`.

use std::io::Write;
use std::path::Path;

use super::{EXIT_ERROR, EXIT_OK, Effect, ErrorLog, fail, load_spec, report};
use crate::cli::{EnvArg, TraceFormat};
use crate::compile::{self, Options};
use crate::model::TargetVersion;
use crate::model::routing::Headers;
use crate::render;
use crate::trace::{self, Request};

/// The flags of `warren trace`.
pub struct Flags<'f> {
    /// `--vhost`.
    pub vhost: Option<&'f str>,
    /// `--exchange`.
    pub exchange: &'f str,
    /// `--routing-key`.
    pub routing_key: &'f str,
    /// `--headers`, as written.
    pub headers: &'f [String],
    /// `--fail`.
    pub failures: usize,
    /// `--format`.
    pub format: TraceFormat,
    /// `--target-version`.
    pub target: TargetVersion,
}

/// `warren trace SPEC --exchange X --routing-key K …`.
pub fn trace(
    spec: &Path,
    env: &EnvArg,
    flags: &Flags,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let mut headers = Headers::new();
    for text in flags.headers {
        match trace::parse_header(text) {
            Ok((name, value)) => {
                headers.insert(name, value);
            }
            Err(err) => return fail(stderr, &err.to_string()),
        }
    }
    let Some(file) = load_spec(spec, env, Effect::Reads, stderr) else {
        return EXIT_ERROR;
    };
    // The trace needs no secrets: passwords never route a message.
    let options = Options {
        target: flags.target,
        secrets: None,
    };
    let compiled = match compile::compile(&file, &options) {
        Ok(compiled) => compiled,
        Err(found) => {
            report(&file, &found, Effect::Reads, stderr);
            return EXIT_ERROR;
        }
    };
    let request = Request {
        vhost: flags.vhost.map(str::to_string),
        exchange: flags.exchange.to_string(),
        routing_key: flags.routing_key.to_string(),
        headers,
        failures: flags.failures,
    };
    let result = trace::trace(
        &compiled.definitions,
        &compiled.contract,
        flags.target,
        &request,
    );
    let trace = match result {
        Ok(trace) => trace,
        Err(err) => return fail(stderr, &err.to_string()),
    };
    let written = match flags.format {
        TraceFormat::Text => render::trace::text(stdout, &trace),
        TraceFormat::Json => render::trace::json(stdout, &trace),
    };
    match written {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_ERROR,
    }
}
