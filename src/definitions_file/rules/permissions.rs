//! Permissions and topic permissions: their regular expressions.

use serde_json::Value;

use super::{Check, Found, Level, Rule, is_regex, objects};

pub(super) const PERMISSION_REGEX: Rule = Rule {
    id: "permission-regex",
    summary: "a permission's `configure`, `write` and `read` (and a topic permission's `write` and `read`) are regular expressions no longer than the version accepts",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(permission_regex),
};

fn permission_regex(document: &Value, found: &mut Found) {
    for (section, fields) in [
        ("permissions", &["configure", "write", "read"][..]),
        ("topic_permissions", &["write", "read"][..]),
    ] {
        for (path, permission) in objects(document, section) {
            for field in fields {
                let problem = match permission.get(*field) {
                    None => Err(format!("`{field}` is missing")),
                    Some(value) => is_regex(value, found.target),
                };
                if let Err(problem) = problem {
                    found.push(
                        path.then(*field),
                        "permission-regex",
                        format!(
                            "the `{field}` permission of user `{}` in vhost `{}`: {problem}",
                            permission
                                .get("user")
                                .and_then(Value::as_str)
                                .unwrap_or("?"),
                            permission
                                .get("vhost")
                                .and_then(Value::as_str)
                                .unwrap_or("?"),
                        ),
                    );
                }
            }
        }
    }
}
