//! Broker profiles in the config file and `warren config`: where the file is looked
//! for, which value wins (flag, then `WARREN_*` variable, then profile, then default),
//! the refusals (unknown profile, bad TOML, a readable file with a password) and that
//! no password is ever printed. No broker: `warren config` contacts none, and the one
//! `plan` here is pointed at a port where nothing listens.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{self, Capture, Run, SHOP_PASSWORDS};

/// A password that must never be printed.
const PASSWORD: &str = "Pr0filePassw0rd";

const PROD: &str = r#"
[default]
url = "http://default-node:15672"

[prod]
url = ["http://rabbit-1:15672", "http://rabbit-2:15672"]
user = "deployer"
password_env = "PROD_RABBIT_PASSWORD"
amqp_url = "amqp://rabbit-1:5672"
timeout = 30
"#;

/// A home directory with `~/.config/warren/config.toml` holding `text` (mode 0600).
fn home_with(text: &str) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".config/warren");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config.toml");
    write(&file, text, 0o600);
    (home, file)
}

fn write(file: &Path, text: &str, mode: u32) {
    std::fs::write(file, text).unwrap();
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `warren ARGS` with `home` as HOME, no XDG_CONFIG_HOME and no broker variables of
/// the developer's shell.
fn warren_in(home: &Path, args: &[&str]) -> Command {
    let mut command = support::warren(args);
    command.env("HOME", home).env_remove("XDG_CONFIG_HOME");
    for name in [
        "WARREN_URL",
        "WARREN_USER",
        "WARREN_PASSWORD",
        "WARREN_AMQP_URL",
        "WARREN_CA_CERT",
        "WARREN_TIMEOUT",
        "WARREN_PROFILE",
        "WARREN_CONFIG",
        "RABBITMQ_DEFAULT_USER",
        "RABBITMQ_DEFAULT_PASS",
        "PROD_RABBIT_PASSWORD",
    ] {
        command.env_remove(name);
    }
    command
}

fn json_of(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|err| panic!("{err}: {}", run.stdout))
}

#[track_caller]
fn assert_no_password(run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(!text.contains(PASSWORD), "password in {stream}:\n{text}");
    }
}

#[test]
fn a_flag_wins_over_its_variable_which_wins_over_the_profile_which_wins_over_the_default() {
    let (home, file) = home_with(PROD);
    let run = warren_in(
        home.path(),
        &[
            "config",
            "--profile",
            "prod",
            "--url",
            "http://flag-node:15672",
            "--format",
            "json",
        ],
    )
    .env("WARREN_URL", "http://variable-node:15672")
    .env("WARREN_USER", "variable-user")
    .env("PROD_RABBIT_PASSWORD", PASSWORD)
    .run()
    .expect(0);
    assert_no_password(&run);
    let report = json_of(&run);
    let settings = &report["settings"];
    let profile_source = format!("profile prod in {}", file.display());
    assert_eq!(settings["url"]["value"][0], "http://flag-node:15672");
    assert_eq!(settings["url"]["source"], "--url flag");
    assert_eq!(settings["user"]["value"], "variable-user");
    assert_eq!(settings["user"]["source"], "WARREN_USER");
    assert_eq!(settings["timeout"]["value"], 30);
    assert_eq!(settings["timeout"]["source"], profile_source.as_str());
    assert_eq!(settings["amqp_url"]["from"], "profile");
    assert_eq!(settings["password"]["set"], true);
    assert_eq!(
        settings["password"]["source"],
        format!("password_env PROD_RABBIT_PASSWORD of {profile_source}").as_str()
    );
    assert_eq!(settings["ca_cert"]["from"], "default");
    assert_eq!(report["profile"]["name"], "prod");
    assert_eq!(report["profile"]["source"], "--profile flag");
    assert_eq!(report["profiles"], serde_json::json!(["default", "prod"]));

    // Without the flag, the variable; without either, the profile; without a
    // profile's key, the default.
    let run = warren_in(home.path(), &["config"])
        .env("WARREN_PROFILE", "prod")
        .env("WARREN_URL", "http://variable-node:15672")
        .run()
        .expect(1);
    assert!(
        run.stdout
            .contains("url       http://variable-node:15672  (WARREN_URL)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("profile:     prod (WARREN_PROFILE)"));
    assert!(
        run.stdout
            .contains(&format!("user      deployer  ({profile_source})")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("password  not set  (password_env"));
    // The password variable is not set: said, and exit 1, since no command could
    // connect.
    assert!(
        run.stderr
            .contains("the variable PROD_RABBIT_PASSWORD is not set"),
        "{}",
        run.stderr
    );
    let run = warren_in(home.path(), &["config", "--profile", "prod"])
        .env("PROD_RABBIT_PASSWORD", PASSWORD)
        .run()
        .expect(0);
    assert!(run.stdout.contains(&format!(
        "url       http://rabbit-1:15672, http://rabbit-2:15672  ({profile_source})"
    )));
    assert!(
        run.stdout.contains("ca_cert   not set  (default)"),
        "{}",
        run.stdout
    );
    assert_no_password(&run);
}

#[test]
fn the_default_profile_applies_when_none_is_named() {
    let (home, file) = home_with(PROD);
    let run = warren_in(home.path(), &["config"]).run().expect(0);
    assert!(
        run.stdout.contains(&format!(
            "config file: {} (the default place)",
            file.display()
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("profile:     default (the `default` profile, used when none is named)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("http://default-node:15672"));
    assert!(
        run.stdout.contains("user      guest  (default)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("timeout   60 s  (default)"),
        "{}",
        run.stdout
    );
}

#[test]
fn an_unknown_profile_names_those_that_exist_and_the_likely_one() {
    let (home, file) = home_with(PROD);
    let run = warren_in(home.path(), &["config", "--profile", "prd"])
        .run()
        .expect(1);
    assert!(
        run.stderr.contains(&format!(
            "error: no profile `prd` in {} (did you mean `prod`?); its profiles: default, prod",
            file.display()
        )),
        "{}",
        run.stderr
    );
    // The same in every command that reaches a broker, before any request.
    let run = warren_in(home.path(), &["plan", "examples/shop.yaml"])
        .env("WARREN_PROFILE", "prd")
        .envs(SHOP_PASSWORDS.iter().copied())
        .run()
        .expect(1);
    assert!(
        run.stderr.contains("did you mean `prod`?"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_password_in_a_file_others_may_read_is_refused_and_accepted_at_0600() {
    let text = format!("[prod]\nurl = \"http://rabbit:15672\"\npassword = \"{PASSWORD}\"\n");
    let (home, file) = home_with(&text);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = warren_in(home.path(), &["config", "--profile", "prod"])
        .run()
        .expect(1);
    assert_no_password(&run);
    for part in [
        &file.display().to_string(),
        "mode 0644",
        &format!("chmod 600 {}", file.display()),
        "password_env",
        "password_file",
    ] {
        assert!(run.stderr.contains(part), "no `{part}` in {}", run.stderr);
    }
    // A broker command refuses it too, as bad input.
    let run = warren_in(home.path(), &["plan", "examples/shop.yaml"])
        .envs(SHOP_PASSWORDS.iter().copied())
        .run()
        .expect(1);
    assert!(run.stderr.contains("chmod 600"), "{}", run.stderr);
    assert_no_password(&run);

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    for format in ["text", "json"] {
        let run = warren_in(
            home.path(),
            &["config", "--profile", "prod", "--format", format],
        )
        .run()
        .expect(0);
        assert_no_password(&run);
        assert!(run.stdout.contains("set"), "{}", run.stdout);
    }

    // A password written in a URL is a clear-text password too.
    let in_url = format!("[prod]\nurl = \"http://ops:{PASSWORD}@rabbit:15672\"\n");
    write(&file, &in_url, 0o640);
    let run = warren_in(home.path(), &["config"]).run().expect(1);
    assert!(run.stderr.contains("mode 0640"), "{}", run.stderr);
    assert_no_password(&run);
    write(&file, &in_url, 0o600);
    let run = warren_in(home.path(), &["config", "--profile", "prod"])
        .run()
        .expect(0);
    assert!(
        run.stdout.contains("http://ops:***@rabbit:15672"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("password  set  (the URL)"),
        "{}",
        run.stdout
    );
    assert_no_password(&run);

    // Without a clear-text password, anyone may read the file.
    write(&file, PROD, 0o644);
    warren_in(home.path(), &["config"]).run().expect(0);
}

#[test]
fn a_toml_error_says_where_and_hides_the_password() {
    let (home, file) = home_with(&format!(
        "[prod]\nuser = \"ops\"\npassword = 12{PASSWORD}\n"
    ));
    let run = warren_in(home.path(), &["config"]).run().expect(1);
    assert!(
        run.stderr.contains(&format!("{}:3:", file.display())),
        "{}",
        run.stderr
    );
    assert_no_password(&run);

    write(&file, "[prod]\nuser = \"ops\"\n  usr = \"x\"\n", 0o600);
    let run = warren_in(home.path(), &["config", "--format", "json"])
        .run()
        .expect(1);
    assert!(
        run.stderr
            .contains(&format!("{}:3:3: unknown field `usr`", file.display())),
        "{}",
        run.stderr
    );
    // A JSON report that failed says why in JSON.
    let document = json_of(&run);
    let message = document["error"]["messages"][0]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("unknown field `usr`"), "{document}");

    write(&file, "[prod]\ntimeout = \"soon\"\n", 0o600);
    let run = warren_in(home.path(), &["config"]).run().expect(1);
    assert!(
        run.stderr.contains(&format!("{}:2:11: ", file.display())),
        "{}",
        run.stderr
    );
}

#[test]
fn a_config_file_named_must_exist_and_the_default_one_may_not() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("nowhere.toml");
    let run = warren_in(
        home.path(),
        &["config", "--config", missing.to_str().unwrap()],
    )
    .run()
    .expect(1);
    assert!(
        run.stderr.contains(&format!(
            "cannot read the config file {}",
            missing.display()
        )),
        "{}",
        run.stderr
    );

    let run = warren_in(home.path(), &["config"]).run().expect(0);
    assert!(
        run.stdout.contains(&format!(
            "config file: none ({} does not exist)",
            home.path().join(".config/warren/config.toml").display()
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("url       http://localhost:15672  (default)")
    );
    // A profile named without any file says where the file was looked for.
    let run = warren_in(home.path(), &["config", "--profile", "prod"])
        .run()
        .expect(1);
    assert!(
        run.stderr
            .contains("no profile `prod`: there is no config file")
    );
}

#[test]
fn the_file_is_found_under_xdg_config_home_before_home() {
    let (home, in_home) = home_with("[athome]\n");
    let xdg = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(xdg.path().join("warren")).unwrap();
    let in_xdg = xdg.path().join("warren/config.toml");
    write(&in_xdg, "[inxdg]\n", 0o600);

    let run = warren_in(home.path(), &["config"]).run().expect(0);
    assert!(run.stdout.contains(&in_home.display().to_string()));
    assert!(run.stdout.contains("profiles:    athome"), "{}", run.stdout);

    let run = warren_in(home.path(), &["config"])
        .env("XDG_CONFIG_HOME", xdg.path())
        .run()
        .expect(0);
    assert!(run.stdout.contains(&in_xdg.display().to_string()));
    assert!(run.stdout.contains("profiles:    inxdg"), "{}", run.stdout);

    // WARREN_CONFIG names another file, whose relative password file is read beside it.
    let other = xdg.path().join("other.toml");
    write(
        &other,
        "[side]\npassword_file = \"side-password\"\nca_cert = \"ca.pem\"\n",
        0o644,
    );
    std::fs::write(xdg.path().join("side-password"), format!("{PASSWORD}\n")).unwrap();
    let run = warren_in(home.path(), &["config", "--profile", "side"])
        .env("WARREN_CONFIG", &other)
        .run()
        .expect(0);
    assert_no_password(&run);
    assert!(run.stdout.contains("(WARREN_CONFIG)"), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "password  set  (password_file {} of profile side",
            xdg.path().join("side-password").display()
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&xdg.path().join("ca.pem").display().to_string())
    );
}

/// The profile reaches the broker client of a command that connects: its URL is the
/// one the connection error names.
#[test]
fn a_profile_reaches_the_broker_client() {
    let (home, _) = home_with(
        "[unreachable]\nurl = \"http://127.0.0.1:1\"\nuser = \"ops\"\npassword_env = \"PROD_RABBIT_PASSWORD\"\ntimeout = 5\n",
    );
    let started = std::time::Instant::now();
    let run = warren_in(
        home.path(),
        &["plan", "examples/shop.yaml", "--profile", "unreachable"],
    )
    .env("PROD_RABBIT_PASSWORD", PASSWORD)
    .envs(SHOP_PASSWORDS.iter().copied())
    .run();
    support::assert_connection_error(
        &run,
        started.elapsed(),
        &["http://127.0.0.1:1", "connection refused"],
        PASSWORD,
    );
}
