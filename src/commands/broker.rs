//! `warren plan`, `warren apply` and `warren diff`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use reqwest::Url;

use super::{EXIT_CHANGES, EXIT_ERROR, EXIT_OK};
use crate::apply::{self, ApplyError};
use crate::broker::{BrokerError, Client, Endpoint};
use crate::cli::{BrokerArgs, Format, PlanArgs, SpecArgs};
use crate::compile::Compiled;
use crate::model::Definitions;
use crate::plan::{self, PLAN_FORMAT, Plan};
use crate::render::plan::{Style, redacted_json, render_text};
use crate::version::TargetVersion;

/// Turns the connection flags into an endpoint: credentials from the flags, else from
/// the URL, else from RabbitMQ's container variables, else guest/guest.
pub(super) fn endpoint(args: &BrokerArgs) -> Result<Endpoint, String> {
    let mut urls = Vec::new();
    let mut url_user = None;
    let mut url_password = None;
    for text in &args.urls {
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let mut url = Url::parse(text)
            .map_err(|err| format!("invalid --url `{}`: {err}", redact_url(text)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "invalid --url `{}`: use http:// or https://",
                redact_url(text)
            ));
        }
        if !url.username().is_empty() {
            url_user = Some(percent_decode(url.username()));
            url_password = url.password().map(percent_decode);
            let _ = url.set_username("");
            let _ = url.set_password(None);
        }
        urls.push(url);
    }
    let user = args
        .user
        .clone()
        .or(url_user)
        .or_else(|| std::env::var("RABBITMQ_DEFAULT_USER").ok())
        .unwrap_or_else(|| "guest".into());
    let password = args
        .password
        .clone()
        .or(url_password)
        .or_else(|| std::env::var("RABBITMQ_DEFAULT_PASS").ok())
        .unwrap_or_else(|| "guest".into());
    Ok(Endpoint {
        urls,
        user,
        password,
        ca_cert: args.ca_cert.clone(),
        timeout: Duration::from_secs(args.timeout.max(1)),
    })
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// A URL as it may be printed: without its password.
fn redact_url(text: &str) -> String {
    match Url::parse(text) {
        Ok(mut url) => {
            if url.password().is_some() {
                let _ = url.set_password(Some("***"));
            }
            url.to_string()
        }
        Err(_) => match text.find('@') {
            Some(at) => format!("***{}", &text[at..]),
            None => text.to_string(),
        },
    }
}

pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
}

fn spec_name(path: &Path, compiled_name: Option<&str>) -> String {
    compiled_name.map(str::to_string).unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "warren".into())
    })
}

/// Loads and compiles a spec for a target; `None` after printing diagnostics.
fn compile_spec(
    path: &Path,
    target: TargetVersion,
    stderr: &mut dyn Write,
) -> Option<(String, Compiled)> {
    let args = SpecArgs {
        spec: path.to_path_buf(),
        target_version: target,
    };
    let compiled = super::compile::load_and_compile(&args, true, stderr)?;
    Some((spec_name(path, compiled.spec_name.as_deref()), compiled))
}

fn color_for(stream_is_terminal: bool) -> Style {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    Style::new(stream_is_terminal && !no_color)
}

fn print_plan(plan: &Plan, format: Format, stdout: &mut dyn Write) -> std::io::Result<()> {
    match format {
        Format::Text => render_text(stdout, plan, color_for(std::io::stdout().is_terminal())),
        Format::Json => writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&redacted_json(plan)).expect("JSON")
        ),
    }
}

/// Reads the broker and makes a plan for a spec.
///
/// The spec compiles on a blocking thread while the broker's listings are read: the
/// vhosts to read are known from the loaded spec and the ownership records, so neither
/// waits for the other.
async fn make_plan(
    client: &Client,
    spec_path: &Path,
    args: &PlanArgs,
    stderr: &mut dyn Write,
) -> Result<Option<Plan>, BrokerError> {
    let Some(file) = super::compile::load_reporting(spec_path, stderr) else {
        return Ok(None);
    };
    let name = spec_name(spec_path, file.spec.name.as_deref());
    let declared: Vec<String> = file.spec.vhosts.keys().cloned().collect();
    // Two strands run at once: the broker's version (a slow request on a large 3.x
    // broker), then the compiler; and the ownership records with the listings of
    // every vhost in scope (the declared ones and those an earlier apply managed).
    let compiling = async {
        let version = client.version().await?;
        let target = args
            .target_version
            .or_else(|| TargetVersion::for_broker(&version))
            .unwrap_or(TargetVersion::V3_10);
        let options = crate::compile::Options {
            target,
            resolve_secrets: true,
            ..crate::compile::Options::default()
        };
        let (file, result) = tokio::task::spawn_blocking(move || {
            let result = crate::compile::compile(&file, &options).map(|compiled| {
                let objects = crate::model::objects::objects(&compiled.definitions);
                (compiled, objects)
            });
            (file, result)
        })
        .await
        .expect("the compiler does not panic");
        Ok::<_, BrokerError>((version, target, file, result))
    };
    let reading = async {
        // The declared vhosts are read at once; a vhost only the record names (one
        // the spec no longer declares) costs a second read.
        let (global_parameters, live) =
            tokio::join!(client.global_parameters(), client.read_live(&declared));
        let global_parameters = global_parameters?;
        let records = crate::state::records(&global_parameters);
        let mut vhosts = plan::scope(&Definitions::default(), records.get(&name));
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
    let (version, target, file, result) = compiled?;
    let Some((compiled, desired_objects)) =
        super::compile::report_compiled(&file, result, |(compiled, _)| &compiled.warnings, stderr)
    else {
        return Ok(None);
    };
    let (global_parameters, records, vhosts, mut live) = read?;
    let scope = plan::scope(&compiled.definitions, records.get(&name));
    if scope.iter().any(|vhost| !vhosts.contains(vhost)) {
        live = client.read_live(&scope).await?;
    }
    live.definitions.global_parameters = global_parameters;
    let mut plan = plan::build(plan::Inputs {
        spec: &name,
        target_version: target.to_string(),
        broker_version: Some(version.clone()),
        desired: &compiled,
        live: &live.definitions,
        records,
        protected_user: Some(client.user().to_string()),
        prune_unmanaged: args.prune_unmanaged,
        desired_objects: Some(desired_objects),
    });
    let queues = plan.queues_needing_counts();
    if !queues.is_empty() {
        let counts = client.message_counts(&queues).await?;
        for ((vhost, name), count) in queues.iter().zip(counts) {
            for change in plan.changes.iter_mut() {
                if change.id.kind == crate::compile::ObjectKind::Queue
                    && change.id.vhost.as_deref() == Some(vhost)
                    && &change.id.name == name
                {
                    change.messages = count;
                }
            }
        }
        plan.summarize();
    }
    Ok(Some(plan))
}

fn exit_for_plan(plan: &Plan) -> u8 {
    if !plan.conflicts.is_empty() {
        EXIT_ERROR
    } else if plan.has_changes() {
        EXIT_CHANGES
    } else {
        EXIT_OK
    }
}

/// `warren plan SPEC`.
pub fn plan(
    spec: &Path,
    connection: &BrokerArgs,
    args: &PlanArgs,
    output: Option<&Path>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8 {
    let client = match endpoint(connection)
        .map_err(BrokerError::Setup)
        .and_then(Client::new)
    {
        Ok(client) => client,
        Err(err) => return fail(stderr, &err.to_string()),
    };
    let made = runtime().block_on(make_plan(&client, spec, args, stderr));
    let plan = match made {
        Ok(Some(plan)) => plan,
        Ok(None) => return EXIT_ERROR,
        Err(err) => return fail(stderr, &err.to_string()),
    };
    // For benchmarks (bench/run): how many HTTP requests the plan made.
    if std::env::var_os("WARREN_REQUEST_COUNT").is_some_and(|v| v == "1") {
        let _ = writeln!(stderr, "requests: {}", client.request_count());
    }
    if print_plan(&plan, args.format, stdout).is_err() {
        return EXIT_ERROR;
    }
    if let Some(output) = output {
        let text = serde_json::to_string_pretty(&plan).expect("JSON") + "\n";
        if let Err(err) = crate::export::write_atomically(output, &text) {
            return fail(stderr, &format!("cannot write {}: {err}", output.display()));
        }
        let _ = writeln!(
            stderr,
            "saved the plan to {} (apply it with `warren apply {}`)",
            output.display(),
            output.display()
        );
    }
    exit_for_plan(&plan)
}

pub(super) fn fail(stderr: &mut dyn Write, message: &str) -> u8 {
    let _ = writeln!(stderr, "error: {message}");
    EXIT_ERROR
}

/// Reads a plan file, or `None` when the file is not a plan (then it is a spec).
fn read_plan_file(path: &Path) -> Result<Option<Plan>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Ok(None);
    };
    if value["format"] != PLAN_FORMAT {
        return Err(format!(
            "{} is JSON but not a warren plan (expected \"format\": \"{PLAN_FORMAT}\")",
            path.display()
        ));
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|err| format!("{} is not a valid plan: {err}", path.display()))
}

/// `warren apply PLAN|SPEC`.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    target: &Path,
    connection: &BrokerArgs,
    args: &PlanArgs,
    auto_approve: bool,
    allow_data_loss: bool,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8 {
    let saved = match read_plan_file(target) {
        Ok(saved) => saved,
        Err(err) => return fail(stderr, &err),
    };
    let client = match endpoint(connection)
        .map_err(BrokerError::Setup)
        .and_then(Client::new)
    {
        Ok(client) => client,
        Err(err) => return fail(stderr, &err.to_string()),
    };
    let runtime = runtime();
    let plan = match saved {
        Some(plan) => plan,
        None => {
            let plan = match runtime.block_on(make_plan(&client, target, args, stderr)) {
                Ok(Some(plan)) => plan,
                Ok(None) => return EXIT_ERROR,
                Err(err) => return fail(stderr, &err.to_string()),
            };
            if print_plan(&plan, args.format, stdout).is_err() {
                return EXIT_ERROR;
            }
            if !plan.conflicts.is_empty() {
                return fail(
                    stderr,
                    "the plan takes over objects another spec manages; nothing was applied",
                );
            }
            if !plan.has_changes() {
                return EXIT_OK;
            }
            if !auto_approve && !confirm(stdout, stderr) {
                let _ = writeln!(stderr, "apply cancelled; nothing was changed");
                return EXIT_ERROR;
            }
            plan
        }
    };
    if !plan.has_changes() {
        let _ = writeln!(stdout, "Nothing to apply.");
        return EXIT_OK;
    }
    let options = apply::Options { allow_data_loss };
    let show_progress = std::io::stderr().is_terminal();
    let mut progress = |step: &str| {
        if show_progress {
            eprintln!("  {step}");
        }
    };
    match runtime.block_on(apply::apply(&client, &plan, &options, &mut progress)) {
        Ok(report) => {
            let _ = writeln!(
                stdout,
                "Applied: {} changes to spec `{}` ({} requests).",
                report.done.len(),
                plan.spec,
                client.request_count()
            );
            EXIT_OK
        }
        Err(ApplyError::Broker { error, report }) => {
            let _ = writeln!(stderr, "error: {error}");
            let _ = writeln!(
                stderr,
                "{} changes were made, {} were not; run `warren plan` and `warren apply` again to finish",
                report.done.len(),
                report.not_done.len()
            );
            for item in report.not_done.iter().take(20) {
                let _ = writeln!(stderr, "  not done: {item}");
            }
            EXIT_ERROR
        }
        Err(err) => fail(stderr, &format!("{err}; nothing was changed")),
    }
}

/// Asks on the terminal; anything but "yes" declines.
fn confirm(stdout: &mut dyn Write, stderr: &mut dyn Write) -> bool {
    if !std::io::stdin().is_terminal() {
        let _ = writeln!(
            stderr,
            "error: no terminal to confirm on: review the plan and pass --auto-approve, or apply a saved plan file"
        );
        return false;
    }
    let _ = write!(stdout, "\nApply these changes? Only `yes` is accepted: ");
    let _ = stdout.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    answer.trim() == "yes"
}

/// `warren diff SPEC --against FILE`.
pub fn diff(
    spec: &Path,
    against: &Path,
    args: &PlanArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8 {
    let text = match std::fs::read_to_string(against) {
        Ok(text) => text,
        Err(err) => return fail(stderr, &format!("cannot read {}: {err}", against.display())),
    };
    let live: Definitions = match serde_json::from_str(&text) {
        Ok(live) => live,
        Err(err) => {
            return fail(
                stderr,
                &format!(
                    "{} is not a RabbitMQ definitions file: {err}",
                    against.display()
                ),
            );
        }
    };
    let file_version = live
        .rabbitmq_version
        .clone()
        .or(live.rabbit_version.clone());
    let target = args
        .target_version
        .or_else(|| file_version.as_deref().and_then(TargetVersion::for_broker))
        .unwrap_or(TargetVersion::DEFAULT);
    let Some((name, compiled)) = compile_spec(spec, target, stderr) else {
        return EXIT_ERROR;
    };
    let plan = plan::build(plan::Inputs {
        spec: &name,
        target_version: target.to_string(),
        broker_version: None,
        desired: &compiled,
        live: &live,
        records: crate::state::records(&live.global_parameters),
        protected_user: None,
        prune_unmanaged: args.prune_unmanaged,
        desired_objects: None,
    });
    if print_plan(&plan, args.format, stdout).is_err() {
        return EXIT_ERROR;
    }
    exit_for_plan(&plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_come_out_of_the_url_and_never_stay_in_it() {
        let args = BrokerArgs {
            urls: vec![
                "http://ops:s%40cret@node1:15672".into(),
                "http://node2:15672".into(),
            ],
            user: None,
            password: None,
            ca_cert: None,
            timeout: 5,
        };
        let endpoint = endpoint(&args).unwrap();
        assert_eq!(endpoint.user, "ops");
        assert_eq!(endpoint.password, "s@cret");
        assert_eq!(endpoint.urls[0].as_str(), "http://node1:15672/");
        assert_eq!(endpoint.urls.len(), 2);
        assert_eq!(redact_url("http://ops:s3cret@h:1/"), "http://ops:***@h:1/");
    }
}
