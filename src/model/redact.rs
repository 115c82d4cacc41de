//! What is secret and how it is hidden: URI credentials, passwords and password hashes
//! never appear in any output, plan, diagnostic or log.
//!
//! Everything warren prints that may hold a secret goes through one of these functions:
//! values it sends ([`redact`], [`redact_uris`]), URLs it was given ([`redact_url`]),
//! text the broker answered ([`redact_text`]) and spec lines quoted under a diagnostic
//! ([`yaml_line`]). [`is_secret_key`] decides which keys hold secrets for all of them.

use std::sync::LazyLock;

use fancy_regex::{Captures, Regex};
use serde_json::Value;

/// What a hidden secret is replaced with.
pub const MASK: &str = "***";

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

/// Hides the credentials of every `scheme://user:password@host…` in `text`, wherever it
/// stands (alone, inside quotes, JSON or Erlang terms): `scheme://user:***@host…`.
/// Other text is unchanged.
///
/// A URI ends at white space or a quote. Its user information runs to the LAST `@`
/// before that end, as in the URL standard: a password may hold `@`, `/` or `:`, and a
/// URI that does not parse loses as much as one that does.
pub fn redact_uri(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(separator) = rest.find("://") {
        let authority_start = separator + 3;
        let end = rest[authority_start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>'))
            .map_or(rest.len(), |at| authority_start + at);
        out.push_str(&rest[..authority_start]);
        let uri_rest = &rest[authority_start..end];
        match uri_rest.rfind('@') {
            Some(at) => {
                out.push_str(&hidden_userinfo(&uri_rest[..at]));
                out.push_str(&uri_rest[at..]);
            }
            None => out.push_str(uri_rest),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `user:password` → `user:***`; a user name alone (`amqps://fed-link@host`, for
/// certificate logins) stays; anything else → `***`.
fn hidden_userinfo(userinfo: &str) -> String {
    match userinfo.split_once(':') {
        Some((user, _)) if !user.is_empty() && !user.contains(['/', '?', '#', '@']) => {
            format!("{user}:{MASK}")
        }
        None if !userinfo.contains(['/', '?', '#', '@']) => userinfo.to_string(),
        _ => MASK.to_string(),
    }
}

/// What a hidden password hash is replaced with.
pub const HIDDEN_HASH: &str = "(redacted)";

/// Hides password hashes and URI credentials: a plan says "password changed" and
/// nothing more.
pub fn redact(value: &Value) -> Value {
    let mut value = redact_uris(value);
    if let Some(object) = value.as_object_mut()
        && object.contains_key("password_hash")
    {
        object.insert("password_hash".into(), Value::from(HIDDEN_HASH));
    }
    value
}

/// Whether `value` holds what [`redact`] leaves in place of a secret: a password hash
/// [`HIDDEN_HASH`], or a URI whose password is [`MASK`]. Such a value cannot be sent
/// to a broker: it would set a user's password, or a shovel's, to the mask.
pub fn holds_hidden_secrets(value: &Value) -> bool {
    match value {
        Value::String(text) => text.split("://").skip(1).any(|after| {
            let authority = after
                .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>'))
                .next()
                .unwrap_or_default();
            authority.rsplit_once('@').is_some_and(|(userinfo, _)| {
                userinfo == MASK || userinfo.ends_with(&format!(":{MASK}"))
            })
        }),
        Value::Array(items) => items.iter().any(holds_hidden_secrets),
        Value::Object(map) => {
            map.get("password_hash").and_then(Value::as_str) == Some(HIDDEN_HASH)
                || map.values().any(holds_hidden_secrets)
        }
        _ => false,
    }
}

/// A URL given on the command line, as it may be printed in an error: `scheme://` URLs
/// lose their password as in [`redact_uri`]; anything else with an `@` loses everything
/// before its last `@` (it may be `user:password@host` without a scheme, and the
/// password may hold `@`).
pub fn redact_url(text: &str) -> String {
    if text.contains("://") {
        return redact_uri(text);
    }
    match text.rfind('@') {
        Some(at) => format!("{MASK}{}", &text[at..]),
        None => text.to_string(),
    }
}

/// Whether a key names a secret: a password (also misspelt: any key within two edits
/// of `password`, such as `pasword` or `passwd`), a password hash, a secret, a token or
/// credentials. Used for spec keys and for the fields of the broker's answers.
pub fn is_secret_key(key: &str) -> bool {
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "credential",
    ];
    let key = key.to_ascii_lowercase();
    WORDS.iter().any(|word| key.contains(word))
        || key.split(|c: char| !c.is_ascii_alphanumeric()).any(|part| {
            matches!(part, "pass" | "pwd") || strsim::levenshtein(part, "password") <= 2
        })
}

/// A key and the value after it in text the broker wrote: JSON (`"password":"x"`),
/// Erlang terms (`{password,<<"x">>}`, `password => <<"x">>`) or `key=value`.
static KEY_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?x)
        (?P<open>\{\s*)?
        (?P<key>"[A-Za-z_][\w.-]*"|<<"[A-Za-z_][\w.-]*">>|'[A-Za-z_][\w.-]*'|\b[A-Za-z_][\w-]*)
        (?P<separator>\s*(?:=>|:|=|,)\s*)
        (?P<value><<"(?:[^"\\]|\\.)*">>|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s,}\])"']+)
        "#,
    )
    .expect("a valid expression")
});

/// Text the broker answered (an error's reason, which may echo what warren sent), as
/// it may be printed: URI credentials hidden ([`redact_uri`]) and the value of every
/// secret field ([`is_secret_key`]: passwords, `password_hash`…) replaced by `***`,
/// in JSON, Erlang-term or `key=value` form. The rest stays, so the message still
/// says what was wrong.
pub fn redact_text(text: &str) -> String {
    let text = redact_uri(text);
    KEY_VALUE
        .replace_all(&text, |captures: &Captures<'_, str>| {
            let whole = &captures[0];
            let key = captures["key"].trim_matches(['"', '\'', '<', '>']);
            // `{password,<<"x">>}` is an Erlang pair; `password, then` is prose.
            let pair = captures["separator"].trim() != "," || captures.name("open").is_some();
            if !pair || !is_secret_key(key) {
                return whole.to_string();
            }
            let value = &captures["value"];
            let hidden = if value.starts_with("<<\"") {
                format!("<<\"{MASK}\">>")
            } else if value.starts_with(['"', '\'']) {
                let quote = &value[..1];
                format!("{quote}{MASK}{quote}")
            } else {
                MASK.to_string()
            };
            format!("{}{hidden}", &whole[..whole.len() - value.len()])
        })
        .into_owned()
}

/// A line of a spec as it may be quoted under a diagnostic, and the values hidden in
/// it (so that the diagnostic's message can hide them too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskedLine {
    /// The line, with URI credentials and secret values replaced by `***`.
    pub text: String,
    /// The scalars hidden, e.g. `["hunter2"]` for `password: [hunter2]`.
    pub hidden: Vec<String>,
    /// The character column (0-based) where the mask of a hidden value starts, so a
    /// caret that pointed into the value can point at the mask.
    pub mask_column: Option<usize>,
}

/// A YAML key at the start of a line, after `- `, or inside a flow mapping.
static YAML_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s{,\[-])["']?(?P<key>[A-Za-z0-9_.-]+)["']?\s*:(?=\s|$)"#)
        .expect("a valid expression")
});

/// Masks a YAML line of a spec: everything after a secret key ([`is_secret_key`]:
/// `password: hunter2`, `password: { value: x }`, `pasword: x`), or, when the line is
/// itself inside a secret (`under_secret`: the diagnostic points below a `password`
/// key), the value on the line. URI credentials are hidden too.
pub fn yaml_line(line: &str, under_secret: bool) -> MaskedLine {
    let keys: Vec<(usize, bool)> = YAML_KEY
        .captures_iter(line)
        .filter_map(Result::ok)
        .filter_map(|captures| {
            let end = captures.get(0)?.end();
            Some((end, is_secret_key(&captures["key"])))
        })
        .collect();
    let value_start = keys
        .iter()
        .find(|(_, secret)| *secret)
        .or(keys.first().filter(|_| under_secret))
        .map(|(end, _)| *end)
        .or_else(|| under_secret.then(|| list_item_start(line)));
    let Some(start) = value_start
        .filter(|start| !line[*start..].trim().is_empty())
        .filter(|start| !names_a_secret(&line[..*start], &line[*start..]))
    else {
        return MaskedLine {
            text: redact_uri(line),
            hidden: Vec::new(),
            mask_column: None,
        };
    };
    let value = line[start..].trim();
    let mut hidden = vec![value.trim_matches(['"', '\'']).to_string()];
    hidden.extend(
        value
            .split(|c: char| c.is_whitespace() || matches!(c, '{' | '}' | '[' | ']' | ','))
            .filter(|piece| !piece.is_empty() && !piece.ends_with(':'))
            .map(|piece| piece.trim_matches(['"', '\'']).to_string())
            .filter(|piece| !piece.is_empty()),
    );
    hidden.sort_by_key(|piece| std::cmp::Reverse(piece.len()));
    hidden.dedup();
    let prefix = &line[..start];
    let prefix = if prefix.trim().is_empty() {
        prefix.to_string()
    } else {
        format!("{} ", redact_uri(prefix.trim_end()))
    };
    MaskedLine {
        mask_column: Some(prefix.chars().count()),
        text: format!("{prefix}{MASK}"),
        hidden,
    }
}

/// Whether a value only says where a secret is read (`password: { env: VARIABLE }`,
/// `{ file: PATH }`, or `env: VARIABLE` under a password): a name, not a secret.
fn names_a_secret(before: &str, value: &str) -> bool {
    static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"^\s*\{\s*(?:(?:env|file)\s*:\s*[^\s,{}\[\]:]+\s*,?\s*)+\}\s*$"#)
            .expect("a valid expression")
    });
    let key = before.trim_end().trim_end_matches(':').trim();
    let key = key.rsplit([' ', '{', ',', '-']).next().unwrap_or(key);
    matches!(key, "env" | "file") || REFERENCE.is_match(value).unwrap_or(false)
}

/// Where the value of a line without a key starts: after its indentation and `- `.
fn list_item_start(line: &str) -> usize {
    let indented = line.len() - line.trim_start().len();
    let rest = &line[indented..];
    match rest.strip_prefix('-') {
        Some(item) => indented + 1 + (item.len() - item.trim_start().len()),
        None => indented,
    }
}

/// Replaces in `text` every quoted occurrence of a hidden value (`` `x` ``, `"x"`,
/// `'x'`), and every bare one of four characters or more, by `***`.
pub fn hide_values(text: &str, hidden: &[String]) -> String {
    let mut text = redact_uri(text);
    for value in hidden {
        for (open, close) in [("`", "`"), ("\"", "\""), ("'", "'")] {
            text = text.replace(
                &format!("{open}{value}{close}"),
                &format!("{open}{MASK}{close}"),
            );
        }
        if value.chars().count() >= 4 {
            text = text.replace(value.as_str(), MASK);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_redact_hides_is_recognised_and_nothing_else() {
        let secrets = [
            json!({"name": "app", "password_hash": "c2FsdGVkaGFzaA==", "tags": []}),
            json!({"value": {"src-uri": "amqp://fed:s3cret@upstream/%2f", "dest-queue": "q"}}),
            json!({"value": {"uri": ["amqps://a:b@one", "amqp://x:p@two?heartbeat=5"]}}),
            json!({"value": {"uri": "amqp://user:p@ss@host"}}),
        ];
        for value in secrets {
            assert!(!holds_hidden_secrets(&value), "clear: {value}");
            assert!(
                holds_hidden_secrets(&redact(&value)),
                "redacted: {}",
                redact(&value)
            );
        }
        let clean = [
            json!({"value": {"src-uri": "amqp://upstream/%2f"}}),
            json!({"value": {"src-uri": "amqps://fed-link@upstream"}}),
            json!({"arguments": {"x-note": "a *** in text", "x-url": "http://host/***"}}),
        ];
        for value in clean {
            assert_eq!(redact(&value), value, "nothing to hide in {value}");
            assert!(!holds_hidden_secrets(&value), "{value}");
        }
    }

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

    #[test]
    fn a_url_that_does_not_parse_loses_everything_up_to_its_last_at() {
        assert_eq!(
            redact_url("http://deployer:Se@cret99@127.0.0.1:notaport"),
            "http://deployer:***@127.0.0.1:notaport"
        );
        assert_eq!(
            redact_url("http://deployer:a@b@c@d@127.0.0.1:notaport/x"),
            "http://deployer:***@127.0.0.1:notaport/x"
        );
        assert_eq!(
            redact_url("deployer:Se@cret99@127.0.0.1:notaport"),
            "***@127.0.0.1:notaport"
        );
        assert_eq!(redact_url("deployer:a@b@c@h"), "***@h");
        assert_eq!(redact_url("http://u:pa/ss@h:1"), "http://u:***@h:1");
        assert_eq!(redact_url("http://:only@h"), "http://***@h");
        assert_eq!(redact_url("amqps://fed-link@h/"), "amqps://fed-link@h/");
        assert_eq!(redact_url("http://Se@cret99@h/"), "http://***@h/");
        for shape in [
            "http://deployer:Se@cret99@127.0.0.1:notaport",
            "deployer:Se@cret99@127.0.0.1:notaport",
            "amqp://u:x@Se@cret99@@h",
            "u:Se@cret99@",
        ] {
            let shown = redact_url(shape);
            assert!(!shown.contains("cret99"), "{shape} → {shown}");
        }
    }

    #[test]
    fn every_uri_of_a_text_is_hidden() {
        let text = r#"Validation failed "amqp://fed:FedSecretAA1@host:99999999/%2F" not a valid URI: {{port_out_of_range, 99999999}, "amqp://fed:FedSecretAA1@host:99999999/%2F"} and amqp://x:Two@h"#;
        let shown = redact_text(text);
        assert!(
            !shown.contains("FedSecretAA1") && !shown.contains("Two"),
            "{shown}"
        );
        assert_eq!(shown.matches("amqp://fed:***@host:99999999/%2F").count(), 2);
        assert!(shown.contains("port_out_of_range"), "{shown}");
    }

    #[test]
    fn secret_fields_of_broker_answers_are_hidden() {
        let shown = redact_text(
            r#"{"name":"u","password":"PwJson1","password_hash":"HashJson2","tags":"x"}"#,
        );
        assert_eq!(
            shown,
            r#"{"name":"u","password":"***","password_hash":"***","tags":"x"}"#
        );
        let shown = redact_text(
            r#"{error,[{user,<<"u">>},{password,<<"PwErl3">>},{password_hash,<<"HashErl4">>}]}"#,
        );
        assert!(
            !shown.contains("PwErl3") && !shown.contains("HashErl4"),
            "{shown}"
        );
        assert!(shown.contains(r#"{user,<<"u">>}"#), "{shown}");
        let shown = redact_text("#{password => <<\"PwMap5\">>} password=PwKv6 secret: S7");
        assert!(!shown.contains("PwMap5") && !shown.contains("PwKv6") && !shown.contains("S7"));
        assert_eq!(
            redact_text("the password, for user u, is wrong"),
            "the password, for user u, is wrong"
        );
    }

    #[test]
    fn password_like_keys_are_secret() {
        for key in [
            "password",
            "pasword",
            "passwd",
            "pssword",
            "Password_Hash",
            "src-password",
            "secret",
            "api_token",
            "pwd",
            "pass",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in [
            "name",
            "tags",
            "passive",
            "uri",
            "permissions",
            "hashing_algorithm",
        ] {
            assert!(!is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn spec_lines_hide_the_values_of_secret_keys() {
        let masked = yaml_line("    password: { value: ValueSecretCC3 }", false);
        assert_eq!(masked.text, "    password: ***");
        assert_eq!(masked.mask_column, Some(14));
        assert!(masked.hidden.contains(&"ValueSecretCC3".to_string()));
        assert!(!masked.hidden.contains(&"value".to_string()));
        assert_eq!(
            yaml_line("    password: [ListSecretDD4]", false).text,
            "    password: ***"
        );
        assert_eq!(
            yaml_line("    pasword: TypoSecretEE5", false).text,
            "    pasword: ***"
        );
        assert_eq!(
            yaml_line("  - { name: a, passwd: 'x y' }", false).text,
            "  - { name: a, passwd: ***"
        );
        assert_eq!(
            yaml_line("      value: Nested", true).text,
            "      value: ***"
        );
        assert_eq!(yaml_line("      - Item", true).text, "      - ***");
        assert_eq!(yaml_line("    password:", false).text, "    password:");
        for named in [
            "    password: { env: APP_PASSWORD }",
            "    password: { file: pw.txt }",
        ] {
            assert_eq!(
                yaml_line(named, false).text,
                named,
                "a variable's name is no secret"
            );
        }
        assert_eq!(
            yaml_line("      env: APP_PASSWORD", true).text,
            "      env: APP_PASSWORD"
        );
        assert_eq!(
            yaml_line("    password: { env: A, value: B }", false).text,
            "    password: ***"
        );
        assert_eq!(yaml_line("    tags: [a]", false).text, "    tags: [a]");
        assert_eq!(
            yaml_line("  uri: amqp://u:UriPw@h", false).text,
            "  uri: amqp://u:***@h"
        );
    }

    #[test]
    fn messages_hide_the_values_they_quote() {
        let hidden = vec!["hunter22".to_string(), "pw".to_string()];
        assert_eq!(
            hide_values(
                "invalid value `hunter22`, found string \"pw\" in pw-key",
                &hidden
            ),
            "invalid value `***`, found string \"***\" in pw-key"
        );
    }
}
