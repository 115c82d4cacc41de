//! The permissions the compiler grants from what each user does: a consumer by its
//! retry mode, a publisher on its service's exchange (with topic permissions for its
//! routing keys), and the errors for a user that is not declared or listed twice.

use super::{errors, ok};
use crate::model::Definitions;

/// A spec with one consumer per retry mode, each with its own user, and publishers.
fn permissions_spec(extra_users: &str) -> String {
    format!(
        "version: 1
vhosts:
  v:
    services:
      orders:
        publishers: [web, {{ user: checkout, routing_keys: [order.paid, 'order.*.eu'] }}]
        consumers:
          email: {{ user: mail_app, routing_keys: [order.paid], retry: {{ delays: [1s, 2s] }} }}
          sms: {{ user: sms_app, routing_keys: [order.paid], retry: {{ delays: [1s], mode: reject }} }}
          drop: {{ user: drop_app, routing_keys: [order.paid], retry: {{ delays: [1s], mode: reject, on_exhausted: drop }} }}
          chain: {{ user: chain_app, routing_keys: [order.paid], retry: {{ delays: [1s, 2s], mode: reject-chain }} }}
      payments:
        exchange: {{ type: direct }}
        publishers: [mail_app]
        consumers:
          capture: {{ routing_keys: [paid] }}
users:
  web: {{ password_hash: '' }}
  checkout: {{ password_hash: '' }}
  sms_app: {{ password_hash: '' }}
  drop_app: {{ password_hash: '' }}
  chain_app: {{ password_hash: '' }}
{extra_users}"
    )
}

fn permission<'a>(defs: &'a Definitions, user: &str) -> &'a crate::model::Permission {
    defs.permissions
        .iter()
        .find(|p| p.user == user)
        .unwrap_or_else(|| panic!("no permission of {user}"))
}

#[test]
fn permissions_are_generated_from_what_each_user_does() {
    let defs = ok(&permissions_spec(
        "  mail_app:\n    password_hash: ''\n    permissions:\n      v: { configure: '^amq\\.gen-' }\n  ops:\n    password_hash: ''\n    permissions:\n      v: { configure: '.*', write: '.*', read: '.*' }\n",
    ));
    let triple = |user: &str| {
        let p = permission(&defs, user);
        (p.configure.as_str(), p.write.as_str(), p.read.as_str())
    };
    // publish mode: retries and parking go through the retry exchange; the written
    // configure is added to the generated nothing; a publisher too.
    assert_eq!(
        triple("mail_app"),
        (
            "^amq\\.gen-",
            "^(?:orders\\.email\\.retry|payments)$",
            "^orders\\.email$"
        )
    );
    // reject mode parks by hand; with drop it publishes nothing.
    assert_eq!(
        triple("sms_app"),
        ("^$", "^orders\\.sms\\.retry$", "^orders\\.sms$")
    );
    assert_eq!(triple("drop_app"), ("^$", "^$", "^orders\\.drop$"));
    // reject-chain: the broker parks; the consumer reads every attempt queue.
    assert_eq!(
        triple("chain_app"),
        ("^$", "^$", "^orders\\.chain(?:|\\.attempt\\.(?:2|3))$")
    );
    assert_eq!(triple("web"), ("^$", "^orders$", "^$"));
    assert_eq!(triple("checkout"), ("^$", "^orders$", "^$"));
    // A user warren generates nothing for keeps what is written.
    assert_eq!(triple("ops"), (".*", ".*", ".*"));
    let topic: Vec<_> = defs
        .topic_permissions
        .iter()
        .map(|t| {
            (
                t.user.as_str(),
                t.exchange.as_str(),
                t.write.as_str(),
                t.read.as_str(),
            )
        })
        .collect();
    assert_eq!(
        topic,
        [(
            "checkout",
            "orders",
            "^(?:order\\.[^.]*\\.eu|order\\.paid)$",
            ""
        )]
    );
}

#[test]
fn an_undeclared_user_is_an_error_at_its_reference() {
    let errors = errors(&permissions_spec("  mail_ap: { password_hash: '' }\n"));
    let messages: Vec<_> = errors
        .iter()
        .map(|d| (d.message.as_str(), d.help.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        messages,
        [
            (
                "user `mail_app` is not declared in this spec",
                "did you mean `mail_ap`?"
            ),
            (
                "user `mail_app` is not declared in this spec",
                "did you mean `mail_ap`?"
            ),
        ]
    );
    assert_eq!(errors[0].location.unwrap().line, 8);
    assert_eq!(errors[1].location.unwrap().line, 14);
}

#[test]
fn publisher_routing_keys_need_a_topic_exchange() {
    let yaml = permissions_spec("  mail_app: { password_hash: '' }\n").replace(
        "publishers: [mail_app]",
        "publishers: [{ user: mail_app, routing_keys: [paid] }]",
    );
    let errors = errors(&yaml);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].message.contains("only on a topic exchange"),
        "{errors:#?}"
    );
    assert!(
        errors[0].help.as_deref().unwrap().contains("`- mail_app`"),
        "{errors:#?}"
    );
}

#[test]
fn a_publisher_listed_twice_is_an_error() {
    let yaml = permissions_spec("  mail_app: { password_hash: '' }\n")
        .replace("publishers: [web,", "publishers: [web, web,");
    let errors = errors(&yaml);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        errors[0].message,
        "user `web` is listed twice in the publishers of exchange `orders`"
    );
}
