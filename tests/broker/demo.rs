//! `scripts/demo`, the README's first command, end to end on RabbitMQ 3.10 (the
//! node it starts is the host's `rabbitmq-server`): plan, apply, and a plan with no
//! changes left, every example exported, a consumer contract printed.

use std::path::Path;
use std::process::Command;

#[test]
fn the_demo_applies_the_shop_and_finds_nothing_left_to_do() {
    crate::saying_failures(
        "demo::the_demo_applies_the_shop_and_finds_nothing_left_to_do",
        demo,
    );
}

fn demo() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("scripts/demo"))
        .current_dir(root)
        .env("WARREN_BIN", env!("CARGO_BIN_EXE_warren"))
        .env_remove("WARREN_URL")
        .env_remove("WARREN_PROFILE")
        .env_remove("WARREN_CONFIG")
        .output()
        .expect("scripts/demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "scripts/demo failed:\n{stdout}\n{stderr}"
    );
    let again = stdout
        .split("==> warren plan examples/shop.yaml   (again: nothing left to do)")
        .nth(1)
        .unwrap_or_else(|| panic!("no second plan:\n{stdout}"));
    let second_plan = again.split("==> warren export").next().unwrap();
    assert!(
        second_plan.contains("No changes. The broker matches the spec."),
        "the second plan found changes:\n{second_plan}"
    );
    let applied = stdout
        .split("==> warren apply examples/shop.yaml --auto-approve")
        .nth(1)
        .unwrap();
    assert!(applied.contains("Applied: 91 changes"), "{applied}");
    assert!(stdout.contains("\"consumers\""), "the contract is printed");
}
