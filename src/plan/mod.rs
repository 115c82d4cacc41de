//! A plan: the changes, with everything needed to apply them later and to notice that
//! the broker changed in between. Saved as JSON by `warren plan -o`, read by
//! `warren apply PLAN`; the format is documented in docs/plan-format.md.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

mod against;
mod basis;
mod capture;
mod depends;
mod drift;
pub mod file;
mod fold;
mod migration;
pub mod pass_on;
mod recheck;
pub mod refusal;
pub mod strand;

pub use against::{PlanError, Planned, against_broker, against_definitions, spec_name};
pub use basis::Basis;
pub use capture::{Captured, Overlap};
pub use depends::Dependency;
pub use drift::{Drift, PolicyRef, RoleHazard, SettingDrift, Tie};
pub use fold::Unchanged;
pub use migration::{Migration, Stage, is_migration_object};
pub use pass_on::PassOn;
pub use recheck::{Mismatch, recheck, replan};
pub use refusal::{NO_SPEC_MANAGES_IT, Refusal, TIE_FIX, tie_sentence, tied_policies};
pub use strand::{Feed, Strand, StrandRoute};

use crate::diff::{self, Action, Change, Ownership};
use crate::model::objects::{Objects, normalized_binding_id, objects};
use crate::model::password::Passwords;
use crate::model::record::Record;
use crate::model::role_hazards::QueueRoles;
use crate::model::{BROKER_ID_PARAMETER, Definitions, ObjectId, ObjectKind, TargetVersion};

pub use crate::model::plan_format::PLAN_FORMAT;

/// A plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Always [`PLAN_FORMAT`].
    pub format: String,
    /// The plan as printed (`plan --format json`, `diff --format json`): its password
    /// hashes and URI credentials are hidden ([`crate::model::redact`]), so `show`
    /// reads it and `apply` refuses it. A saved plan (`plan -o FILE`) keeps them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    /// The spec's name (its ownership record is `warren.<spec>`); for a spec read for
    /// one of its environments, `<name>@<environment>`.
    pub spec: String,
    /// The environment the spec was read for (`--env`), when it declares environments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// The version the definitions were compiled for.
    pub target_version: String,
    /// The broker's version, when planned against a broker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_version: Option<String>,
    /// The vhosts compared: declared by the spec or managed by it before.
    pub vhosts: Vec<String>,
    /// The serial of the spec's record when the plan was made (0: none).
    pub serial: u64,
    /// The broker's `internal_cluster_id` when the plan was made: a plan applies only
    /// to the broker (or cluster) it was made against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_id: Option<String>,
    /// The plan deletes objects no spec manages (`--prune-unmanaged`).
    #[serde(default)]
    pub prune_unmanaged: bool,
    /// Every object the spec manages once the plan is applied, in normal form: apply
    /// recomputes the changes from it and the live broker and refuses unless they equal
    /// [`Plan::changes`]. In a saved plan, without the objects in [`Plan::unchanged`].
    pub desired: Vec<DesiredObject>,
    /// In a saved plan, the unchanged exchanges, queues and bindings left out of
    /// [`Plan::desired`], counted and digested per vhost and kind ([`fold`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<Unchanged>,
    /// The changes, grouped by vhost and kind.
    pub changes: Vec<Change>,
    /// Objects that exist exactly as the spec declares them but are in no record: the
    /// apply records them as the spec's (adoption), without changing them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopted: Vec<ObjectId>,
    /// The policies the broker applies to the spec's queues and exchanges once the
    /// plan is applied: a saved plan is stale when they differ at apply. `None` in
    /// plans that predate the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Vec<Dependency>>,
    /// In a saved plan, the dependencies of the objects in [`Plan::unchanged`], left
    /// out of [`Plan::dependencies`] and counted and digested the same way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged_dependencies: Vec<Unchanged>,
    /// Managed queues and exchanges that policies (or operator policies) of the same
    /// highest priority all match: the broker applies one of them and which one is not
    /// knowable, so the plan cannot be applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ties: Vec<Tie>,
    /// Managed queues and exchanges where a policy that is not the spec's wins and
    /// changes a setting the spec gives them (a retry tier's TTL, a dead-letter
    /// target, a limit). Shown prominently; `--detailed-exitcode` counts it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<Drift>,
    /// Managed queues where a policy or operator policy that is not the spec's breaks
    /// what the queue is for with a setting the spec leaves unset (parked messages
    /// that expire, a delay tier deleted with its retries). Shown beside the drift;
    /// `--detailed-exitcode` counts it too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hazards: Vec<RoleHazard>,
    /// Objects in scope that no spec manages (left alone).
    #[serde(default)]
    pub unmanaged: Vec<ObjectId>,
    /// Desired objects another spec manages: the plan cannot be applied.
    #[serde(default)]
    pub conflicts: Vec<Conflict>,
    /// Live queues the spec does not declare whose names a generated retry policy of
    /// the spec selects by ending: the plan cannot be applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captured: Vec<Captured>,
    /// Generated policies of the spec that select names another spec's generated
    /// policies select too: the plan cannot be applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<Overlap>,
    /// Queues replaced blue/green by `apply --migrate` (their replace changes are in
    /// [`Plan::changes`]), and migrations a stopped apply left under way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub migrations: Vec<Migration>,
    /// Queues the plan keeps whose messages it strands: they dead-letter into, or are
    /// the parking queue of, a queue it deletes or replaces ([`strand`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strands: Vec<Strand>,
    /// Dead-letter routes between queues the plan removes: the order apply deletes
    /// them in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feeds: Vec<Feed>,
    /// Delay queues the plan deletes whose messages `apply --migrate` passes on to the
    /// queue they expire into, which the plan keeps ([`pass_on`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_ons: Vec<PassOn>,
    /// Users whose password was not known when the plan was made (a pull-request job
    /// plans without the applications' secrets), with what was missing. Their
    /// passwords are not compared, and `apply` refuses the plan.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_passwords: BTreeMap<String, String>,
    /// Counts by action.
    pub summary: Summary,
    /// What the plan was made from, to check again under the locks (`apply SPEC`);
    /// never saved: a saved plan is recomputed from the broker at apply.
    #[serde(skip)]
    pub basis: Option<Basis>,
    /// The vhosts and kinds whose unchanged objects a saved plan may leave out
    /// ([`fold`]); never saved.
    #[serde(skip)]
    pub foldable: BTreeSet<(String, ObjectKind)>,
}

/// One desired object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesiredObject {
    /// The object.
    pub id: ObjectId,
    /// Its normal form.
    pub value: serde_json::Value,
}

/// An object another spec manages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Conflict {
    /// The object.
    pub id: ObjectId,
    /// The spec that manages it.
    pub owner: String,
}

/// Counts of a plan's changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Objects created (not counting those in `recreate`).
    pub create: usize,
    /// Objects updated in place.
    pub update: usize,
    /// Objects deleted and created again.
    pub replace: usize,
    /// Objects deleted.
    pub delete: usize,
    /// Changes that lose messages (a queue that can be migrated is counted under
    /// `migrate` instead).
    pub data_loss: usize,
    /// Queues migrated by `apply --migrate`, or whose migration is under way.
    #[serde(default)]
    pub migrate: usize,
    /// Existing objects recorded as the spec's, unchanged.
    #[serde(default)]
    pub adopt: usize,
    /// Unchanged bindings created again because an object they hang on is replaced.
    #[serde(default)]
    pub recreate: usize,
}

impl Plan {
    /// Whether the broker differs from the spec where warren makes no change: another's
    /// policy overrides what the spec sets (drift) or breaks what a queue is for
    /// (hazards). `plan --detailed-exitcode` counts it as a difference.
    pub fn differs_from_spec(&self) -> bool {
        !self.drift.is_empty() || !self.hazards.is_empty()
    }

    /// Whether applying the plan would change anything: an object, the spec's record
    /// (objects it adopts), or a migration under way.
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty() || !self.adopted.is_empty() || !self.migrations.is_empty()
    }

    /// The migration that carries out `change` under `apply --migrate`, if any.
    pub fn migration_of(&self, change: &Change) -> Option<&Migration> {
        self.migrations.iter().find(|m| m.carries_out(change))
    }

    /// The queue a deleted delay queue's messages are passed on to by
    /// `apply --migrate`, if it is one ([`pass_on`]).
    pub fn pass_on_of(&self, change: &Change) -> Option<&PassOn> {
        (change.action == Action::Delete)
            .then(|| self.pass_ons.iter().find(|p| p.from == change.id))
            .flatten()
    }

    /// Whether `apply --migrate` moves what the change removes instead of losing it:
    /// a migrated queue, or a delay queue whose messages are passed on.
    pub fn moves_messages_of(&self, change: &Change) -> bool {
        self.migration_of(change).is_some() || self.pass_on_of(change).is_some()
    }

    /// Why the plan cannot be applied, if it cannot: it takes over another spec's objects,
    /// its policies would capture queues it does not declare, or overlap another spec's,
    /// or policies of equal priority tie on a managed queue or exchange.
    pub fn refusal(&self) -> Option<Refusal> {
        Refusal::of(&self.conflicts, &self.captured, &self.overlaps, &self.ties)
    }

    /// Recounts the summary (after message counts were filled in).
    pub fn summarize(&mut self) {
        let mut summary = Summary::default();
        for change in &self.changes {
            match change.action {
                Action::Create if change.is_recreated() => summary.recreate += 1,
                Action::Create => summary.create += 1,
                Action::Update => summary.update += 1,
                Action::Replace => summary.replace += 1,
                Action::Delete => summary.delete += 1,
            }
            if change.loses_data() && !self.moves_messages_of(change) {
                summary.data_loss += 1;
            }
        }
        summary.migrate = self.migrations.len();
        summary.adopt = self.adopted.len();
        self.summary = summary;
    }

    /// Records the message counts of [`Plan::queues_needing_counts`], in that order,
    /// and recounts the summary.
    pub fn set_message_counts(&mut self, queues: &[(String, String)], counts: Vec<Option<u64>>) {
        let counts: BTreeMap<(&str, &str), Option<u64>> = queues
            .iter()
            .map(|(vhost, name)| (vhost.as_str(), name.as_str()))
            .zip(counts)
            .collect();
        for change in &mut self.changes {
            if change.id.kind != ObjectKind::Queue {
                continue;
            }
            let key = (
                change.id.vhost.as_deref().unwrap_or_default(),
                change.id.name.as_str(),
            );
            if let Some(count) = counts.get(&key) {
                change.messages = *count;
            }
        }
        for strand in &mut self.strands {
            let key = (
                strand.queue.vhost.as_deref().unwrap_or_default(),
                strand.queue.name.as_str(),
            );
            if let Some(count) = counts.get(&key) {
                strand.messages = *count;
            }
        }
        for migration in &mut self.migrations {
            let key = (
                migration.queue.vhost.as_deref().unwrap_or_default(),
                migration.temporary.as_str(),
            );
            if let Some(count) = counts.get(&key) {
                migration.temporary_messages = *count;
            }
        }
        self.summarize();
    }

    /// The objects the spec manages once the plan is applied.
    pub fn managed(&self) -> impl Iterator<Item = &ObjectId> {
        self.desired.iter().map(|d| &d.id)
    }

    /// The desired objects as a map.
    pub fn desired_objects(&self) -> Objects {
        self.desired
            .iter()
            .map(|d| (d.id.clone(), d.value.clone()))
            .collect()
    }

    /// Queues whose message counts the plan needs: deleted or replaced, the queues
    /// whose messages it strands, and the temporary queues of migrations under way.
    pub fn queues_needing_counts(&self) -> Vec<(String, String)> {
        let temporaries = self
            .migrations
            .iter()
            .filter(|m| m.stage == Stage::MoveBack)
            .map(|m| {
                (
                    m.queue.vhost.clone().unwrap_or_default(),
                    m.temporary.clone(),
                )
            });
        self.changes
            .iter()
            .filter(|c| {
                c.id.kind == ObjectKind::Queue
                    && matches!(c.action, Action::Delete | Action::Replace)
            })
            .map(|c| (c.id.vhost.clone().unwrap_or_default(), c.id.name.clone()))
            .chain(
                self.stranded_queues()
                    .map(|id| (id.vhost.clone().unwrap_or_default(), id.name.clone())),
            )
            .chain(temporaries)
            .collect()
    }

    /// The queues whose messages the plan strands, each once.
    pub fn stranded_queues(&self) -> impl Iterator<Item = &ObjectId> {
        let queues: BTreeSet<&ObjectId> = self.strands.iter().map(|s| &s.queue).collect();
        queues.into_iter()
    }
}

/// Everything a plan is made from.
pub struct Inputs<'a> {
    /// Spec name.
    pub spec: &'a str,
    /// The environment the spec was read for ([`Plan::environment`]).
    pub environment: Option<&'a str>,
    /// Target version.
    pub target_version: String,
    /// Broker version, if planning against a broker.
    pub broker_version: Option<String>,
    /// The desired objects, in normal form.
    pub desired: Objects,
    /// Clear passwords of the spec's users (to recognise an unchanged password under
    /// another salt).
    pub passwords: &'a Passwords,
    /// Live definitions (of at least the vhosts in scope, and the global parameters).
    pub live: &'a Definitions,
    /// Every spec's record found on the broker.
    pub records: BTreeMap<String, Record>,
    /// The user warren logs in as (never deleted).
    pub protected_user: Option<String>,
    /// Delete objects no spec manages.
    pub prune_unmanaged: bool,
    /// What each of the spec's queues is for (its consumer contract): the plan's
    /// [`Plan::hazards`] are found for these.
    pub roles: &'a QueueRoles,
}

/// The vhosts a spec's plan looks at: declared ones and ones it managed before.
pub fn scope(desired: &Objects, record: Option<&Record>) -> Vec<String> {
    let declared = desired
        .keys()
        .filter(|id| id.kind == ObjectKind::Vhost)
        .map(|id| id.name.clone());
    let mut vhosts: BTreeSet<String> = declared.collect();
    for id in record.map(Record::object_ids).unwrap_or_default() {
        match (id.vhost, id.kind) {
            (Some(vhost), _) => vhosts.insert(vhost),
            (None, ObjectKind::Vhost) => vhosts.insert(id.name),
            (None, _) => false,
        };
    }
    vhosts.into_iter().collect()
}

/// Live objects within a scope: vhost-scoped objects of those vhosts, and users;
/// without the objects of migrations under way (see [`live_migration_queues`]).
pub fn live_objects(live: &Definitions, vhosts: &[String]) -> Objects {
    live_in_scope(live, vhosts).0
}

/// The temporary queues of migrations under way within a scope.
pub fn live_migration_queues(live: &Definitions, vhosts: &[String]) -> Objects {
    live_in_scope(live, vhosts)
        .1
        .into_iter()
        .filter(|(id, _)| id.kind == ObjectKind::Queue)
        .collect()
}

/// Live objects within a scope, split into ordinary objects and migration objects.
fn live_in_scope(live: &Definitions, vhosts: &[String]) -> (Objects, Objects) {
    objects(live)
        .into_iter()
        .filter(|(id, _)| match (&id.vhost, id.kind) {
            (Some(vhost), _) => vhosts.contains(vhost),
            (None, ObjectKind::Vhost) => vhosts.contains(&id.name),
            (None, _) => true,
        })
        .partition(|(id, value)| !is_migration_object(id, value))
}

/// The broker's identity: its `internal_cluster_id`, shared by the nodes of a cluster
/// and kept across restarts (its `cluster_name` differs per node).
pub fn broker_id(live: &Definitions) -> Option<String> {
    live.global_parameters
        .iter()
        .find(|p| p.name == BROKER_ID_PARAMETER)
        .and_then(|p| p.value.as_str())
        .map(str::to_string)
}

/// Builds a plan (message counts are filled in by the caller for
/// [`Plan::queues_needing_counts`], see [`Plan::set_message_counts`]).
pub fn build(inputs: Inputs<'_>) -> Plan {
    let record = inputs.records.get(inputs.spec);
    let vhosts = scope(&inputs.desired, record);
    let mut desired = inputs.desired;
    let (live, migration_objects) = live_in_scope(inputs.live, &vhosts);
    let mut ownership = Ownership {
        managed: record.map(Record::object_ids).unwrap_or_default(),
        protected_user: inputs.protected_user.clone(),
        ..Ownership::default()
    };
    for (spec, other) in &inputs.records {
        if spec != inputs.spec {
            for id in other.object_ids() {
                ownership.others.insert(id, spec.clone());
            }
        }
    }
    let result = diff::diff(
        &desired,
        &live,
        &ownership,
        inputs.passwords,
        inputs.prune_unmanaged,
    );
    // An unchanged user keeps the live hash (the same password under the broker's
    // salt): the plan's desired state must compare equal without the clear password.
    // A user whose password is unknown keeps the live one whatever else changes.
    let changed: BTreeSet<&ObjectId> = result.changes.iter().map(|c| &c.id).collect();
    for (id, value) in desired.iter_mut() {
        if id.kind != ObjectKind::User {
            continue;
        }
        let Some(have) = live.get(id) else {
            continue;
        };
        if !changed.contains(id) {
            *value = have.clone();
        } else if inputs.passwords.unknown.contains_key(&id.name) {
            for key in ["password_hash", "hashing_algorithm"] {
                value[key] = have[key].clone();
            }
        }
    }
    let serial = record.map(|r| r.serial).unwrap_or(0);
    let mut changes = result.changes;
    attach_binding_handles(&mut changes, inputs.live);
    // Objects found exactly as declared become the spec's at apply, unless another
    // spec owns them (those are conflicts).
    let changed: BTreeSet<&ObjectId> = changes.iter().map(|c| &c.id).collect();
    let conflicting: BTreeSet<&ObjectId> = result.conflicts.iter().map(|(id, _)| id).collect();
    let adopted: Vec<ObjectId> = desired
        .keys()
        .filter(|id| {
            !ownership.managed.contains(id)
                && live.contains_key(id)
                && !changed.contains(id)
                && !conflicting.contains(id)
        })
        .cloned()
        .collect();
    let target = inputs
        .target_version
        .parse()
        .unwrap_or(TargetVersion::DEFAULT);
    let applied = depends::applied(
        &desired,
        &live,
        &changes,
        target,
        (&ownership.others, inputs.spec),
        inputs.roles,
    );
    let foldable = fold::foldable(&ownership.managed, &live, &desired, &changed);
    let migrations = migration::find(&desired, &migration_objects, &live, &changes, target);
    let (captured, overlaps) =
        capture::find(&desired, &live, &ownership.managed, &ownership.others);
    let (strands, feeds) = strand::find(inputs.live, &vhosts, &changes, target);
    let migrated: Vec<&ObjectId> = migrations.iter().map(|m| &m.queue).collect();
    let pass_ons = pass_on::find(inputs.live, &vhosts, &changes, &migrated, target);
    let mut plan = Plan {
        format: PLAN_FORMAT.to_string(),
        redacted: false,
        spec: inputs.spec.to_string(),
        environment: inputs.environment.map(String::from),
        target_version: inputs.target_version,
        broker_version: inputs.broker_version,
        vhosts,
        serial,
        broker_id: broker_id(inputs.live),
        prune_unmanaged: inputs.prune_unmanaged,
        desired: desired
            .into_iter()
            .map(|(id, value)| DesiredObject { id, value })
            .collect(),
        unchanged: Vec::new(),
        changes,
        adopted,
        dependencies: Some(applied.dependencies),
        unchanged_dependencies: Vec::new(),
        ties: applied.ties,
        drift: applied.drift,
        hazards: applied.hazards,
        unmanaged: result.unmanaged,
        conflicts: result
            .conflicts
            .into_iter()
            .map(|(id, owner)| Conflict { id, owner })
            .collect(),
        captured,
        overlaps,
        migrations,
        strands,
        feeds,
        pass_ons,
        unknown_passwords: inputs.passwords.unknown.clone(),
        summary: Summary::default(),
        basis: None,
        foldable,
    };
    plan.summarize();
    plan
}

/// Bindings are deleted by their `properties_key`, which only the broker knows.
fn attach_binding_handles(changes: &mut [Change], live: &Definitions) {
    let handles: BTreeMap<ObjectId, String> = live
        .bindings
        .iter()
        .filter_map(|binding| {
            let key = binding.extra.get("properties_key")?.as_str()?.to_string();
            Some((normalized_binding_id(binding), key))
        })
        .collect();
    for change in changes.iter_mut() {
        if change.id.kind == ObjectKind::Binding && change.action == Action::Delete {
            change.handle = handles.get(&change.id).cloned();
        }
    }
}

#[cfg(test)]
impl Plan {
    /// A summarized plan of spec `shop` (serial 3) against RabbitMQ 4.0.5 with these
    /// changes and desired objects and nothing else: the renderers' test fixture.
    pub(crate) fn of_changes(changes: Vec<Change>, desired: Vec<DesiredObject>) -> Plan {
        let mut plan = Plan {
            format: PLAN_FORMAT.into(),
            redacted: false,
            spec: "shop".into(),
            environment: None,
            target_version: "4.0".into(),
            broker_version: Some("4.0.5".into()),
            vhosts: vec!["shop".into()],
            serial: 3,
            broker_id: None,
            prune_unmanaged: false,
            desired,
            unchanged: vec![],
            changes,
            adopted: vec![],
            dependencies: None,
            unchanged_dependencies: vec![],
            ties: vec![],
            drift: vec![],
            hazards: vec![],
            unmanaged: vec![],
            conflicts: vec![],
            captured: vec![],
            overlaps: vec![],
            migrations: vec![],
            strands: vec![],
            feeds: vec![],
            pass_ons: vec![],
            unknown_passwords: Default::default(),
            summary: Summary::default(),
            basis: None,
            foldable: BTreeSet::new(),
        };
        plan.summarize();
        plan
    }
}
