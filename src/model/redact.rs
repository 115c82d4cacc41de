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

/// Hides the password of every URI inside a value (`amqp://user:***@host`). A string
/// that starts with a scheme (`amqp://…`: a shovel's or a federation upstream's `uri`)
/// is one URL as a whole ([`redact_url`]), whatever characters its password holds;
/// any other string is text that may quote URIs ([`redact_uri`]).
pub fn redact_uris(value: &Value) -> Value {
    match value {
        Value::String(text) if is_one_url(text) => Value::String(redact_url(text)),
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

/// Whether `text` is a URL from its first character: a scheme (RFC 3986: a letter,
/// then letters, digits, `+`, `-` or `.`) and `://`.
pub fn is_one_url(text: &str) -> bool {
    let Some((scheme, _)) = text.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Whether `c` ends a URI quoted in free text: white space, or a character RFC 3986
/// allows nowhere in a URI (a double quote, a backquote, angle brackets), which text
/// uses to delimit one. A single quote is not among them: it is legal in a password.
fn ends_a_quoted_uri(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '`' | '<' | '>')
}

/// Hides the credentials of every `scheme://user:password@host…` in `text`, wherever it
/// stands (alone, inside quotes, JSON or Erlang terms): `scheme://user:***@host…`.
/// Other text is unchanged. For a value that is one URL as a whole, [`redact_url`]
/// hides more surely: a password may hold characters that end a URI here.
///
/// A URI ends at white space or a character no URI holds ([`ends_a_quoted_uri`]). Its
/// user information runs to the LAST `@` before that end, as in the URL standard: a
/// password may hold `@`, `/`, `:` or `'`, and a URI that does not parse loses as much
/// as one that does.
pub fn redact_uri(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(separator) = rest.find("://") {
        let authority_start = separator + 3;
        let end = rest[authority_start..]
            .find(ends_a_quoted_uri)
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
        Value::String(text) => {
            let masked =
                |userinfo: &str| userinfo == MASK || userinfo.ends_with(&format!(":{MASK}"));
            if is_one_url(text) {
                let (_, after) = text.split_once("://").unwrap_or_default();
                return after
                    .rsplit_once('@')
                    .is_some_and(|(userinfo, _)| masked(userinfo));
            }
            text.split("://").skip(1).any(|after| {
                let authority = after.split(ends_a_quoted_uri).next().unwrap_or_default();
                authority
                    .rsplit_once('@')
                    .is_some_and(|(userinfo, _)| masked(userinfo))
            })
        }
        Value::Array(items) => items.iter().any(holds_hidden_secrets),
        Value::Object(map) => {
            map.get("password_hash").and_then(Value::as_str) == Some(HIDDEN_HASH)
                || map.values().any(holds_hidden_secrets)
        }
        _ => false,
    }
}

/// A value that is one URL as a whole (`--url`, `--amqp-url`, a profile's `url`, a
/// shovel's `src-uri`), as it may be printed. Its user information runs from `://` to
/// the value's last `@`, whatever characters the password holds: a quote, `<`, a space
/// or a tab (illegal in a URL, and typed all the same) cannot end it early. The user
/// name stays (`user:***@host`); anything else with an `@` loses everything before its
/// last `@` (it may be `user:password@host` without a scheme). An `@` in a path or a
/// query hides the host with the password, never the other way round.
pub fn redact_url(text: &str) -> String {
    if let Some(separator) = text.find("://") {
        let authority_start = separator + 3;
        return match text[authority_start..].rfind('@') {
            Some(at) => format!(
                "{}{}{}",
                &text[..authority_start],
                hidden_userinfo(&text[authority_start..authority_start + at]),
                &text[authority_start + at..]
            ),
            None => text.to_string(),
        };
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

    /// Passwords made of every printable ASCII character and some that are not ASCII,
    /// each in the middle and at both ends of a password.
    fn hard_passwords() -> Vec<String> {
        let mut characters: Vec<char> = (0x20u8..0x7f).map(char::from).collect();
        characters.extend(['\t', 'é', 'ß', '€', '\u{202e}', '🐇']);
        characters
            .into_iter()
            .map(|c| format!("{c}Pw{c}Zq{c}{c}9{c}"))
            .collect()
    }

    #[test]
    fn a_url_as_a_whole_hides_any_password() {
        for password in hard_passwords() {
            for url in [
                format!("amqp://deployer:{password}@mq.example:5672/%2F"),
                format!("https://deployer:{password}@mq.example"),
                format!("amqps://deployer:{password}@mq.example/v?heartbeat=5"),
            ] {
                for shown in [
                    redact_url(&url),
                    redact_uris(&json!(url)).as_str().unwrap().to_string(),
                    redact_uris(&json!({"uri": [url.clone()]}))["uri"][0]
                        .as_str()
                        .unwrap()
                        .to_string(),
                ] {
                    assert!(!shown.contains("Zq"), "{url:?} → {shown:?}");
                    assert!(shown.starts_with(&url[..url.find("://").unwrap() + 3]));
                    assert!(
                        shown.ends_with(&url[url.rfind('@').unwrap()..]),
                        "{shown:?}"
                    );
                    assert!(holds_hidden_secrets(&json!(shown)), "{shown:?}");
                }
            }
        }
    }

    #[test]
    fn a_uri_quoted_in_text_hides_a_password_of_any_legal_character() {
        // RFC 3986 userinfo: unreserved, percent-encoded, sub-delims and `:`; `@`
        // and `/` are taken to the last `@` as warren always has.
        let legal = |c: char| {
            c.is_ascii_alphanumeric() || "-._~%!$&'()*+,;=:@/".contains(c) || !c.is_ascii()
        };
        for password in hard_passwords() {
            if !password.chars().all(legal) {
                continue;
            }
            for text in [
                format!("failed: amqp://u:{password}@h:5672 refused"),
                format!("{{uri, \"amqp://u:{password}@h\"}}"),
                format!("'amqp://u:{password}@h' and more"),
            ] {
                let shown = redact_text(&text);
                assert!(!shown.contains("Zq"), "{text:?} → {shown:?}");
            }
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
