//! What `apply SPEC` reads again once it holds its locks, instead of the whole broker.
//!
//! `apply SPEC` plans, takes the locks that plan needs, and may only apply what still
//! holds under them. Reading every listing again costs as much as the plan's own read:
//! on a large broker, most of the time of a small change. What a plan's changes rest on
//! is much less, and cheap to read again. That is its basis:
//!
//! - the global parameters: every ownership record (claims, serials) and the broker's
//!   identity;
//! - the small listings of its scope: vhosts, users, permissions, parameters (limits,
//!   operator policies, shovels…) and policies;
//! - the queues, exchanges and bindings it changes or adopts, read one by one.
//!
//! When the basis read under the locks is what the plan saw, the plan stands. The only
//! thing not read again is the queues, exchanges and bindings the plan leaves alone,
//! and no apply can have changed those in between without changing the basis: every
//! apply (of any spec) writes its record, a global parameter, before it lets go of its
//! locks. A hand-made change to one of them in the moment between the plan's read and
//! the locks is what it would be a moment after the apply: left alone by this apply,
//! shown by the next plan. When anything in the basis differs, or the plan touches more
//! objects than are worth a request each, the apply reads everything and plans again.
//!
//! A saved plan (`apply PLAN`) has no basis: it may be hours old and edited, so its
//! apply always reads everything and recomputes it (`recheck`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::Plan;
use crate::broker::{BindingEnds, Named};
use crate::diff::Change;
use crate::model::objects::objects;
use crate::model::{Definitions, ObjectId, ObjectKind};

/// Past this many queues, exchanges and binding pairs the plan touches, the listings
/// are read instead: one request each, 8 at a time, soon costs more than three listings.
const MOST_NAMED: usize = 64;

/// What a plan was made from, as far as it is read again under the locks.
#[derive(Debug, Clone, Default)]
pub struct Basis {
    /// The queues, exchanges and bindings (by their ends) the plan changes or adopts.
    named: Named,
    /// What the plan saw: the small listings of its scope, the named objects and the
    /// global parameters.
    seen: Definitions,
}

impl Basis {
    /// The basis of `plan`, made against `live`; `None` when it names too many objects.
    pub fn of(plan: &Plan, live: &Definitions) -> Option<Basis> {
        let named = named(plan)?;
        let in_scope = |vhost: &String| plan.vhosts.contains(vhost);
        let seen = Definitions {
            users: live.users.clone(),
            vhosts: live
                .vhosts
                .iter()
                .filter(|v| in_scope(&v.name))
                .cloned()
                .collect(),
            permissions: live
                .permissions
                .iter()
                .filter(|p| in_scope(&p.vhost))
                .cloned()
                .collect(),
            topic_permissions: live
                .topic_permissions
                .iter()
                .filter(|p| in_scope(&p.vhost))
                .cloned()
                .collect(),
            parameters: live
                .parameters
                .iter()
                .filter(|p| in_scope(&p.vhost))
                .cloned()
                .collect(),
            policies: live
                .policies
                .iter()
                .filter(|p| in_scope(&p.vhost))
                .cloned()
                .collect(),
            global_parameters: live.global_parameters.clone(),
            ..Definitions::default()
        };
        let mut basis = Basis { named, seen };
        basis.seen.queues = live
            .queues
            .iter()
            .filter(|q| {
                basis
                    .named
                    .queues
                    .contains(&(q.vhost.clone(), q.name.clone()))
            })
            .cloned()
            .collect();
        basis.seen.exchanges = live
            .exchanges
            .iter()
            .filter(|e| (basis.named.exchanges).contains(&(e.vhost.clone(), e.name.clone())))
            .cloned()
            .collect();
        basis.seen.bindings = live
            .bindings
            .iter()
            .filter(|b| {
                basis.named.bindings.contains(&BindingEnds {
                    vhost: b.vhost.clone(),
                    source: b.source.clone(),
                    destination_type: b.destination_type.clone(),
                    destination: b.destination.clone(),
                })
            })
            .cloned()
            .collect();
        Some(basis)
    }

    /// The queues, exchanges and bindings to read one by one.
    pub fn named(&self) -> &Named {
        &self.named
    }

    /// Whether `now` — the small listings of the plan's scope, the named objects and
    /// the global parameters, read again — is what the plan saw: then a fresh plan
    /// would be the same.
    pub fn holds(&self, now: &Definitions) -> bool {
        let by_name = |definitions: &Definitions| -> BTreeMap<String, Value> {
            definitions
                .global_parameters
                .iter()
                .map(|p| (p.name.clone(), p.value.clone()))
                .collect()
        };
        by_name(&self.seen) == by_name(now) && objects(&self.seen) == objects(now)
    }
}

/// The queues, exchanges and binding ends `plan` changes or adopts; `None` past
/// [`MOST_NAMED`].
fn named(plan: &Plan) -> Option<Named> {
    let desired: BTreeMap<&ObjectId, &Value> =
        plan.desired.iter().map(|d| (&d.id, &d.value)).collect();
    let changed = plan.changes.iter().map(|c: &Change| {
        let value = c.after.as_ref().or(c.before.as_ref());
        (&c.id, value)
    });
    let adopted = plan.adopted.iter().map(|id| (id, desired.get(id).copied()));
    let mut named = Named::default();
    for (id, value) in changed.chain(adopted) {
        let Some(vhost) = id.vhost.clone() else {
            continue;
        };
        match id.kind {
            ObjectKind::Queue => {
                named.queues.insert((vhost, id.name.clone()));
            }
            ObjectKind::Exchange => {
                named.exchanges.insert((vhost, id.name.clone()));
            }
            ObjectKind::Binding => {
                let end = |key: &str| Some(value?.get(key)?.as_str()?.to_string());
                named.bindings.insert(BindingEnds {
                    vhost,
                    source: end("source")?,
                    destination_type: end("destination_type")?,
                    destination: end("destination")?,
                });
            }
            _ => {}
        }
        if named.len() > MOST_NAMED {
            return None;
        }
    }
    Some(named)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::model::objects::objects;
    use crate::model::password::Passwords;
    use crate::plan::{Inputs, build};

    fn definitions(value: Value) -> Definitions {
        serde_json::from_value(value).unwrap()
    }

    /// The broker: a vhost with a work queue, its exchange and binding, a policy, and
    /// the spec's record.
    fn live_json() -> Value {
        json!({
            "vhosts": [{"name": "shop"}],
            "queues": [
                {"name": "work", "vhost": "shop", "durable": true, "auto_delete": false, "arguments": {}},
                {"name": "other", "vhost": "shop", "durable": true, "auto_delete": false, "arguments": {}}
            ],
            "exchanges": [{"name": "in", "vhost": "shop", "type": "direct", "durable": true,
                           "auto_delete": false, "internal": false, "arguments": {}}],
            "bindings": [{"source": "in", "vhost": "shop", "destination": "work",
                          "destination_type": "queue", "routing_key": "work", "arguments": {}}],
            "policies": [{"name": "ttl", "vhost": "shop", "pattern": "^work$", "apply-to": "queues",
                          "definition": {"message-ttl": 1000}, "priority": 0}],
            "global_parameters": [
                {"name": "internal_cluster_id", "value": "rabbitmq-cluster-id-A"},
                {"name": "warren.shop", "value": {"format": 1, "spec": "shop", "serial": 4, "objects": [
                    ["vhost", null, "shop"], ["queue", "shop", "work"], ["exchange", "shop", "in"],
                    ["binding", "shop", "in -> queue work [work]"], ["policy", "shop", "ttl"]]}}
            ]
        })
    }

    /// The spec wants the policy's TTL at 2000: one update.
    fn plan_against(live: &Definitions) -> Plan {
        let mut desired = definitions(live_json());
        desired.queues.retain(|q| q.name == "work");
        desired.global_parameters.clear();
        desired.policies[0]
            .definition
            .insert("message-ttl".into(), json!(2000));
        build(Inputs {
            spec: "shop",
            environment: None,
            target_version: "3.10".into(),
            broker_version: None,
            desired: objects(&desired),
            passwords: &Passwords::default(),
            live,
            records: crate::model::record::records(&live.global_parameters).unwrap(),
            protected_user: None,
            prune_unmanaged: false,
            roles: &Default::default(),
        })
    }

    /// What `apply` reads under the locks: the small listings, the named objects and
    /// the global parameters.
    fn read_again(live: &Definitions, basis: &Basis) -> Definitions {
        let mut now = live.clone();
        let named = basis.named();
        now.queues
            .retain(|q| named.queues.contains(&(q.vhost.clone(), q.name.clone())));
        now.exchanges
            .retain(|e| named.exchanges.contains(&(e.vhost.clone(), e.name.clone())));
        now.bindings.retain(|b| {
            named
                .bindings
                .iter()
                .any(|ends| ends.source == b.source && ends.destination == b.destination)
        });
        now
    }

    #[test]
    fn a_plan_holds_while_its_basis_is_unchanged() {
        let live = definitions(live_json());
        let plan = plan_against(&live);
        assert_eq!(plan.changes.len(), 1, "{:?}", plan.changes);
        let basis = Basis::of(&plan, &live).unwrap();
        assert!(basis.named().is_empty(), "a policy update names no queue");
        assert!(basis.holds(&read_again(&live, &basis)));
        // A queue the plan does not touch is not read again.
        let mut busier = live_json();
        busier["queues"][1]["durable"] = json!(false);
        assert!(basis.holds(&read_again(&definitions(busier), &basis)));
    }

    #[test]
    fn any_change_to_the_basis_is_seen() {
        let live = definitions(live_json());
        let plan = plan_against(&live);
        let basis = Basis::of(&plan, &live).unwrap();
        let changed = |edit: &dyn Fn(&mut Value)| {
            let mut moved = live_json();
            edit(&mut moved);
            !basis.holds(&read_again(&definitions(moved), &basis))
        };
        assert!(changed(
            &|v| v["policies"][0]["definition"]["message-ttl"] = json!(3000)
        ));
        assert!(changed(
            &|v| v["global_parameters"][1]["value"]["serial"] = json!(5)
        ));
        assert!(changed(
            &|v| v["global_parameters"][0]["value"] = json!("other")
        ));
        assert!(changed(&|v| {
            v["global_parameters"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "warren.team", "value": {"format": 1, "spec": "team", "serial": 1, "objects": []}}))
        }));
        assert!(changed(
            &|v| v["users"] = json!([{"name": "new", "password_hash": "", "tags": []}])
        ));
    }

    #[test]
    fn touched_queues_and_bindings_are_read_again() {
        let live = definitions(live_json());
        let mut plan = plan_against(&live);
        // The plan also replaces the work queue and adopts its binding.
        let mut replace = plan.changes[0].clone();
        replace.id = ObjectId::in_vhost(ObjectKind::Queue, "shop", "work");
        plan.changes.push(replace);
        let binding = plan
            .desired
            .iter()
            .find(|d| d.id.kind == ObjectKind::Binding)
            .unwrap()
            .id
            .clone();
        plan.adopted.push(binding);
        let basis = Basis::of(&plan, &live).unwrap();
        assert_eq!(basis.named().len(), 2);
        assert!(basis.holds(&read_again(&live, &basis)));
        let mut moved = live_json();
        moved["queues"][0]["arguments"] = json!({"x-max-length": 5});
        assert!(!basis.holds(&read_again(&definitions(moved), &basis)));
        let mut unbound = live_json();
        unbound["bindings"] = json!([]);
        assert!(!basis.holds(&read_again(&definitions(unbound), &basis)));
    }

    #[test]
    fn a_plan_touching_many_objects_has_no_basis() {
        let live = definitions(live_json());
        let mut plan = plan_against(&live);
        let template = plan.changes[0].clone();
        for n in 0..=MOST_NAMED {
            let mut change = template.clone();
            change.id = ObjectId::in_vhost(ObjectKind::Queue, "shop", format!("q{n}"));
            plan.changes.push(change);
        }
        assert!(Basis::of(&plan, &live).is_none());
    }
}
