//! `warren status SPEC`.

use std::io::Write;
use std::path::Path;

use super::{
    EXIT_ERROR, EXIT_OK, Effect, ErrorLog, broker_failed, client, fail, load_spec, report, runtime,
};
use crate::cli::{BrokerArgs, EnvArg, StatusFormat};
use crate::model::TargetVersion;
use crate::render::status;
use crate::status::{Filter, StatusError, against_broker};

/// The flags of `warren status` besides the spec and the connection.
#[derive(Debug, Clone, Copy)]
pub struct Flags<'a> {
    /// `--format`.
    pub format: StatusFormat,
    /// `--vhost`.
    pub vhost: Option<&'a str>,
    /// `--service`.
    pub service: Option<&'a str>,
    /// `--target-version`.
    pub target: Option<TargetVersion>,
}

/// Reports the spec's consumers on the broker. A report is a success whatever
/// problems it lists: it is read by people and by monitoring, which judge them.
pub fn status(
    spec: &Path,
    env: &EnvArg,
    connection: &BrokerArgs,
    flags: &Flags,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let Some(file) = load_spec(spec, env, Effect::Reads, stderr) else {
        return EXIT_ERROR;
    };
    let client = match client(connection) {
        Ok(client) => client,
        Err(err) => return broker_failed(stderr, &err),
    };
    let filter = Filter {
        vhost: flags.vhost,
        service: flags.service,
    };
    let made = runtime().block_on(against_broker(&client, &file, flags.target, filter));
    // For tests and benchmarks: how many HTTP requests the report took.
    if std::env::var_os("WARREN_REQUEST_COUNT").is_some_and(|v| v == "1") {
        let _ = writeln!(stderr, "requests: {}", client.request_count());
    }
    let report_made = match made {
        Ok(made) => made,
        Err(StatusError::Invalid(diagnostics)) => {
            report(&file, &diagnostics, Effect::Reads, stderr);
            return EXIT_ERROR;
        }
        Err(StatusError::Filter(message)) => return fail(stderr, &message),
        Err(StatusError::Broker(error)) => return broker_failed(stderr, &error),
    };
    let written = match flags.format {
        StatusFormat::Text => status::text(stdout, &report_made),
        StatusFormat::Json => status::json(stdout, &report_made),
        StatusFormat::Prometheus => status::prometheus(stdout, &report_made),
    };
    match written {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_ERROR,
    }
}
