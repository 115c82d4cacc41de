//! warren's integration tests against real RabbitMQ 3.10 and 4.0 nodes: nodes booted
//! from exported definitions, `plan`/`apply`/`diff`/`import` against live brokers, and
//! the retry topologies exercised with a real AMQP client.
//!
//! The brokers are installed by `scripts/install-brokers` (run as root). A broker that
//! is missing fails the tests that need it; nothing here is ever skipped. Run these
//! tests alone with `cargo test --test broker`; the tests that need no broker are in
//! `tests/offline/`.
//!
//! Most scenarios share one node per version for the whole binary (`Node::shared`) and
//! isolate themselves by vhost and spec name; tests that need a node of their own (to
//! boot it from definitions, or because examples share a vhost) start one.

#[path = "../support/mod.rs"]
mod support;

/// Turns scenarios, functions taking a [`node::Version`], into one test per broker
/// version: in the calling module, `per_version!(a, b)` defines the tests
/// `on_3_10::a`, `on_3_10::b`, `on_4_0::a` and `on_4_0::b`.
///
/// Defined before the modules below so that they can all use it.
macro_rules! per_version {
    ($($scenario:ident),* $(,)?) => {
        mod on_3_10 {
            $(#[test] fn $scenario() { super::$scenario($crate::node::Version::V3_10); })*
        }
        mod on_4_0 {
            $(#[test] fn $scenario() { super::$scenario($crate::node::Version::V4_0); })*
        }
    };
}

mod amqp;
mod background;
mod node;
mod report;
mod spec;
mod warren;

mod apply_safety;
mod boot_definitions;
mod ci_script;
mod cluster;
mod connect;
mod corpus;
mod crash;
mod environments;
mod faults;
mod import;
mod locks;
mod migrate;
mod name_endings;
mod ownership;
mod permissions;
mod plan_apply;
mod policy_truth;
mod progress;
mod pull_request;
mod refusals;
mod replay;
mod reserved_names;
mod retry_behaviour;
mod secrets;
mod signals;
mod smoke;
mod status;
mod trace;
