//! This binary's build, as the result file records it: the version, the last commit that
//! changed the code, the compiler and the profile. A crate of its own, used by the binary's
//! `main.rs` alone, so that a new commit rebuilds this stamp and nothing else.

#![forbid(unsafe_code)]

/// The build of this binary.
pub fn current() -> model::BuildInfo {
    model::BuildInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        commit: env!("OSPRIM_GIT_COMMIT").into(),
        rustc: env!("OSPRIM_RUSTC_VERSION").into(),
        profile: env!("OSPRIM_PROFILE").into(),
    }
}
