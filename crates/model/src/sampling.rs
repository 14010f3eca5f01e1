//! Constants of the sampling protocol that the layers after the sampler also need to know.

/// Batch-size checks over a run: each compares one batch of 8n operations with the mean of
/// `BATCH_CHECK_SIDE` batches of n before it and as many after it; at least six, so that a
/// sign test can reach 95 % (all six agreeing by chance: p = 2 × 2⁻⁶ ≈ 0.03), spread over the
/// rounds (`SamplerConfig::batch_checks`).
pub const BATCH_CHECKS: usize = 6;
