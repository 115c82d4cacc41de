//! `warren unlock`.

use std::io::Write;
use std::path::PathBuf;

use super::diagnostics::Effect;
use super::inputs::{client, load_spec};
use super::output::{broker_failed, fail_with};
use super::runtime::runtime;
use super::streams::ErrorLog;
use super::{EXIT_ERROR, EXIT_OK, exit};
use crate::apply::{self, UnlockError};
use crate::cli::{BrokerArgs, EnvArg};
use crate::plan::spec_name;
use crate::render;

/// The flags of `warren unlock`.
#[derive(Debug, clap::Args)]
pub struct UnlockArgs {
    /// The spec, a file or a directory (its `name` names the spec whose lock is broken).
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    #[command(flatten)]
    pub env: EnvArg,
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// The lock's holder, as printed by the refused `apply`.
    #[arg(long, value_name = "HOLDER")]
    pub holder: String,
}

/// `warren unlock SPEC --holder HOLDER`.
pub fn unlock(args: &UnlockArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> u8 {
    let Some(file) = load_spec(&args.spec, &args.env, Effect::Changes, stderr) else {
        return EXIT_ERROR;
    };
    let client = match client(&args.broker) {
        Ok(client) => client,
        Err(err) => return broker_failed(stderr, &err),
    };
    let name = spec_name(&file);
    match runtime().block_on(apply::unlock(&client, &name, &args.holder)) {
        Ok(unlocked) => {
            let _ = render::apply::unlocked(stdout, &name, &unlocked);
            EXIT_OK
        }
        Err(UnlockError::Broker(err)) => broker_failed(stderr, &err),
        Err(err) => fail_with(stderr, exit::REFUSED, &err.to_string()),
    }
}
