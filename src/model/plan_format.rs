//! The format marker of a saved plan (`"format": "warren-plan/3"`, docs/plan-format.md):
//! here, at the leaf, because two layers read it: `plan/` writes and reads plan files,
//! and `spec/` tells a saved plan given where a spec is expected from a spec before
//! parsing it as YAML.

/// Identifies a plan document. Version 2 carries the desired state, so that apply can
/// recompute the changes instead of trusting them; version 3 may leave the unchanged
/// exchanges, queues and bindings out of it, counted and digested (`unchanged`).
pub const PLAN_FORMAT: &str = "warren-plan/3";

/// The version before [`PLAN_FORMAT`], still read: a version 2 plan is a version 3
/// plan with nothing left out.
pub const READ_TOO: &str = "warren-plan/2";

/// Whether `format` marks a plan document of any version (`warren-plan/1`,
/// `warren-plan/2` …): the family of [`PLAN_FORMAT`], its text up to the version.
pub fn is_plan_format(format: &str) -> bool {
    let family = &PLAN_FORMAT[..=PLAN_FORMAT.rfind('/').expect("a versioned format")];
    format.starts_with(family)
}

/// The format marker of `text` when it is a JSON object whose `format` marks a plan
/// ([`is_plan_format`]), or a plan cut short (its first key, where warren writes
/// `format`, marks one); `None` for anything else. Only text that starts with `{` is
/// scanned, once, without building its values: a YAML spec is not parsed twice.
pub fn saved_plan_format(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Marker {
        format: Option<String>,
    }
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let format = match serde_json::from_str::<Marker>(text) {
        Ok(marker) => marker.format,
        Err(err) if err.is_eof() => leading_format(text),
        Err(_) => None,
    };
    format.filter(|format| is_plan_format(format))
}

/// The value of `format` when it is the first key of the JSON object `text` starts
/// with, read whatever follows it.
fn leading_format(text: &str) -> Option<String> {
    use serde::Deserialize;
    let rest = text.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix("\"format\"")?.trim_start();
    let rest = rest.strip_prefix(':')?;
    String::deserialize(&mut serde_json::Deserializer::from_str(rest)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_of_the_plan_format_is_one_family() {
        assert!(is_plan_format(PLAN_FORMAT));
        assert!(is_plan_format("warren-plan/1"));
        assert!(is_plan_format("warren-plan/3"));
        assert!(!is_plan_format("warren-apply/1"));
        assert!(!is_plan_format("warren-planned"));
    }

    #[test]
    fn only_a_json_object_marked_as_a_plan_is_a_saved_plan() {
        let plan =
            format!("\n  {{\"spec\": \"shop\", \"format\": \"{PLAN_FORMAT}\", \"changes\": []}}");
        assert_eq!(saved_plan_format(&plan).as_deref(), Some(PLAN_FORMAT));
        assert_eq!(
            saved_plan_format(r#"{"format": "warren-plan/1"}"#).as_deref(),
            Some("warren-plan/1")
        );
        // A YAML spec, a YAML flow mapping, JSON that is not a plan, a cut plan.
        assert_eq!(
            saved_plan_format("name: shop\nformat: warren-plan/2\n"),
            None
        );
        assert_eq!(saved_plan_format("{name: shop}"), None);
        assert_eq!(saved_plan_format(r#"{"rabbit_version": "3.13.0"}"#), None);
        assert_eq!(saved_plan_format(r#"{"format": "warren-apply/1"}"#), None);
        // A plan cut short is still a plan.
        assert_eq!(
            saved_plan_format("{\n  \"format\": \"warren-plan/3\",\n  \"spec\": \"sh").as_deref(),
            Some(PLAN_FORMAT)
        );
        assert_eq!(
            saved_plan_format(r#"{"spec": "shop", "format": "warren-plan/2""#),
            None
        );
    }
}
