//! `warren show PLAN`: a saved plan printed as `warren plan` printed it when it made
//! the plan, in any of its formats. It reads the file only: no broker, no password.

use std::io::Write;
use std::path::PathBuf;

use super::Context;
use super::plan::Output;
use super::result::{CommandError, CommandResult, Success};
use crate::cli::Format;
use crate::plan;

/// The flags of `warren show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// A plan file saved by `warren plan SPEC -o FILE`.
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    /// Output format of the plan.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `warren show PLAN`: exit 0 once the plan is printed, whatever it says (the broker
/// is not asked whether it still holds: `warren apply PLAN` checks that); 1 when the
/// file is not a plan warren can read.
pub fn show(args: &ShowArgs, context: &Context, stdout: &mut dyn Write) -> CommandResult {
    let plan = plan::file::read_saved(&args.plan)?;
    let output = Output {
        format: args.format,
        color: context.color,
    };
    output
        .print(&plan, stdout)
        .map_err(CommandError::unwritten)?;
    Ok(Success::Done)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cli::ColorWhen;
    use crate::diff::{Action, Change};
    use crate::model::{ObjectId, ObjectKind};
    use crate::plan::{DesiredObject, Plan};

    /// The file `plan -o` writes keeps the password hashes `apply` needs (the printed
    /// JSON redacts them): read back, it prints as the plan did, byte for byte.
    #[test]
    fn a_plan_written_by_plan_o_prints_as_plan_printed_it() {
        let user = json!({"password_hash": "c2VjcmV0aGFzaA==", "tags": ["management"]});
        let queue = json!({"durable": true, "auto_delete": false,
                           "arguments": {"x-queue-type": "quorum"}});
        let mut plan = Plan::of_changes(
            vec![
                Change::new(
                    Action::Update,
                    ObjectId::global(ObjectKind::User, "ops"),
                    Some(json!({"password_hash": "b2xk", "tags": ["management"]})),
                    Some(user.clone()),
                ),
                Change::new(
                    Action::Create,
                    ObjectId::in_vhost(ObjectKind::Queue, "shop", "orders"),
                    None,
                    Some(queue.clone()),
                ),
            ],
            vec![
                DesiredObject {
                    id: ObjectId::global(ObjectKind::User, "ops"),
                    value: user,
                },
                DesiredObject {
                    id: ObjectId::in_vhost(ObjectKind::Queue, "shop", "orders"),
                    value: queue,
                },
            ],
        );
        plan.environment = Some("prod".into());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.json");
        plan::file::write(&path, &plan).unwrap();
        let saved = plan::file::read_saved(&path).unwrap();
        for format in [Format::Text, Format::Json, Format::Markdown] {
            for color in [ColorWhen::Never, ColorWhen::Always] {
                let print = |plan: &Plan| {
                    let mut out = Vec::new();
                    Output { format, color }.print(plan, &mut out).unwrap();
                    String::from_utf8(out).unwrap()
                };
                let printed = print(&plan);
                assert!(!printed.contains("c2VjcmV0aGFzaA=="), "{printed}");
                assert_eq!(print(&saved), printed, "{format:?}, {color:?}");
            }
        }
    }
}
