//! Tests of the comparison formats.
use super::*;
