//! Multi-hop dead-letter cycles on RabbitMQ 3.13.

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::version::TargetVersion;

pub const RULE: Rule = Rule {
    id: "cycle-on-3-13",
    summary: "RabbitMQ 3.13.0–3.13.2 drop messages in dead-letter cycles even after a rejection",
    level: Some(Level::Warn),
    explanation: Some(
        "A bug in RabbitMQ 3.13.0 to 3.13.2 makes cycle detection drop messages in retry loops even when a consumer rejected them. With a 3.13 target, make sure the brokers run 3.13.3 or later (with the `message_containers_deaths_v2` feature flag enabled).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s] } }\n",
        good: "version: 1\nlint: { allow: [cycle-on-3-13] }\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s] } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    if context.target != TargetVersion::V3_13 {
        return Vec::new();
    }
    let graph = context.graph();
    graph
        .all_cycles()
        .into_iter()
        .filter(|cycle| cycle.len() > 1)
        .map(|cycle| {
            Finding::on(
                graph.id(cycle[0]),
                format!(
                    "dead letters cycle through {}: RabbitMQ 3.13.0–3.13.2 drop such messages even after a rejection",
                    graph.names(&cycle)
                ),
            )
            .fix("run 3.13.3 or later with the message_containers_deaths_v2 feature flag enabled, then allow this rule")
        })
        .collect()
}
