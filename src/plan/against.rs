//! Making a plan for a spec: against a live broker (`warren plan`, `warren apply SPEC`)
//! or against a definitions file (`warren diff --against`).

use std::sync::Arc;

use super::{Basis, Inputs, Plan, build, scope};
use crate::broker::{BrokerError, Client};
use crate::compile::secrets::MissingPassword;
use crate::compile::{self, Compiled, Options};
use crate::model::objects::{Objects, objects};
use crate::model::record::{check_own, records};
use crate::model::{Definitions, TargetVersion};
use crate::spec::SpecFile;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::source_map::SpecPath;

/// A plan, with the compiler's warnings about the spec.
#[derive(Debug)]
pub struct Planned {
    /// The plan.
    pub plan: Plan,
    /// Warnings of the compiler (locations resolved).
    pub warnings: Vec<Diagnostic>,
}

/// Why no plan was made.
#[derive(Debug)]
pub enum PlanError {
    /// The spec does not compile: every error found, and the warnings.
    Invalid(Vec<Diagnostic>),
    /// The broker could not be read; the spec's warnings, if it compiled.
    Broker {
        /// What went wrong.
        error: BrokerError,
        /// The compiler's warnings.
        warnings: Vec<Diagnostic>,
    },
}

/// The name a plan gives the spec: its `name`, else the file's stem or the
/// directory's name.
pub fn spec_name(file: &SpecFile) -> String {
    file.name()
}

/// The warning that the spec names another RabbitMQ line (`rabbitmq`) than the broker's,
/// `version`: the plan compiles for the broker it talks to, `target`, so what CI's
/// offline lint and validate checked is not what is planned.
fn line_differs(file: &SpecFile, target: TargetVersion, version: &str) -> Option<Diagnostic> {
    let line = file.spec.rabbitmq.filter(|line| *line != target)?;
    let mut warning = Diagnostic::warning(
        "rabbitmq-line-differs",
        format!(
            "the spec says `rabbitmq: \"{line}\"`, but the broker runs RabbitMQ {version}: planned for {target}, the broker's line, while `validate` and `lint` check the spec for {line}"
        ),
    )
    .at(SpecPath::root().key("rabbitmq"))
        .help(format!(
            "set `rabbitmq: \"{target}\"` (in this environment's `overrides` if only its broker runs it), or pass `--target-version {line}` to plan for the spec's line"
        ));
    file.place_diagnostic(&mut warning);
    Some(warning)
}

/// Reads the broker and plans a loaded spec. Without `target`, the spec compiles for
/// the broker's own version (and warns when the spec's `rabbitmq` names another).
///
/// The spec compiles on a blocking thread while the broker's listings are read: the
/// vhosts to read are known from the loaded spec and the ownership records, so neither
/// waits for the other.
///
/// `missing` says what a password that cannot be read is: `plan` plans without the
/// applications' secrets ([`MissingPassword::Unknown`]), `apply` needs them.
pub async fn against_broker(
    client: &Client,
    file: Arc<SpecFile>,
    target: Option<TargetVersion>,
    prune_unmanaged: bool,
    missing: MissingPassword,
) -> Result<Planned, PlanError> {
    let name = spec_name(&file);
    let declared: Vec<String> = file.spec.vhosts.keys().cloned().collect();
    // Two strands run at once: the broker's version (a slow request on a large 3.x
    // broker), then the compiler; and the ownership records with the listings of
    // every vhost in scope (the declared ones and those an earlier apply managed).
    let asked = target;
    let compiling = async {
        let version = client.version().await?;
        let target = target.unwrap_or_else(|| TargetVersion::of_broker(&version));
        let file = Arc::clone(&file);
        let result = tokio::task::spawn_blocking(move || {
            let options = Options::reading_secrets_with(&file, target, missing);
            compile::compile(&file, &options).map(|compiled| {
                let objects = objects(&compiled.definitions);
                (compiled, objects)
            })
        })
        .await
        .expect("the compiler does not panic");
        Ok::<_, BrokerError>((version, target, result))
    };
    let reading = async {
        // The declared vhosts are read at once; a vhost only the record names (one
        // the spec no longer declares) costs a second read.
        let (global_parameters, live) =
            tokio::join!(client.global_parameters(), client.read_live(&declared));
        let global_parameters = global_parameters?;
        let records = records(&global_parameters)?;
        check_own(&records, &name)?;
        let mut vhosts = scope(&Objects::default(), records.get(&name));
        vhosts.extend(declared.iter().cloned());
        vhosts.sort();
        vhosts.dedup();
        let live = if vhosts.iter().all(|vhost| declared.contains(vhost)) {
            live?
        } else {
            client.read_live(&vhosts).await?
        };
        Ok::<_, BrokerError>((global_parameters, records, vhosts, live))
    };
    let (compiled, read) = tokio::join!(compiling, reading);
    // The version request's error comes first: it is where bad credentials show.
    let (version, target, result) = compiled.map_err(|error| PlanError::Broker {
        error,
        warnings: Vec::new(),
    })?;
    let (mut compiled, desired_objects): (Compiled, Objects) =
        result.map_err(PlanError::Invalid)?;
    if asked.is_none() {
        compiled
            .warnings
            .extend(line_differs(&file, target, &version));
    }
    let warnings = compiled.warnings.clone();
    let broker_error = |error| PlanError::Broker {
        error,
        warnings: warnings.clone(),
    };
    let (global_parameters, records, vhosts, mut live) = read.map_err(broker_error)?;
    let scope = scope(&desired_objects, records.get(&name));
    if scope.iter().any(|vhost| !vhosts.contains(vhost)) {
        live = client.read_live(&scope).await.map_err(broker_error)?;
    }
    live.definitions.global_parameters = global_parameters;
    let missing = missing_users(&file, &compiled.definitions, &live.definitions);
    if !missing.is_empty() {
        return Err(PlanError::Invalid(missing));
    }
    let mut plan = build(Inputs {
        spec: &name,
        environment: file.environment(),
        target_version: target.to_string(),
        broker_version: Some(version),
        desired: desired_objects,
        passwords: &compiled.passwords,
        live: &live.definitions,
        records,
        protected_user: Some(client.user().to_string()),
        prune_unmanaged,
        roles: &compiled.contract.roles(),
    });
    plan.basis = Basis::of(&plan, &live.definitions);
    let queues = plan.queues_needing_counts();
    if !queues.is_empty() {
        let counts = client.message_counts(&queues).await.map_err(broker_error)?;
        plan.set_message_counts(&queues, counts);
    }
    Ok(Planned { plan, warnings })
}

/// Users the spec gives permissions to but neither declares nor finds on the broker
/// (an `external: true` user that does not exist): the broker refuses their
/// permissions (`no_such_user`), so the plan stops before anything is applied.
fn missing_users(file: &SpecFile, desired: &Definitions, live: &Definitions) -> Vec<Diagnostic> {
    use std::collections::BTreeSet;
    let known: BTreeSet<&str> = desired
        .users
        .iter()
        .chain(&live.users)
        .map(|u| u.name.as_str())
        .collect();
    let needed: BTreeSet<&str> = desired
        .permissions
        .iter()
        .map(|p| p.user.as_str())
        .chain(desired.topic_permissions.iter().map(|p| p.user.as_str()))
        .collect();
    let found: Vec<Diagnostic> = needed
        .difference(&known)
        .map(|user| {
            Diagnostic::error(
                "invalid-reference",
                format!(
                    "user `{user}` does not exist on the broker, and the spec does not declare it: RabbitMQ refuses its permissions"
                ),
            )
            .at(crate::spec::SpecPath::root().key("users").key(*user))
            .help("create the user first, or remove `external: true` and give it a `password` so that warren manages it")
        })
        .collect();
    compile::resolve_locations(file, found)
}

/// Plans a loaded spec against a definitions file, as if it were the broker. Without
/// `target`, the spec compiles for the version the file was exported by. A password
/// that cannot be read is unknown, as for `plan`: such a plan is never applied.
pub fn against_definitions(
    file: &SpecFile,
    live: &Definitions,
    target: TargetVersion,
    prune_unmanaged: bool,
) -> Result<Planned, PlanError> {
    let options = Options::reading_secrets_with(file, target, MissingPassword::Unknown);
    let compiled = compile::compile(file, &options).map_err(PlanError::Invalid)?;
    let name = spec_name(file);
    let records = records(&live.global_parameters)
        .and_then(|records| check_own(&records, &name).map(|()| records))
        .map_err(|damaged| PlanError::Broker {
            error: damaged.into(),
            warnings: compiled.warnings.clone(),
        })?;
    let plan = build(Inputs {
        spec: &name,
        environment: file.environment(),
        target_version: target.to_string(),
        broker_version: None,
        desired: objects(&compiled.definitions),
        passwords: &compiled.passwords,
        live,
        records,
        protected_user: None,
        prune_unmanaged,
        roles: &compiled.contract.roles(),
    });
    // A file holds no record to write: objects it has as declared are simply equal.
    let mut plan = plan;
    plan.adopted.clear();
    plan.summarize();
    Ok(Planned {
        plan,
        warnings: compiled.warnings,
    })
}
