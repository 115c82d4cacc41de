//! The well-known `guest` user.

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::{ObjectId, ObjectKind};

pub const RULE: Rule = Rule {
    id: "guest-user",
    summary: "the `guest` user is declared",
    level: Some(Level::Warn),
    explanation: Some(
        "`guest` is the user every RabbitMQ installation starts with, and its name (and often its password) is the first thing an attacker tries. Declare users of your own; a broker booted from definitions creates no guest user.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v: {}\nusers:\n  guest:\n    password: { env: GUEST_PASSWORD }\n    permissions:\n      v: { configure: '.*', write: '.*', read: '.*' }\n",
        good: "version: 1\nvhosts:\n  v: {}\nusers:\n  deployer:\n    password: { env: DEPLOYER_PASSWORD }\n    permissions:\n      v: { configure: '.*', write: '.*', read: '.*' }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    context
        .definitions
        .users
        .iter()
        .filter(|u| u.name == "guest")
        .map(|_| {
            Finding::on(
                ObjectId::global(ObjectKind::User, "guest"),
                "the `guest` user is declared: its well-known name makes it a target",
            )
            .fix("declare a user of your own and leave `guest` out")
        })
        .collect()
}
