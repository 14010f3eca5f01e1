//! Benchmark ids (`family.operation[.variant]`) and the patterns that select them: an id, a
//! family prefix, a glob, or a substring. Shared by the registry, the history and every command
//! that takes a pattern.

/// Whether `pattern` selects `id`: the id, a family prefix, a glob, or a substring.
pub fn matches(pattern: &str, id: &str) -> bool {
    matches_whole(pattern, id) || (!pattern.contains('*') && id.contains(pattern))
}

/// Whether `pattern` is `id`, a dotted prefix of it, or a glob matching it.
pub fn matches_whole(pattern: &str, id: &str) -> bool {
    if pattern.contains('*') {
        return glob(pattern.as_bytes(), id.as_bytes());
    }
    id == pattern || id.strip_prefix(pattern).is_some_and(|rest| rest.starts_with('.'))
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob(&p[1..], s) || (!s.is_empty() && glob(p, &s[1..])),
        (Some(a), Some(b)) if a == b => glob(&p[1..], &s[1..]),
        _ => false,
    }
}
