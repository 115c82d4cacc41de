//! A saved plan's size grows with its changes, not with the topology: the exchanges,
//! queues and bindings the plan leaves as they are are not listed one by one in its
//! `desired` state, but counted and digested per vhost and kind ([`Unchanged`]).
//!
//! Why that is enough for `apply PLAN` to recompute the plan exactly: such an object is
//! in the spec's record, exists, and its desired value *is* its live value (for these
//! kinds the diff compares by plain equality). At apply the record is the same one (a
//! plan whose spec was applied since is stale before anything is read here), so the
//! objects are found again as the record's objects of that vhost and kind that exist,
//! are not listed and are not changed; their desired values are their live values, and
//! the count and digest of those values must be the plan's. Anything changed by hand in
//! between (a queue deleted, an exchange declared again with other arguments, a binding
//! gone) changes the digest, and the plan is stale, as it is when the full list is
//! compared.
//!
//! A group is folded only when that rule, applied to the broker the plan was made
//! against, finds exactly the objects folded (never, say, an object of the record the
//! spec no longer declares but somebody already deleted, or one another spec claims
//! too): what cannot be found again the same way stays listed.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::recheck::Mismatch;
use super::{Dependency, Plan};
use crate::model::objects::Objects;
use crate::model::record::Record;
use crate::model::{Definitions, ObjectId, ObjectKind};

/// The kinds folded: those a topology holds thousands of, all compared by plain
/// equality (a user's password and a vhost's metadata are not).
const FOLDED_KINDS: [ObjectKind; 3] =
    [ObjectKind::Exchange, ObjectKind::Queue, ObjectKind::Binding];

/// The unchanged objects of one vhost and kind that a saved plan does not list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unchanged {
    /// The vhost.
    pub vhost: String,
    /// The kind: `exchange`, `queue` or `binding`.
    pub kind: ObjectKind,
    /// How many objects.
    pub count: usize,
    /// `sha256:` and the digest of their ids and normal forms, in id order, with the
    /// keys of every JSON object sorted.
    pub digest: String,
    /// For dependencies: the policies they name (a dependency without its object), one
    /// group per vhost, kind and policies, so that a refusal can name the object that
    /// moved and what applied to it before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<Value>,
}

/// The group an object of a folded kind belongs to.
type Group = (String, ObjectKind);

fn group_of(id: &ObjectId) -> Option<Group> {
    if !FOLDED_KINDS.contains(&id.kind) {
        return None;
    }
    Some((id.vhost.clone()?, id.kind))
}

/// The objects the rule finds, by group: the record's objects (`owned`) of a folded
/// kind that exist in `live` (the scope's live objects), are not in `listed` and are
/// not `changed`, with their live values.
fn found<'a>(
    owned: &BTreeSet<ObjectId>,
    live: &'a Objects,
    listed: &BTreeSet<&ObjectId>,
    changed: &BTreeSet<&ObjectId>,
) -> BTreeMap<Group, Vec<(&'a ObjectId, &'a Value)>> {
    let mut groups: BTreeMap<Group, Vec<(&ObjectId, &Value)>> = BTreeMap::new();
    for id in owned {
        let Some(group) = group_of(id) else {
            continue;
        };
        if listed.contains(id) || changed.contains(id) {
            continue;
        }
        if let Some((id, value)) = live.get_key_value(id) {
            groups.entry(group).or_default().push((id, value));
        }
    }
    groups
}

/// The groups of the plan just built whose unchanged objects its saved form may leave
/// out: those where every object the rule finds is desired as it is. In such a group
/// the desired objects that are not changed, adopted or another spec's are exactly
/// the ones the rule finds (desired and not changed means live as desired; not
/// adopted and not another's means in the record).
pub(super) fn foldable(
    owned: &BTreeSet<ObjectId>,
    live: &Objects,
    desired: &Objects,
    changed: &BTreeSet<&ObjectId>,
) -> BTreeSet<(String, ObjectKind)> {
    found(owned, live, &BTreeSet::new(), changed)
        .into_iter()
        .filter(|(_, objects)| {
            objects
                .iter()
                .all(|(id, value)| desired.get(*id) == Some(*value))
        })
        .map(|(group, _)| group)
        .collect()
}

impl Plan {
    /// The plan as `plan -o` saves it: the foldable unchanged objects that are not in
    /// `keep` are counted and digested instead of listed. `keep` holds what a reader of
    /// the file needs besides the changes (the picture `show` draws around them).
    pub fn folded(&self, keep: &BTreeSet<ObjectId>) -> Plan {
        let mut saved = self.clone();
        let mut groups: BTreeMap<Group, Vec<(&ObjectId, &Value)>> = BTreeMap::new();
        let listed: BTreeSet<&ObjectId> = (self.changes.iter().map(|c| &c.id))
            .chain(&self.adopted)
            .chain(self.conflicts.iter().map(|c| &c.id))
            .chain(keep)
            .collect();
        saved.desired.clear();
        for object in &self.desired {
            let group = group_of(&object.id)
                .filter(|group| self.foldable.contains(group) && !listed.contains(&object.id));
            match group {
                Some(group) => groups
                    .entry(group)
                    .or_default()
                    .push((&object.id, &object.value)),
                None => saved.desired.push(object.clone()),
            }
        }
        let folded: BTreeSet<&ObjectId> = groups.values().flatten().map(|(id, _)| *id).collect();
        saved.unchanged = summaries(groups);
        // What applies to a folded object is folded with it: the policies that apply
        // to thousands of queues are as many entries.
        if let Some(dependencies) = &mut saved.dependencies {
            let (out, listed): (Vec<Dependency>, Vec<Dependency>) = std::mem::take(dependencies)
                .into_iter()
                .partition(|d| folded.contains(&d.id));
            *dependencies = listed;
            saved.unchanged_dependencies = dependency_summaries(&out);
        }
        saved.foldable.clear();
        saved
    }

    /// The desired objects, with those a saved plan folded found again on the broker
    /// (`live`) by the spec's record as it is now: stale when they are not the ones the
    /// plan was made with.
    pub(super) fn desired_found_in(
        &self,
        record: Option<&Record>,
        live: &Definitions,
    ) -> Result<Found, Mismatch> {
        let mut desired = self.desired_objects();
        let mut folded = BTreeSet::new();
        if self.unchanged.is_empty() {
            return Ok(Found { desired, folded });
        }
        let live = super::live_objects(live, &self.vhosts);
        let live = &live;
        let listed: BTreeSet<&ObjectId> = self.desired.iter().map(|d| &d.id).collect();
        let changed: BTreeSet<&ObjectId> = self.changes.iter().map(|c| &c.id).collect();
        let owned = record.map(Record::object_ids).unwrap_or_default();
        let mut found = found(&owned, live, &listed, &changed);
        for group in &self.unchanged {
            let objects = found
                .remove(&(group.vhost.clone(), group.kind))
                .unwrap_or_default();
            let now = digest(objects.iter().copied());
            if objects.len() != group.count || now != group.digest {
                let how = match objects.len().cmp(&group.count) {
                    std::cmp::Ordering::Equal => "some differ",
                    std::cmp::Ordering::Less => "some are gone",
                    std::cmp::Ordering::Greater => "some are back",
                };
                return Err(Mismatch::Changes(format!(
                    "{} in vhost `{}` that the plan leaves unchanged were changed since it was made ({} when planned, {} found now, {how})",
                    group.kind.plural(),
                    group.vhost,
                    group.count,
                    objects.len(),
                )));
            }
            folded.extend(objects.iter().map(|(id, _)| (*id).clone()));
            desired.extend(objects.into_iter().map(|(id, v)| (id.clone(), v.clone())));
        }
        Ok(Found { desired, folded })
    }

    /// The dependencies found now (`now`, of the plan made again) without those of the
    /// folded objects, once these are the plan's ([`Plan::unchanged_dependencies`]):
    /// the rest is compared one by one.
    pub(super) fn listed_dependencies(
        &self,
        folded: &BTreeSet<ObjectId>,
        now: &[Dependency],
    ) -> Result<Vec<Dependency>, Mismatch> {
        let (out, listed): (Vec<Dependency>, Vec<Dependency>) =
            now.iter().cloned().partition(|d| folded.contains(&d.id));
        let found = dependency_summaries(&out);
        if found == self.unchanged_dependencies {
            return Ok(listed);
        }
        Err(Mismatch::Changes(self.dependency_moved(&found, &out)))
    }

    /// Why the dependencies of the folded objects found now (`found`, of `now`) are
    /// not the plan's: the object that now has policies no object of its group had
    /// when planned, and what applied to it then, when that can be told; the group
    /// otherwise.
    fn dependency_moved(&self, found: &[Unchanged], now: &[Dependency]) -> String {
        let planned = &self.unchanged_dependencies;
        let same_group = |a: &Unchanged, b: &Unchanged| (&a.vhost, a.kind) == (&b.vhost, b.kind);
        let new_policies = found.iter().find(|f| {
            !planned
                .iter()
                .any(|p| same_group(p, f) && p.applied == f.applied)
        });
        if let Some(group) = new_policies {
            let moved = now.iter().find(|d| {
                group_of(&d.id) == Some((group.vhost.clone(), group.kind))
                    && Some(applied(d)) == group.applied
            });
            // What applied before: the one group of its vhost and kind that lost objects.
            let shrunk: Vec<&Unchanged> = planned
                .iter()
                .filter(|p| same_group(p, group))
                .filter(|p| {
                    let now_count = found
                        .iter()
                        .find(|f| same_group(f, p) && f.applied == p.applied)
                        .map_or(0, |f| f.count);
                    now_count < p.count
                })
                .collect();
            if let (Some(moved), [before]) = (moved, shrunk.as_slice()) {
                let mut was = serde_json::to_value(moved).expect("dependencies serialize");
                if let (Some(was), Some(Value::Object(before))) =
                    (was.as_object_mut(), &before.applied)
                {
                    was.retain(|key, _| key == "id");
                    was.extend(before.clone());
                }
                if let Ok(was) = serde_json::from_value::<Dependency>(was)
                    && let Some(difference) = was.difference(moved)
                {
                    return difference;
                }
            }
            if let (Some(moved), []) = (moved, shrunk.as_slice()) {
                let none = Dependency {
                    id: moved.id.clone(),
                    policy: None,
                    operator_policy: None,
                    policy_tie: Vec::new(),
                    operator_policy_tie: Vec::new(),
                };
                if let Some(difference) = none.difference(moved) {
                    return difference;
                }
            }
        }
        let differing = found
            .iter()
            .chain(planned)
            .find(|u| !found.contains(u) || !planned.contains(u))
            .expect("summaries that differ differ somewhere");
        let count = |list: &[Unchanged]| -> usize {
            list.iter()
                .filter(|u| same_group(u, differing))
                .map(|u| u.count)
                .sum()
        };
        format!(
            "the policies that apply to the {} in vhost `{}` that the plan leaves unchanged are not the ones planned ({} with a policy when planned, {} now)",
            differing.kind.plural(),
            differing.vhost,
            count(planned),
            count(found),
        )
    }
}

/// The desired objects of a saved plan, whole again, and which of them it had folded.
pub(super) struct Found {
    /// Every desired object.
    pub desired: Objects,
    /// Those found again by the record.
    pub folded: BTreeSet<ObjectId>,
}

/// One summary per group.
fn summaries(groups: BTreeMap<Group, Vec<(&ObjectId, &Value)>>) -> Vec<Unchanged> {
    groups
        .into_iter()
        .map(|(group, objects)| summary(group, &objects, None))
        .collect()
}

/// The summary of one group's `objects` (in id order), and for dependencies the
/// policies they name.
fn summary(
    (vhost, kind): Group,
    objects: &[(&ObjectId, &Value)],
    applied: Option<Value>,
) -> Unchanged {
    Unchanged {
        vhost,
        kind,
        count: objects.len(),
        digest: digest(objects.iter().copied()),
        applied,
    }
}

/// What a dependency names, without its object.
fn applied(dependency: &Dependency) -> Value {
    without_id(serde_json::to_value(dependency).expect("dependencies serialize"))
}

/// A serialized dependency without its `id`.
fn without_id(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut() {
        object.remove("id");
    }
    value
}

/// The summaries of `dependencies`, grouped by their object's vhost and kind and by the
/// policies they name. Each dependency is serialized once: its value is digested, and
/// without its id it is its group's key and `applied`.
fn dependency_summaries(dependencies: &[Dependency]) -> Vec<Unchanged> {
    type Members<'a> = (Value, Vec<(&'a ObjectId, Value)>);
    let mut groups: BTreeMap<(Group, String), Members> = BTreeMap::new();
    for dependency in dependencies {
        let Some(group) = group_of(&dependency.id) else {
            continue;
        };
        let value = serde_json::to_value(dependency).expect("dependencies serialize");
        let named = without_id(value.clone());
        groups
            .entry((group, named.to_string()))
            .or_insert_with(|| (named, Vec::new()))
            .1
            .push((&dependency.id, value));
    }
    groups
        .into_iter()
        .map(|((group, _), (named, mut members))| {
            members.sort_by(|a, b| a.0.cmp(b.0));
            let objects: Vec<(&ObjectId, &Value)> =
                members.iter().map(|(id, value)| (*id, value)).collect();
            summary(group, &objects, Some(named))
        })
        .collect()
}

/// `sha256:` and the digest of `objects` (in the order given).
fn digest<'a>(objects: impl Iterator<Item = (&'a ObjectId, &'a Value)>) -> String {
    let mut hasher = Sha256::new();
    for (id, value) in objects {
        hasher.update(serde_json::to_string(id).expect("ids serialize"));
        hasher.update(b"\t");
        canonical(value, &mut hasher);
        hasher.update(b"\n");
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// Feeds `value` as JSON with every object's keys sorted: two values the diff holds
/// equal (key order does not count) digest the same.
fn canonical(value: &Value, hasher: &mut Sha256) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hasher.update(b"{");
            for (n, key) in keys.into_iter().enumerate() {
                if n > 0 {
                    hasher.update(b",");
                }
                hasher.update(serde_json::to_string(key).expect("strings serialize"));
                hasher.update(b":");
                canonical(&map[key], hasher);
            }
            hasher.update(b"}");
        }
        Value::Array(items) => {
            hasher.update(b"[");
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    hasher.update(b",");
                }
                canonical(item, hasher);
            }
            hasher.update(b"]");
        }
        scalar => hasher.update(scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::model::objects::objects;
    use crate::model::record::records;
    use crate::plan::{Inputs, build, recheck};

    fn definitions(value: Value) -> Definitions {
        serde_json::from_value(value).unwrap()
    }

    /// The spec: exchange `in`, queues `a`, `b`, `c` bound to it.
    fn desired() -> Definitions {
        let queues = ["a", "b", "c"].map(|name| {
            json!({"name": name, "vhost": "shop", "durable": true, "auto_delete": false,
                   "arguments": {"x-queue-type": "quorum"}})
        });
        let bindings = ["a", "b", "c"].map(|name| {
            json!({"source": "in", "vhost": "shop", "destination": name,
                   "destination_type": "queue", "routing_key": name, "arguments": {}})
        });
        definitions(json!({
            "vhosts": [{"name": "shop"}],
            "exchanges": [{"name": "in", "vhost": "shop", "type": "topic", "durable": true,
                           "auto_delete": false, "internal": false, "arguments": {}}],
            "queues": queues,
            "bindings": bindings
        }))
    }

    /// The broker: the spec applied before, with `c` declared classic (so the plan
    /// replaces it), an owned queue `old` the spec no longer has, an owned queue `lost`
    /// already deleted by hand, and another application's queue.
    fn live_json() -> Value {
        let mut live = serde_json::to_value(desired()).unwrap();
        live["queues"][2]["arguments"]["x-queue-type"] = json!("classic");
        let queues = live["queues"].as_array_mut().unwrap();
        queues.push(json!({"name": "old", "vhost": "shop", "durable": true, "auto_delete": false, "arguments": {}}));
        queues.push(json!({"name": "theirs", "vhost": "shop", "durable": true, "auto_delete": false, "arguments": {}}));
        let mut owned: Vec<Value> = objects(&desired())
            .keys()
            .map(|id| json!([id.kind, id.vhost, id.name]))
            .collect();
        owned.push(json!(["queue", "shop", "old"]));
        owned.push(json!(["queue", "shop", "lost"]));
        live["global_parameters"] = json!([
            {"name": "internal_cluster_id", "value": "rabbitmq-cluster-id-A"},
            {"name": "warren.shop", "value": {"format": 1, "spec": "shop", "serial": 2, "objects": owned}}
        ]);
        live
    }

    fn plan_against(live: &Definitions) -> Plan {
        build(Inputs {
            spec: "shop",
            environment: None,
            target_version: "4.0".into(),
            broker_version: None,
            desired: objects(&desired()),
            passwords: &Default::default(),
            live,
            records: records(&live.global_parameters).unwrap(),
            protected_user: None,
            prune_unmanaged: false,
            roles: &Default::default(),
        })
    }

    /// The plan as written to a file and read back.
    fn saved(plan: &Plan, keep: &BTreeSet<ObjectId>) -> Plan {
        serde_json::from_str(&serde_json::to_string(&plan.folded(keep)).unwrap()).unwrap()
    }

    fn names(plan: &Plan) -> Vec<String> {
        plan.desired.iter().map(|d| d.id.to_string()).collect()
    }

    #[test]
    fn unchanged_objects_are_counted_and_found_again_at_apply() {
        let live = definitions(live_json());
        let plan = plan_against(&live);
        let saved = saved(&plan, &BTreeSet::new());
        // Listed: the vhost, the replaced queue `c` and its binding (created again).
        // Counted: the exchange, queues `a` and `b`, and their bindings.
        let counted: Vec<(ObjectKind, usize)> =
            saved.unchanged.iter().map(|u| (u.kind, u.count)).collect();
        assert_eq!(
            counted,
            [
                (ObjectKind::Exchange, 1),
                (ObjectKind::Queue, 2),
                (ObjectKind::Binding, 2)
            ],
            "{:#?}",
            saved.unchanged
        );
        assert_eq!(
            saved.desired.len(),
            plan.desired.len() - 5,
            "{:?}",
            names(&saved)
        );
        let fresh = recheck(&saved, &live, None).unwrap();
        assert_eq!(
            serde_json::to_value(&fresh.changes).unwrap(),
            serde_json::to_value(&plan.changes).unwrap()
        );
        assert_eq!(
            names(&fresh),
            names(&plan),
            "the desired state is whole again"
        );
        // Another application's queue comes and goes: not the plan's business.
        let mut busier = live_json();
        busier["queues"].as_array_mut().unwrap().push(json!(
            {"name": "amq.gen-reply", "vhost": "shop", "durable": false, "auto_delete": true, "arguments": {}}
        ));
        assert!(recheck(&saved, &definitions(busier), None).is_ok());
    }

    #[test]
    fn what_is_kept_stays_listed() {
        let live = definitions(live_json());
        let plan = plan_against(&live);
        let a = ObjectId::in_vhost(ObjectKind::Queue, "shop", "a");
        let saved = saved(&plan, &[a.clone()].into());
        assert!(saved.desired.iter().any(|d| d.id == a));
        let queues = saved.unchanged.iter().find(|u| u.kind == ObjectKind::Queue);
        assert_eq!(queues.map(|u| u.count), Some(1));
        assert!(recheck(&saved, &live, None).is_ok());
    }

    /// Whatever changed by hand among the objects left out makes the plan stale, as it
    /// does when they are listed: the same refusal a full plan gets, named by vhost and
    /// kind.
    #[test]
    fn an_object_left_out_and_changed_since_makes_the_plan_stale() {
        let live = definitions(live_json());
        let saved = saved(&plan_against(&live), &BTreeSet::new());
        let stale = |live: Value| {
            recheck(&saved, &definitions(live), None)
                .unwrap_err()
                .to_string()
        };
        let mut changed = live_json();
        changed["queues"][0]["arguments"]["x-max-length"] = json!(10);
        let why = stale(changed);
        assert!(
            why.contains("queues in vhost `shop`") && why.contains("some differ"),
            "{why}"
        );
        let mut unbound = live_json();
        unbound["bindings"].as_array_mut().unwrap().remove(0);
        let why = stale(unbound);
        assert!(
            why.contains("bindings in vhost `shop`") && why.contains("2 when planned, 1 found now"),
            "{why}"
        );
        let mut retyped = live_json();
        retyped["exchanges"][0]["type"] = json!("direct");
        assert!(stale(retyped).contains("exchanges in vhost `shop`"));
    }

    /// What applies to an object left out is checked as the object is: another team's
    /// policy that now reaches queue `a` makes the plan stale.
    #[test]
    fn a_policy_that_now_applies_to_an_object_left_out_makes_the_plan_stale() {
        let live = definitions(live_json());
        let saved = saved(&plan_against(&live), &BTreeSet::new());
        assert!(saved.unchanged_dependencies.is_empty());
        let mut reached = live_json();
        reached["policies"] = json!([{"name": "team-b", "vhost": "shop", "pattern": "^a$",
            "apply-to": "queues", "definition": {"max-length": 5}, "priority": 1}]);
        let why = recheck(&saved, &definitions(reached), None)
            .unwrap_err()
            .to_string();
        assert!(
            why.contains("the policy applied to queue \"a\" in vhost \"shop\" is now `team-b`"),
            "{why}"
        );
    }

    /// A group is left out only when the record finds exactly its objects again. Queue
    /// `old` is in this spec's record and in another's: the plan neither deletes it
    /// (another spec claims it) nor desires it, so the record would find it among the
    /// unchanged queues at apply; the queues stay listed, the rest is left out.
    #[test]
    fn a_group_the_record_would_not_find_again_stays_listed() {
        let mut live = live_json();
        live["global_parameters"]
            .as_array_mut()
            .unwrap()
            .push(json!(
                {"name": "warren.other", "value": {"format": 1, "spec": "other", "serial": 1,
                  "objects": [["queue", "shop", "old"]]}}
            ));
        let live = definitions(live);
        let plan = plan_against(&live);
        assert!(
            !plan.changes.iter().any(|c| c.id.name == "old"),
            "{:#?}",
            plan.changes
        );
        let saved = saved(&plan, &BTreeSet::new());
        let kinds: Vec<ObjectKind> = saved.unchanged.iter().map(|u| u.kind).collect();
        assert_eq!(kinds, [ObjectKind::Exchange, ObjectKind::Binding]);
        assert!(saved.desired.iter().any(|d| d.id.name == "a"));
        assert!(recheck(&saved, &live, None).is_ok());
    }
}
