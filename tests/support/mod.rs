//! Shared support for warren's integration tests.
//!
//! Test files include it with `mod support;`. Every test binary uses a
//! different subset of it, hence the blanket `dead_code`/`unused_imports`
//! allowance.
#![allow(dead_code, unused_imports)]

pub mod amqp;
pub mod broker;

pub use broker::{Node, NodeOptions, Version, pct, rabbit_password_hash, wait_until};
