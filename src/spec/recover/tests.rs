use std::path::Path;

use super::*;

fn at(line: usize, column: usize) -> Location {
    Location { line, column }
}

/// The text with the entry at `location` blanked.
fn blanked(text: &str, location: Location) -> String {
    let entry = entry_at(text, location).expect("an entry there");
    let mut text = text.to_string();
    assert!(blank(&mut text, &entry), "the entry was blank already");
    text
}

#[test]
fn a_block_entry_is_blanked_with_its_value_and_nothing_else() {
    let text = "a: 1\nb:\n  c: x\n  d: y\ne: 2\n";
    assert_eq!(blanked(text, at(3, 3)), "a: 1\nb:\n      \n  d: y\ne: 2\n");
    assert_eq!(blanked(text, at(3, 6)), "a: 1\nb:\n      \n  d: y\ne: 2\n");
}

#[test]
fn the_innermost_entry_holding_a_list_item_goes_whole() {
    let text = "a:\n  b:\n    - 1\n    - x\nc: 3\n";
    let out = blanked(text, at(4, 7));
    assert_eq!(out.lines().nth(4), Some("c: 3"));
    // `b` was all `a` held: an empty map takes its place, not nothing (null).
    assert_eq!(out.lines().nth(1).map(str::trim), Some("{}"));
    assert!(
        out.lines()
            .skip(2)
            .take(2)
            .all(|line| line.trim().is_empty())
    );
    assert_eq!(out.lines().next(), Some("a:"));
}

#[test]
fn the_last_entry_of_a_block_mapping_leaves_an_empty_map_and_no_error_above_it() {
    let text = "a:\n  b:\n    c: x\n  d: 1\n";
    assert_eq!(blanked(text, at(3, 5)), "a:\n  b:\n    {}  \n  d: 1\n");
    // Not the last: plain blanks.
    assert_eq!(blanked(text, at(4, 3)), "a:\n  b:\n    c: x\n      \n");
}

#[test]
fn an_entry_of_a_flow_mapping_goes_with_its_comma() {
    assert_eq!(
        blanked("r: { delays: [30 sec], x: 1 }\n", at(1, 15)),
        "r: {                   x: 1 }\n"
    );
    assert_eq!(
        blanked("r: { x: 1, delays: [30 sec] }\n", at(1, 21)),
        "r: { x: 1                   }\n"
    );
}

#[test]
fn blanking_keeps_every_other_line_and_column() {
    let text = "é: ü\nb: 1\n";
    let out = blanked(text, at(1, 1));
    assert_eq!(out, "    \nb: 1\n");
    assert_eq!(out.lines().count(), text.lines().count());
}

#[test]
fn no_entry_holds_a_place_outside_every_mapping() {
    assert_eq!(entry_at("- a\n- b\n", at(2, 3)), None);
}

fn errors_of(text: &str) -> Vec<Diagnostic> {
    crate::spec::load_str(Path::new("spec.yaml"), text.to_string())
        .expect_err("the spec has errors")
}

const THREE_MISTAKES: &str = "version: 1
vhosts:
  shop:
    services:
      orders:
        consumers:
          email:
            typ: quorum
            routing_key: [order.paid]
            retry:
              delays: [30 sec]
";

#[test]
fn every_mistake_is_reported_in_one_run_where_it_is() {
    let found = errors_of(THREE_MISTAKES);
    let seen: Vec<(&str, usize, usize)> = found
        .iter()
        .map(|d| (d.code, d.location.unwrap().line, d.location.unwrap().column))
        .collect();
    assert_eq!(seen.len(), 3, "{found:#?}");
    assert_eq!(seen[0].0, "unknown-key");
    assert_eq!((seen[0].1, seen[0].2), (8, 13));
    assert_eq!(seen[1].0, "unknown-key");
    assert_eq!((seen[1].1, seen[1].2), (9, 13));
    assert_eq!(seen[2].1, 11);
    assert_eq!(found[0].help.as_deref(), Some("did you mean `type`?"));
    assert_eq!(
        found[1].help.as_deref(),
        Some("did you mean `routing_keys`?")
    );
    assert_eq!(found[2].code, "invalid-value");
}

#[test]
fn a_required_key_with_a_bad_value_is_not_also_reported_missing() {
    let found = errors_of("version: two\nvhosts: {}\n");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_ne!(found[0].code, "missing-key");
}

#[test]
fn past_the_cap_the_rest_are_counted_in_one_diagnostic() {
    let mut text = String::from("version: 1\n");
    for n in 0..(MAX_SHOWN + 10) {
        text.push_str(&format!("unknown{n}: 1\n"));
    }
    let found = errors_of(&text);
    assert_eq!(found.len(), MAX_SHOWN + 1);
    let more = found.last().unwrap();
    assert_eq!(more.code, "more-errors");
    assert_eq!(more.message, "10 more errors in this file, not shown");
    assert_eq!(more.location, Some(at(MAX_SHOWN + 2, 1)));
    let counted: usize = found.iter().map(Diagnostic::errors_counted).sum();
    assert_eq!(counted, MAX_SHOWN + 10);
}

#[test]
fn a_syntax_error_ends_the_search() {
    let found = errors_of("version: 1\ntyp: x\nvhosts: [a\n");
    assert!(!found.is_empty());
    assert!(found.len() <= 2, "{found:#?}");
}
