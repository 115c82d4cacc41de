//! The definitions corpus against live brokers: every file of
//! `tests/definitions/corpus/expected.json` that a version accepts is POSTed to a node
//! of that version, `warren import` reads the node back into a spec, and `warren plan`
//! of that spec against the node proposes no change (it only adopts what the file
//! made), with nothing left unmanaged. A file the manifest says a version refuses must
//! be refused by it.
//!
//! One node per version, dedicated to this test: it logs in as its own administrator
//! (never declared by a corpus file, unlike `guest`, whose password some exports
//! carry) and has `guest` as every fresh broker does. After each file, what the file
//! created is removed again so that the next one starts from a fresh broker's state.
//! Every file is tried; the failures are listed together at the end.
//!
//! A fresh broker's state is read from the node before the first file: a fresh 4.3
//! node exports an exchange of its own, `amq.rabbitmq.log` in vhost `/` (3.10 and 4.0
//! export none); it is gone once `/` is deleted and created again.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde_json::{Value, json};

use crate::node::{Node, NodeOptions, Version, pct};
use crate::support::{self, Capture, CorpusFile, Run};

/// The node's administrator: the user the test and warren log in as.
const ADMIN: &str = "warren-corpus-admin";
const ADMIN_PASSWORD: &str = "warren-corpus-admin-pw";

/// Global parameters the broker keeps for itself: never deleted, only restored.
const NODE_GLOBALS: &[&str] = &["internal_cluster_id", "cluster_tags"];

fn the_corpus_round_trips_through_the_broker(version: Version) {
    let corpus = support::corpus();
    let accepted = |file: &CorpusFile| file.accepted_by.iter().any(|v| v == version.line());
    let plugins: BTreeSet<String> = corpus.iter().flat_map(|f| f.plugins.clone()).collect();

    let node = Node::start(
        version,
        NodeOptions {
            user: ADMIN.into(),
            password: ADMIN_PASSWORD.into(),
            extra_config: vec![
                format!("default_user = {ADMIN}"),
                format!("default_pass = {ADMIN_PASSWORD}"),
            ],
            plugins: plugins.iter().cloned().collect(),
            ..NodeOptions::default()
        },
    );
    restore_guest(&node);
    let node_globals = globals(&node);
    let node_exchanges: BTreeSet<String> = node.get("/api/definitions")["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect();

    let mut failures = Vec::new();
    for (n, file) in corpus.iter().enumerate() {
        let started = Instant::now();
        let definitions = read(file);
        let result = if accepted(file) {
            round_trip(&node, file, &definitions, n)
        } else {
            refused(&node, file, &definitions)
        };
        clean_up(&node, file, &definitions, &node_globals);
        if let Err(failure) = result {
            failures.push(failure);
        }
        let left = leftovers(&node, &node_globals, &node_exchanges);
        assert!(
            left.is_empty(),
            "cleaning up after {} left {} on {version}: {}",
            file.name,
            left.len(),
            left.join(", ")
        );
        eprintln!(
            "corpus on {version}: {} in {:.1} s",
            file.name,
            started.elapsed().as_secs_f64()
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus files do not round-trip through {version} (or are not refused as \
         the manifest says):\n{}\n\n{}",
        failures.len(),
        corpus.len(),
        failures
            .iter()
            .map(|f| format!("- {}", f.lines().next().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("\n"),
        failures.join("\n\n")
    );
}

per_version!(
    also_on_4_0:
        the_corpus_round_trips_through_the_broker,
);

fn read(file: &CorpusFile) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&file.path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", file.path));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.path))
}

/// POST of a file the manifest says this version refuses: keeps the manifest true.
fn refused(node: &Node, file: &CorpusFile, definitions: &Value) -> Result<(), String> {
    let posted = post(node, file, definitions);
    if posted.is_success() {
        return Err(format!(
            "{}: the manifest says {} refuses it, but POST answered HTTP {}",
            file.name, node.version, posted.status
        ));
    }
    Ok(())
}

/// `POST /api/definitions`, or `POST /api/definitions/{vhost}` (after creating the
/// vhost) for a vhost-scoped file.
fn post(node: &Node, file: &CorpusFile, definitions: &Value) -> crate::node::Response {
    match &file.vhost {
        Some(vhost) => {
            full_permissions(node, vhost, ADMIN);
            node.request(
                reqwest::Method::POST,
                &format!("/api/definitions/{}", pct(vhost)),
                Some(definitions),
            )
        }
        None => node.request(reqwest::Method::POST, "/api/definitions", Some(definitions)),
    }
}

/// POST, import, plan. The error's first line names the file and says what failed;
/// the lines after show warren's output and the imported spec.
fn round_trip(node: &Node, file: &CorpusFile, definitions: &Value, n: usize) -> Result<(), String> {
    let name = &file.name;
    let posted = post(node, file, definitions);
    if !posted.is_success() {
        return Err(format!(
            "{name}: POST refused with HTTP {}: {}",
            posted.status,
            posted.body.trim()
        ));
    }

    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("imported.yaml");
    let spec_arg = spec.to_str().unwrap();
    let spec_name = format!("corpus-{n}");
    let mut import_args = vec!["import", "-o", spec_arg, "--name", &spec_name];
    if let Some(vhost) = &file.vhost {
        import_args.extend(["--vhost", vhost]);
    }
    let import = node.warren(&import_args).run();
    if import.code != Some(0) || import.stderr.contains("panicked") {
        return Err(format!(
            "{name}: `warren import` exited with {:?}: {}\n`warren {}`:\n{}",
            import.code,
            support::summary(&import),
            import_args.join(" "),
            output(&import)
        ));
    }
    let imported = std::fs::read_to_string(&spec).unwrap_or_default();

    // No change: nothing to create, update, replace or delete, nothing unmanaged, no
    // conflict. The objects the file made are in no ownership record yet, so the plan
    // adopts them, and a plan that adopts exits 2 (docs/plan-format.md): that exit is
    // accepted when adoption is all the plan does. The spec reads URI credentials
    // from the environment, as a user sets them.
    let plan = node
        .plan_json(spec_arg)
        .command()
        .envs(file.credentials.iter().map(|(k, v)| (k, v)))
        .run();
    let document: Value = serde_json::from_str(&plan.stdout).unwrap_or(Value::Null);
    let empty = |field: &str| {
        document[field].is_null() || document[field].as_array().is_some_and(Vec::is_empty)
    };
    let unmanaged = !empty("unmanaged");
    // From 4.0 on, the one change an imported quorum ladder may plan is the policy that
    // lifts its work queue's default delivery limit of 20 (the import says so).
    let lifts_a_default_limit = |change: &Value| {
        change["action"] == "create"
            && change["id"]["kind"] == "policy"
            && change["id"]["name"]
                .as_str()
                .is_some_and(|name| name.starts_with("warren.delivery-limit."))
            && import.stderr.contains("the first plan creates the policy")
    };
    let changes_expected = document["changes"]
        .as_array()
        .is_some_and(|changes| changes.iter().all(lifts_a_default_limit));
    let no_change = matches!(plan.code, Some(0 | 2))
        && document.is_object()
        && (empty("changes") || changes_expected)
        && empty("conflicts")
        && !unmanaged;
    if !no_change {
        let text = node.plan(spec_arg).run();
        return Err(format!(
            "{name}: `warren plan` of the imported spec exited with {:?}{}: {}\n\
             --- import ---\n{}--- plan ---\n{}--- imported spec ---\n{imported}",
            text.code,
            if unmanaged {
                " and lists objects as not managed"
            } else {
                ""
            },
            support::summary(&text),
            output(&import),
            output(&text)
        ));
    }
    Ok(())
}

fn output(run: &Run) -> String {
    format!("{}{}", run.stdout, run.stderr)
}

/// Removes what `definitions` created, back to a fresh broker's state: its vhosts
/// (`/` is deleted and created again with the administrator's and guest's
/// permissions), its users other than the administrator (`guest` comes back as a
/// fresh broker has it), its global parameters (the broker's own get their values back).
fn clean_up(
    node: &Node,
    file: &CorpusFile,
    definitions: &Value,
    node_globals: &BTreeMap<String, Value>,
) {
    let list = |section: &str| -> Vec<Value> {
        definitions[section].as_array().cloned().unwrap_or_default()
    };
    let mut vhosts: BTreeSet<String> = file.vhost.iter().cloned().collect();
    for section in [
        "vhosts",
        "permissions",
        "topic_permissions",
        "parameters",
        "policies",
        "queues",
        "exchanges",
        "bindings",
    ] {
        for item in list(section) {
            let key = if section == "vhosts" { "name" } else { "vhost" };
            if file.vhost.is_none()
                && let Some(vhost) = item[key].as_str()
            {
                vhosts.insert(vhost.to_string());
            }
        }
    }
    for vhost in &vhosts {
        delete(node, &format!("/api/vhosts/{}", pct(vhost)));
    }
    if vhosts.contains("/") {
        full_permissions(node, "/", ADMIN);
        node.put("/api/permissions/%2F/guest", &all_permissions());
    }

    let mut guest_removed = false;
    for user in list("users") {
        let Some(user) = user["name"].as_str() else {
            continue;
        };
        if user != ADMIN {
            delete(node, &format!("/api/users/{}", pct(user)));
            guest_removed |= user == "guest";
        }
    }
    if guest_removed {
        restore_guest(node);
    }

    for parameter in list("global_parameters") {
        let Some(name) = parameter["name"].as_str() else {
            continue;
        };
        match node_globals.get(name) {
            Some(value) => {
                node.put(
                    &format!("/api/global-parameters/{}", pct(name)),
                    &json!({"name": name, "value": value}),
                );
            }
            None => delete(node, &format!("/api/global-parameters/{}", pct(name))),
        }
    }
}

/// DELETE that accepts 404 (already gone).
fn delete(node: &Node, path: &str) {
    let r = node.request(reqwest::Method::DELETE, path, None);
    assert!(
        r.is_success() || r.status == 404,
        "DELETE {path} on {}: HTTP {}: {}",
        node.version,
        r.status,
        r.body
    );
}

fn all_permissions() -> Value {
    json!({"configure": ".*", "write": ".*", "read": ".*"})
}

/// Creates `vhost` if needed and gives `user` full permissions on it.
fn full_permissions(node: &Node, vhost: &str, user: &str) {
    if node
        .get_opt(&format!("/api/vhosts/{}", pct(vhost)))
        .is_none()
    {
        node.put(&format!("/api/vhosts/{}", pct(vhost)), &json!({}));
    }
    node.put(
        &format!("/api/permissions/{}/{}", pct(vhost), pct(user)),
        &all_permissions(),
    );
}

/// `guest` as a fresh broker has it: password `guest`, administrator, full
/// permissions on `/`.
fn restore_guest(node: &Node) {
    node.put(
        "/api/users/guest",
        &json!({"password": "guest", "tags": "administrator"}),
    );
    node.put("/api/permissions/%2F/guest", &all_permissions());
}

/// The node's own global parameters (`internal_cluster_id`, `cluster_tags`), by name.
fn globals(node: &Node) -> BTreeMap<String, Value> {
    node.get("/api/global-parameters")
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| {
            let name = p["name"].as_str()?;
            NODE_GLOBALS
                .contains(&name)
                .then(|| (name.to_string(), p["value"].clone()))
        })
        .collect()
}

/// What the node holds beyond a fresh broker's state (vhost `/`, the administrator and
/// `guest` with full permissions on it, the broker's own global parameters and the
/// exchanges it exported before the first file).
fn leftovers(
    node: &Node,
    node_globals: &BTreeMap<String, Value>,
    node_exchanges: &BTreeSet<String>,
) -> Vec<String> {
    let definitions = node.get("/api/definitions");
    let mut left = Vec::new();
    let list = |section: &str| definitions[section].as_array().cloned().unwrap_or_default();
    for vhost in list("vhosts") {
        if vhost["name"] != "/" {
            left.push(format!("vhost {}", vhost["name"]));
        }
    }
    for user in list("users") {
        if user["name"] != ADMIN && user["name"] != "guest" {
            left.push(format!("user {}", user["name"]));
        }
    }
    for permission in list("permissions") {
        let fresh = permission["vhost"] == "/"
            && (permission["user"] == ADMIN || permission["user"] == "guest");
        if !fresh {
            left.push(format!("permission {permission}"));
        }
    }
    for parameter in list("global_parameters") {
        let name = parameter["name"].as_str().unwrap_or_default();
        if !node_globals.contains_key(name) {
            left.push(format!("global parameter {name}"));
        }
    }
    for section in [
        "topic_permissions",
        "parameters",
        "policies",
        "queues",
        "exchanges",
        "bindings",
    ] {
        for item in list(section) {
            if section == "exchanges" && node_exchanges.contains(&item.to_string()) {
                continue;
            }
            left.push(format!("{section} {item}"));
        }
    }
    left
}
