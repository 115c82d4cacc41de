//! The JSON Schema of the spec, as committed under `schemas/`.

/// The schema, pretty-printed with a trailing newline.
pub fn spec_schema_json() -> String {
    let mut schema = schemars::schema_for!(crate::spec::Spec);
    schema.insert("title".into(), "warren spec".into());
    serde_json::to_string_pretty(&schema).expect("a schema serializes")
}
