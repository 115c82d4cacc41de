//! "Did you mean" suggestions.

/// The candidate closest to `given`, if it is close enough to be a likely typo.
pub fn closest<'a>(given: &str, candidates: &'a [String]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|candidate| (strsim::jaro_winkler(given, candidate), candidate))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let names: Vec<String> = ["delays", "max_retries", "mode"].map(String::from).into();
        assert_eq!(closest("delay", &names), Some("delays"));
        assert_eq!(closest("max_retry", &names), Some("max_retries"));
        assert_eq!(closest("zzz", &names), None);
    }
}
