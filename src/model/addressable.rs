//! Names the management API cannot address. Every object warren manages is read and
//! written at a URL that holds its name (and its vhost's) as one path segment,
//! percent-encoded. A segment `.` or `..` is a dot segment: URL normalisation (the
//! client's, before anything is sent; `%2E` is read as `.` too) removes it or the
//! segment before it, so `GET /api/queues/v/..` becomes `GET /api/queues`, the
//! listing of every queue. No encoding reaches such an object over HTTP, so a spec may
//! not hold these names, and `import` leaves objects with them out (and says so).
//!
//! The rule is kept apart from the other name checks so that every caller asks the
//! same question: `compile` (every name of the compiled output, at its line) and
//! `import` (the names on a broker).

/// Why `name` cannot be addressed through the management API, if it cannot.
pub fn unaddressable(name: &str) -> Option<&'static str> {
    match name {
        "." | ".." => Some(
            "URL normalisation turns that path segment into another path (`/api/queues/v/..` is read as `/api/queues`), so the management API can neither read nor change it",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dot_segments_are_unaddressable() {
        assert!(unaddressable(".").is_some());
        assert!(unaddressable("..").is_some());
        for fine in ["...", ".a", "a..", "orders.email", "%2e", "/"] {
            assert_eq!(unaddressable(fine), None, "{fine}");
        }
    }
}
