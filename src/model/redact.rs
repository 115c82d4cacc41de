//! What is secret and how it is hidden: URI credentials and password hashes never
//! appear in any output, plan or log.

use serde_json::Value;

/// Hides the password of every URI inside a value (`amqp://user:***@host`).
pub fn redact_uris(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(redact_uri(text)),
        Value::Array(items) => Value::Array(items.iter().map(redact_uris).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_uris(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `scheme://user:password@host…` → `scheme://user:***@host…`; other text unchanged.
pub fn redact_uri(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else {
        return text.to_string();
    };
    let rest = &text[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return text.to_string();
    };
    let userinfo = &authority[..at];
    let user = userinfo.split(':').next().unwrap_or_default();
    if !userinfo.contains(':') {
        return text.to_string();
    }
    format!("{}://{user}:***{}", &text[..scheme_end], &rest[at..])
}

/// Hides password hashes and URI credentials: a plan says "password changed" and
/// nothing more.
pub fn redact(value: &Value) -> Value {
    let mut value = redact_uris(value);
    if let Some(object) = value.as_object_mut()
        && object.contains_key("password_hash")
    {
        object.insert("password_hash".into(), Value::from("(redacted)"));
    }
    value
}

/// A URL given on the command line, as it may be printed in an error: `scheme://` URLs
/// lose their password as in [`redact_uri`]; anything else with an `@` loses everything
/// before it (it may be `user:password@host` without a scheme).
pub fn redact_url(text: &str) -> String {
    if text.contains("://") {
        return redact_uri(text);
    }
    match text.find('@') {
        Some(at) => format!("***{}", &text[at..]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uri_credentials_are_hidden() {
        assert_eq!(
            redact_uri("amqps://shovel:s3cret@mq.example:5671/%2F?heartbeat=5"),
            "amqps://shovel:***@mq.example:5671/%2F?heartbeat=5"
        );
        assert_eq!(redact_uri("amqp://mq.example"), "amqp://mq.example");
        assert_eq!(redact_uri("no uri"), "no uri");
        let value = redact_uris(&json!({"src-uri": ["amqp://a:b@h1"], "n": 1}));
        assert_eq!(value, json!({"src-uri": ["amqp://a:***@h1"], "n": 1}));
    }

    #[test]
    fn urls_lose_their_password_with_or_without_a_scheme() {
        assert_eq!(redact_url("http://ops:s3cret@h:1/"), "http://ops:***@h:1/");
        assert_eq!(redact_url("ops:s3cret@h:1"), "***@h:1");
        assert_eq!(redact_url("http://h:1/"), "http://h:1/");
    }
}
