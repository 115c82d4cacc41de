//! Objects on a broker whose names the management API cannot address
//! ([`unaddressable`]: a vhost or queue made by hand named `..`) are left out of an
//! import, each said in a note, and the rest is imported: a spec may not hold them,
//! and warren could neither read nor change them.

use super::Notes;
use crate::model::Definitions;
use crate::model::addressable::unaddressable;

/// Leaves out every object named (or in a vhost named) so the API cannot address it,
/// with a note for each vhost and object left out.
pub(super) fn leave_out_unaddressable(definitions: &mut Definitions, notes: &mut Notes) {
    let bad = |name: &str| unaddressable(name).is_some();
    let mut said: Vec<String> = Vec::new();
    let mut tell = |what: String| {
        if !said.contains(&what) {
            said.push(what);
        }
    };
    for vhost in definitions.vhosts.iter().filter(|v| bad(&v.name)) {
        tell(format!("vhost `{}` and everything in it", vhost.name));
    }
    for user in definitions.users.iter().filter(|u| bad(&u.name)) {
        tell(format!("user `{}`", user.name));
    }
    let d = definitions;
    for queue in d.queues.iter().filter(|q| !bad(&q.vhost) && bad(&q.name)) {
        tell(format!("queue `{}` in vhost `{}`", queue.name, queue.vhost));
    }
    for exchange in d
        .exchanges
        .iter()
        .filter(|e| !bad(&e.vhost) && bad(&e.name))
    {
        tell(format!(
            "exchange `{}` in vhost `{}`",
            exchange.name, exchange.vhost
        ));
    }
    for policy in d.policies.iter().filter(|p| !bad(&p.vhost) && bad(&p.name)) {
        tell(format!(
            "policy `{}` in vhost `{}`",
            policy.name, policy.vhost
        ));
    }
    for parameter in d
        .parameters
        .iter()
        .filter(|p| !bad(&p.vhost) && bad(&p.name))
    {
        tell(format!(
            "parameter `{}` of `{}` in vhost `{}`",
            parameter.name, parameter.component, parameter.vhost
        ));
    }
    d.vhosts.retain(|v| !bad(&v.name));
    d.users.retain(|u| !bad(&u.name));
    d.queues.retain(|q| !bad(&q.vhost) && !bad(&q.name));
    d.exchanges.retain(|e| !bad(&e.vhost) && !bad(&e.name));
    d.policies.retain(|p| !bad(&p.vhost) && !bad(&p.name));
    d.parameters.retain(|p| !bad(&p.vhost) && !bad(&p.name));
    d.bindings
        .retain(|b| !bad(&b.vhost) && !bad(&b.source) && !bad(&b.destination));
    d.permissions.retain(|p| !bad(&p.vhost) && !bad(&p.user));
    d.topic_permissions
        .retain(|p| !bad(&p.vhost) && !bad(&p.user) && !bad(&p.exchange));
    for what in said {
        notes.0.push(format!(
            "{what} left out: the management API cannot address the name `.` or `..` (URL normalisation rewrites it), so no spec can manage it; rename it on the broker to import it"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Queue, Vhost};

    #[test]
    fn dot_names_are_left_out_with_a_note_and_the_rest_is_kept() {
        let mut definitions: Definitions = serde_json::from_value(serde_json::json!({
            "vhosts": [{"name": ".."}, {"name": "dv"}],
            "queues": [
                {"name": "..", "vhost": "dv", "durable": true, "auto_delete": false, "arguments": {}},
                {"name": "ok", "vhost": "dv", "durable": true, "auto_delete": false, "arguments": {}},
                {"name": "x", "vhost": "..", "durable": true, "auto_delete": false, "arguments": {}}
            ]
        }))
        .unwrap();
        let mut notes = Notes::default();
        leave_out_unaddressable(&mut definitions, &mut notes);
        let queues: Vec<&Queue> = definitions.queues.iter().collect();
        assert_eq!(queues.len(), 1);
        assert_eq!(queues[0].name, "ok");
        let vhosts: Vec<&Vhost> = definitions.vhosts.iter().collect();
        assert_eq!(vhosts.len(), 1);
        assert_eq!(notes.0.len(), 2, "{:?}", notes.0);
        assert!(notes.0[0].starts_with("vhost `..` and everything in it left out"));
    }
}
