//! `metadata.name` of a rendered resource: a Kubernetes name derived from the exact
//! RabbitMQ identity of the object.
//!
//! The rule: `<kind>-<readable parts>` lowercased, every run of characters other than
//! `a-z`/`0-9` turned into one `-`, cut to fit, then `-` and the first
//! [`HASH_LENGTH`] hex digits of the SHA-256 of the exact identity (kind, vhost,
//! name, and for a binding every field). The suffix is always there, not only when
//! sanitizing changed something: RabbitMQ names are case-sensitive and take any
//! character, so `Orders`, `orders` and `orders.` are three queues that read alike
//! once sanitized. With the suffix on every name, no sanitized name can equal
//! another's suffixed one, and a name never changes form when a neighbour appears.
//!
//! Names keep to a DNS-1123 *label* (at most 63 characters, no dots), stricter than
//! the subdomain every Topology Operator kind accepts, so a name is valid wherever
//! Kubernetes or the operator reuses it (the operator names a User's own Secret
//! `<name>-user-credentials`), and it reads in one column of `kubectl get`.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Hex digits of the identity's hash in every name: 40 bits, so a thousand objects of
/// one kind share a suffix with odds below one in a million (and a shared one is an
/// error, never an overwrite: [`super::manifests`] checks names are unique).
pub const HASH_LENGTH: usize = 10;

/// The longest name: a DNS-1123 label.
pub const MAX_LENGTH: usize = 63;

/// The name of an object of `kind` (lowercase, e.g. `queue`) whose readable parts are
/// `readable` (vhost, name…) and whose exact identity is `identity`.
pub fn metadata_name(kind: &str, readable: &[&str], identity: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(kind.as_bytes());
    hasher.update([0]);
    hasher.update(identity.to_string().as_bytes());
    let digest = hasher.finalize();
    let hash: String = digest
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect::<String>()[..HASH_LENGTH]
        .to_string();

    let mut words = vec![kind.to_string()];
    words.extend(readable.iter().map(|part| sanitize(part)));
    let mut readable = words
        .into_iter()
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let room = MAX_LENGTH - HASH_LENGTH - 1;
    if readable.len() > room {
        readable.truncate(room);
    }
    let readable = readable.trim_end_matches('-');
    format!("{readable}-{hash}")
}

/// Lowercase ASCII letters and digits kept, every other run of characters one `-`,
/// none at either end.
fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// Whether `name` is a DNS-1123 label: what `--namespace` must be.
pub fn is_label(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_LENGTH && is_dns_part(name)
}

/// Whether `name` is a DNS-1123 subdomain: what `--cluster` (a `RabbitmqCluster`'s
/// `metadata.name`) must be.
pub fn is_subdomain(name: &str) -> bool {
    !name.is_empty() && name.len() <= 253 && name.split('.').all(is_dns_part)
}

fn is_dns_part(part: &str) -> bool {
    let bytes = part.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-';
    let end = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    bytes.iter().all(inner) && end(bytes.first()) && end(bytes.last())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_differing_only_by_case_or_punctuation_get_different_names() {
        let a = metadata_name("queue", &["/", "Orders"], &json!(["/", "Orders"]));
        let b = metadata_name("queue", &["/", "orders"], &json!(["/", "orders"]));
        let c = metadata_name("queue", &["/", "orders."], &json!(["/", "orders."]));
        assert!(a.starts_with("queue-orders-"), "{a}");
        assert_ne!(a, b);
        assert_ne!(b, c);
        for name in [a, b, c] {
            assert!(is_label(&name), "{name}");
        }
    }

    #[test]
    fn a_long_or_unreadable_name_is_still_a_label() {
        let long = "x".repeat(300);
        let name = metadata_name("exchange", &["vhost", &long], &json!(long));
        assert_eq!(name.len(), MAX_LENGTH);
        assert!(is_label(&name), "{name}");
        let odd = metadata_name("queue", &["/", "ÄÖ.-_"], &json!("ÄÖ.-_"));
        assert!(is_label(&odd), "{odd}");
        assert_eq!(odd.len(), "queue-".len() + HASH_LENGTH);
    }

    #[test]
    fn the_same_identity_always_gets_the_same_name() {
        let one = metadata_name("policy", &["shop", "cap"], &json!(["shop", "cap"]));
        let two = metadata_name("policy", &["shop", "cap"], &json!(["shop", "cap"]));
        assert_eq!(one, two);
        assert_ne!(
            one,
            metadata_name("operatorpolicy", &["shop", "cap"], &json!(["shop", "cap"]))
        );
    }

    #[test]
    fn dns_checks() {
        assert!(is_label("team-a"));
        assert!(!is_label("Team"));
        assert!(!is_label("-a"));
        assert!(!is_label("a.b"));
        assert!(is_subdomain("rabbit.prod"));
        assert!(!is_subdomain("rabbit..prod"));
        assert!(!is_subdomain(""));
    }
}
