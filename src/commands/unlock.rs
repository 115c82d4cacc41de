//! `warren unlock`.

use std::io::Write;
use std::path::PathBuf;

use super::diagnostics::Effect;
use super::inputs::{client, load_spec};
use super::result::{CommandResult, Success};
use super::runtime::runtime;
use crate::apply;
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
pub fn unlock(args: &UnlockArgs, stdout: &mut dyn Write) -> CommandResult {
    let file = load_spec(&args.spec, &args.env, Effect::Changes)?;
    let client = client(&args.broker)?;
    let name = spec_name(&file);
    let unlocked = runtime().block_on(apply::unlock(&client, &name, &args.holder))?;
    let _ = render::apply::unlocked(stdout, &name, &unlocked);
    Ok(Success::Done)
}
