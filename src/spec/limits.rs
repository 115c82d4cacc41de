//! How much YAML warren reads as a spec, and what it says when a file goes over.
//!
//! A spec is read whole and every node is kept with its position, so a hostile or
//! generated file (a 10 MB dump, a "billion laughs" of nested aliases, 10,000 nested
//! brackets) would cost memory and time before any check could speak. The limits are
//! far above what a hand-written spec needs (the largest example is a few hundred
//! lines; a spec of 10,000 consumers is about 1 MB and 60,000 nodes) and are fixed:
//! a spec that reaches one is better split than loaded.

use super::diagnostic::Diagnostic;

/// Largest spec file read, in bytes (8 MiB).
pub const MAX_BYTES: usize = 8 * 1024 * 1024;
/// Most YAML nodes (scalars, lists and maps) in one spec.
pub const MAX_NODES: usize = 500_000;
/// Deepest nesting of lists and maps (a spec needs about 10 levels).
pub const MAX_DEPTH: usize = 64;
/// Most `*alias` references in one spec.
pub const MAX_ALIASES: usize = 10_000;
/// Most YAML events the aliases of one spec may expand to, all aliases together.
pub const MAX_ALIAS_EXPANSION: usize = 200_000;

/// What to do about a spec that is too large: said under every limit.
pub const SPLIT_HELP: &str = "split the spec into several specs (each spec owns its own objects, for example one per vhost or team), and say repeated settings once with `defaults` and named `ladders`";

/// The parser options that enforce the limits.
pub fn parser_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_nodes: MAX_NODES,
            max_events: MAX_NODES * 2,
            max_depth: MAX_DEPTH,
            flow_nesting_limit: MAX_DEPTH + 1,
            max_aliases: MAX_ALIASES,
            max_documents: 1,
            max_total_scalar_bytes: MAX_BYTES,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_ALIAS_EXPANSION,
            max_replay_stack_depth: MAX_DEPTH,
        },
    }
}

/// A limit or a size in messages.
pub fn grouped(n: usize) -> String {
    crate::model::shorten::grouped(n as u64)
}

/// The diagnostic for a file larger than [`MAX_BYTES`]; `size` is its length.
pub fn too_large(size: u64) -> Diagnostic {
    Diagnostic::error(
        "spec-too-large",
        format!(
            "the spec is {} bytes; warren reads specs of at most {} bytes (8 MiB)",
            crate::model::shorten::grouped(size),
            grouped(MAX_BYTES)
        ),
    )
    .help(SPLIT_HELP)
}

/// Words for a breach of the YAML budget: which limit, its value, what to do.
pub fn budget_breach(breach: &serde_saphyr::budget::BudgetBreach) -> Diagnostic {
    use serde_saphyr::budget::BudgetBreach as B;
    match breach {
        B::Nodes { .. } | B::Events { .. } => Diagnostic::error(
            "spec-too-large",
            format!(
                "the spec has more than {} YAML nodes (values, lists and maps), warren's limit",
                grouped(MAX_NODES)
            ),
        )
        .help(SPLIT_HELP),
        B::Depth { .. } => too_deep(),
        B::Aliases { .. } | B::Anchors { .. } | B::AliasAnchorRatio { .. } => {
            alias_limit(format!(
                "the spec uses more than {} `*alias` references, warren's limit",
                grouped(MAX_ALIASES)
            ))
        }
        B::RecordedAnchorEvents { .. } | B::RecordedAnchorBytes { .. } => alias_limit(
            "the spec's `&anchors` hold more YAML than warren keeps for aliases".to_string(),
        ),
        B::Documents { .. } => multiple_documents(),
        B::ScalarBytes { .. } | B::InputBytes { .. } => Diagnostic::error(
            "spec-too-large",
            format!(
                "the spec's values hold more than {} bytes of text, warren's limit",
                grouped(MAX_BYTES)
            ),
        )
        .help(SPLIT_HELP),
        _ => Diagnostic::error(
            "spec-too-large",
            "the spec goes over one of the limits warren sets on YAML (size, nodes, nesting, aliases)",
        )
        .help(SPLIT_HELP),
    }
}

/// The diagnostic for lists and maps nested deeper than [`MAX_DEPTH`].
pub fn too_deep() -> Diagnostic {
    Diagnostic::error(
        "spec-too-deep",
        format!(
            "lists and maps are nested more than {MAX_DEPTH} levels deep here, warren's limit (a spec needs about 10)"
        ),
    )
    .help("close the brackets that are left open, or write the nested value flatter")
}

/// The diagnostic for aliases that expand beyond [`MAX_ALIAS_EXPANSION`].
pub fn alias_expansion() -> Diagnostic {
    alias_limit(format!(
        "the spec's `*alias` references expand to more than {} YAML events, warren's limit (a \"billion laughs\" of aliases of aliases)",
        grouped(MAX_ALIAS_EXPANSION)
    ))
}

fn alias_limit(message: String) -> Diagnostic {
    Diagnostic::error("too-many-aliases", message).help(
        "write the values out, or say them once with `defaults` and named `ladders` instead of YAML aliases",
    )
}

/// The diagnostic for a second YAML document (`---`) in a spec file.
pub fn multiple_documents() -> Diagnostic {
    Diagnostic::error(
        "multiple-documents",
        "a second YAML document starts here; a spec file holds one document",
    )
    .help("remove the `---` line, or move the second document to a spec file of its own")
}
