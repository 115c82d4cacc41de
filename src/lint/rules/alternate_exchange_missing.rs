//! An exchange's alternate exchange does not exist.

use crate::lint::{Check, Context, Level, Rule};
use crate::model::effective::CompiledPolicies;
use crate::model::finding::Finding;
use crate::model::{ObjectId, ObjectKind, PREDEFINED_EXCHANGES};

pub const RULE: Rule = Rule {
    id: "alternate-exchange-missing",
    summary: "an exchange's alternate exchange does not exist: messages it cannot route are dropped",
    level: Some(Level::Deny),
    explanation: Some(
        "An alternate exchange (the `alternate-exchange` argument, or the key of a policy that applies to the exchange) receives the messages the exchange cannot route, so that none is lost. When it does not exist, the broker accepts the setting and drops those messages silently, as if no alternate exchange were set. Create the exchange or fix the name. (warren's generated topology never names a missing exchange; this rule finds it in exchanges written in a spec's `exchanges:` or imported, and in definitions files.)",
    ),
    check: Check {
        bad: r#"{"vhosts": [{"name": "v"}], "exchanges": [{"name": "orders", "vhost": "v", "type": "topic", "durable": true, "auto_delete": false, "internal": false, "arguments": {"alternate-exchange": "orders.unroutd"}}, {"name": "orders.unrouted", "vhost": "v", "type": "fanout", "durable": true, "auto_delete": false, "internal": false, "arguments": {}}]}"#,
        good: r#"{"vhosts": [{"name": "v"}], "exchanges": [{"name": "orders", "vhost": "v", "type": "topic", "durable": true, "auto_delete": false, "internal": false, "arguments": {"alternate-exchange": "orders.unrouted"}}, {"name": "orders.unrouted", "vhost": "v", "type": "fanout", "durable": true, "auto_delete": false, "internal": false, "arguments": {}}]}"#,
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let definitions = context.definitions;
    let declared: std::collections::HashSet<(&str, &str)> = definitions
        .exchanges
        .iter()
        .map(|e| (e.vhost.as_str(), e.name.as_str()))
        .collect();
    let exists = |vhost: &str, name: &str| {
        PREDEFINED_EXCHANGES.contains(&name) || declared.contains(&(vhost, name))
    };
    let policies = CompiledPolicies::new(&definitions.policies);
    let mut findings = Vec::new();
    for exchange in &definitions.exchanges {
        let by_argument = exchange
            .arguments
            .get("alternate-exchange")
            .and_then(|v| v.as_str())
            .map(|name| (name, "its `alternate-exchange` argument".to_string()));
        let by_policy = || {
            let policy = policies
                .choose_for_exchange(&exchange.vhost, &exchange.name)
                .one()?;
            let name = policy.definition.get("alternate-exchange")?.as_str()?;
            Some((name, format!("policy `{}`", policy.name)))
        };
        let Some((alternate, from)) = by_argument.or_else(by_policy) else {
            continue;
        };
        if !exists(&exchange.vhost, alternate) {
            findings.push(
                Finding::on(
                    ObjectId::in_vhost(ObjectKind::Exchange, &exchange.vhost, &exchange.name),
                    format!(
                        "the alternate exchange of `{}` ({from}) is `{alternate}`, which does not exist: messages `{}` cannot route are dropped",
                        exchange.name, exchange.name
                    ),
                )
                .fix("create the exchange, or fix the name"),
            );
        }
    }
    findings
}
