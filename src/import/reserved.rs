//! What an import leaves out because it is warren's own: its lock vhost and everything
//! in it, and every object named in its reserved namespace (a migration's temporary
//! queue, exchange and shovel, …; [`crate::model::reserved`]). A spec cannot declare
//! them, so importing them would write a spec `validate` refuses; a broker booted from
//! such a spec's export would hold them as if they were the user's.
//!
//! Policies are left to `plain`: the generated ones are regenerated from the ladders
//! recognised, and one no ladder explains is imported under a name of its own.

use super::Notes;
use crate::model::objects::{is_own_object, retain};
use crate::model::reserved::{LOCK_VHOST, RESERVED_PREFIX, collision, is_reserved};
use crate::model::{Definitions, ObjectId, ObjectKind};

/// How many of the names left out a note lists.
const LISTED: usize = 3;

/// Leaves warren's own objects out of `definitions`, with a note for each group.
pub(super) fn leave_out_warrens(definitions: &mut Definitions, notes: &mut Notes) {
    let in_lock_vhost = retain(definitions, |id| !is_own_object(id));
    if !in_lock_vhost.is_empty() {
        let inside = in_lock_vhost.len().saturating_sub(1);
        notes.0.push(format!(
            "vhost `{LOCK_VHOST}` (where warren holds its apply locks){} is left out: it is warren's own, never part of a spec",
            match inside {
                0 => String::new(),
                n => format!(" and the {} in it", crate::text::count(n, "object")),
            }
        ));
    }
    let mut named = retain(definitions, |id| {
        id.kind == ObjectKind::Policy || collision(id).is_none()
    });
    let bindings = definitions.bindings.len();
    definitions
        .bindings
        .retain(|b| !is_reserved(&b.source) && !is_reserved(&b.destination));
    let bindings = bindings - definitions.bindings.len();
    if named.is_empty() && bindings == 0 {
        return;
    }
    named.sort();
    let mut listed: Vec<String> = named.iter().take(LISTED).map(ObjectId::to_string).collect();
    if named.len() > LISTED {
        listed.push("…".to_string());
    }
    if bindings > 0 {
        listed.push(format!(
            "{} to or from them",
            crate::text::count(bindings, "binding")
        ));
    }
    notes.0.push(format!(
        "{} named in warren's reserved namespace (`{RESERVED_PREFIX}…`: a migration's temporary queue, exchange and shovel, …) left out: {}",
        crate::text::count(named.len() + bindings, "object"),
        listed.join(", ")
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leaves_out_the_lock_vhost_and_reserved_names_only() {
        let mut definitions: Definitions = serde_json::from_value(json!({
            "vhosts": [{"name": "shop"}, {"name": LOCK_VHOST}],
            "parameters": [
                {"vhost": LOCK_VHOST, "component": "vhost-limits", "name": "limits", "value": {"max-queues": 0}},
                {"vhost": "shop", "component": "shovel", "name": "warren.migrate.orders", "value": {}}
            ],
            "queues": [
                {"name": "orders", "vhost": "shop"},
                {"name": "warren-orders", "vhost": "shop"},
                {"name": "warren.migrate.orders", "vhost": "shop"}
            ],
            "exchanges": [{"name": "warren.migrate.orders", "vhost": "shop", "type": "fanout"}],
            "bindings": [
                {"source": "warren.migrate.orders", "vhost": "shop", "destination": "orders", "destination_type": "queue"},
                {"source": "amq.direct", "vhost": "shop", "destination": "warren-orders", "destination_type": "queue"}
            ],
            "policies": [{"name": "warren.retry.defaults.1", "vhost": "shop", "pattern": "x"}]
        }))
        .unwrap();
        let mut notes = Notes::default();
        leave_out_warrens(&mut definitions, &mut notes);
        assert_eq!(definitions.vhosts.len(), 1);
        assert!(definitions.parameters.is_empty());
        let queues: Vec<&str> = definitions.queues.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(queues, ["orders", "warren-orders"]);
        assert!(definitions.exchanges.is_empty());
        assert_eq!(definitions.bindings.len(), 1);
        assert_eq!(definitions.policies.len(), 1, "policies are plain's");
        assert_eq!(notes.0.len(), 2, "{:?}", notes.0);
        assert!(
            notes.0[0].contains("and the 1 object in it"),
            "{}",
            notes.0[0]
        );
        assert!(notes.0[1].starts_with("4 objects named"), "{}", notes.0[1]);
    }
}
