//! No secret in any output, without a broker: diagnostics about passwords written in
//! the spec, `--help` with credentials in the environment, URLs that do not parse, and
//! the mode of the files warren writes. (`tests/broker/secrets.rs` sweeps every command
//! against live brokers.)

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::{self, Capture, Run, SHOP_PASSWORDS};

/// Every subcommand, for `--help`.
const SUBCOMMANDS: &[&str] = &[
    "validate", "compile", "export", "schema", "plan", "apply", "lint", "import", "rules",
    "unlock", "diff", "config",
];

#[track_caller]
fn assert_hidden(run: &Run, secrets: &[&str], what: &str) {
    for secret in secrets {
        for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(
                !text.contains(secret),
                "{what}: `{secret}` in {stream}:\n{text}"
            );
        }
    }
}

/// A spec with a secret written where it must not be, and the diagnostic it gets.
struct BadSpec {
    yaml: &'static str,
    secret: &'static str,
    code: &'static str,
    masked_line: &'static str,
}

const BAD_SPECS: &[BadSpec] = &[
    BadSpec {
        yaml: "users:\n  app:\n    password: { value: ValueSecretCC3 }\n",
        secret: "ValueSecretCC3",
        code: "unknown-key",
        masked_line: "    password: ***",
    },
    BadSpec {
        yaml: "users:\n  app:\n    password: [ListSecretDD4]\n",
        secret: "ListSecretDD4",
        code: "invalid-type",
        masked_line: "    password: ***",
    },
    BadSpec {
        yaml: "users:\n  app:\n    pasword: TypoSecretEE5\n",
        secret: "TypoSecretEE5",
        code: "unknown-key",
        masked_line: "    pasword: ***",
    },
    BadSpec {
        yaml: "users:\n  app:\n    password: ClearSecretFF6\n",
        secret: "ClearSecretFF6",
        code: "clear-text-password",
        masked_line: "    password: ***",
    },
    BadSpec {
        yaml: "users:\n  app:\n    password:\n      value: NestedSecretGG7\n",
        secret: "NestedSecretGG7",
        code: "unknown-key",
        masked_line: "      value: ***",
    },
    BadSpec {
        yaml: "users:\n  app:\n    password: 98765432\n",
        secret: "98765432",
        code: "invalid-type",
        masked_line: "    password: ***",
    },
    BadSpec {
        yaml: "users:\n  app:\n    passwd: \"Quoted SecretHH8\"\n",
        secret: "SecretHH8",
        code: "unknown-key",
        masked_line: "    passwd: ***",
    },
];

#[test]
fn diagnostics_quote_the_key_and_mask_a_password() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("spec.yaml");
    let spec = path.to_str().unwrap();
    let out = directory.path().join("out.json");
    for bad in BAD_SPECS {
        std::fs::write(
            &path,
            format!("version: 1\nvhosts:\n  shop: {{}}\n{}", bad.yaml),
        )
        .unwrap();
        let mut runs = vec![
            ("validate", vec!["validate", spec]),
            ("compile", vec!["compile", spec]),
            ("compile --contract", vec!["compile", spec, "--contract"]),
            ("export", vec!["export", spec, "-o", out.to_str().unwrap()]),
        ];
        for format in ["human", "github", "sarif", "json"] {
            runs.push(("lint", vec!["lint", spec, "--format", format]));
        }
        for (what, args) in runs {
            let run = support::warren(&args).run().expect(1);
            assert_hidden(&run, &[bad.secret], &format!("{what} of {}", bad.yaml));
            let output = format!("{}{}", run.stdout, run.stderr);
            assert!(output.contains(bad.code), "{what}: {output}");
        }
        let run = support::warren(&["validate", spec]).run().expect(1);
        assert!(
            run.stderr.contains(&format!("| {}\n", bad.masked_line)),
            "the line is quoted, masked:\n{}",
            run.stderr
        );
        assert!(!out.exists(), "nothing was written");
    }
}

#[test]
fn help_shows_variable_names_not_their_secret_values() {
    let secrets = [
        "UrlSecretKK1",
        "AmqpSecretLL2",
        "UserSecretMM3",
        "PasswordSecretNN4",
    ];
    let environment = [
        ("WARREN_URL", "http://deployer:UrlSecretKK1@127.0.0.1:1"),
        (
            "WARREN_AMQP_URL",
            "amqp://deployer:AmqpSecretLL2@127.0.0.1:1",
        ),
        ("WARREN_USER", "UserSecretMM3"),
        ("WARREN_PASSWORD", "PasswordSecretNN4"),
        ("WARREN_CA_CERT", "/nonexistent/ca.pem"),
        ("WARREN_TARGET_VERSION", "4.0"),
    ];
    let top = support::warren(&["--help"])
        .envs(environment)
        .run()
        .expect(0);
    assert_hidden(&top, &secrets, "warren --help");
    for subcommand in SUBCOMMANDS {
        let run = support::warren(&[subcommand, "--help"])
            .envs(environment)
            .run()
            .expect(0);
        assert_hidden(&run, &secrets, &format!("warren {subcommand} --help"));
        if ["plan", "apply", "import", "unlock"].contains(subcommand) {
            // The AMQP URL is listed only where warren deletes or locks over AMQP.
            let amqp = ["apply", "unlock"]
                .contains(subcommand)
                .then_some("WARREN_AMQP_URL");
            for name in ["WARREN_URL", "WARREN_USER", "WARREN_PASSWORD"]
                .into_iter()
                .chain(amqp)
            {
                assert!(
                    run.stdout.contains(&format!("[env: {name}]")),
                    "{subcommand} --help names {name}:\n{}",
                    run.stdout
                );
            }
        }
    }
}

#[test]
fn urls_that_do_not_parse_are_printed_without_their_credentials() {
    let shapes = [
        "http://deployer:Se@cret99@127.0.0.1:notaport",
        "deployer:Se@cret99@127.0.0.1:notaport",
        "http://deployer:S@e@c@ret99@127.0.0.1:notaport/x",
        "ftp://deployer:Se@cret99@127.0.0.1:1",
        "http://deployer:Se/cret99@127.0.0.1:notaport",
    ];
    for shape in shapes {
        let by_flag =
            support::run_with_shop_passwords(&["plan", "examples/shop.yaml", "--url", shape])
                .expect(1);
        let by_variable = support::warren(&["plan", "examples/shop.yaml"])
            .envs(SHOP_PASSWORDS.iter().copied())
            .env("WARREN_URL", shape)
            .run()
            .expect(1);
        let amqp = support::run_with_shop_passwords(&[
            "plan",
            "examples/shop.yaml",
            "--url",
            "http://127.0.0.1:1",
            "--amqp-url",
            &shape.replace("http://", "amqp://"),
        ])
        .expect(1);
        for run in [&by_flag, &by_variable, &amqp] {
            assert!(run.stderr.contains("invalid --"), "{shape}: {}", run.stderr);
            assert_hidden(run, &["cret99", "Se@", "Se/"], shape);
        }
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn written_files_are_for_their_owner_only() {
    let directory = tempfile::tempdir().unwrap();
    let export = directory.path().join("definitions.json");
    let export = export.to_str().unwrap();
    support::run_with_shop_passwords(&["export", "examples/shop.yaml", "-o", export]).expect(0);
    assert_eq!(mode(Path::new(export)), 0o600, "a new export");
    std::fs::set_permissions(export, std::fs::Permissions::from_mode(0o644)).unwrap();
    support::run_with_shop_passwords(&["export", "examples/shop.yaml", "-o", export]).expect(0);
    assert_eq!(
        mode(Path::new(export)),
        0o600,
        "an export written over a 0644 file"
    );

    let imported = directory.path().join("imported.yaml");
    std::fs::write(&imported, "old").unwrap();
    std::fs::set_permissions(&imported, std::fs::Permissions::from_mode(0o644)).unwrap();
    support::warren(&["import", "--from", export, "-o", imported.to_str().unwrap()])
        .run()
        .expect(0);
    assert_eq!(mode(&imported), 0o600, "an imported spec");
}

/// Passwords made of every printable ASCII character and some that are not ASCII (each
/// at both ends and in the middle), with the marker `Zq` a leak would show.
fn hard_passwords() -> Vec<String> {
    let mut characters: Vec<char> = (0x20u8..0x7f).map(char::from).collect();
    characters.extend(['\t', 'é', '€', '\u{202e}', '🐇']);
    characters
        .into_iter()
        .map(|c| format!("{c}Pw{c}Zq{c}{c}9{c}"))
        .collect()
}

/// `warren config` (text and JSON) and `warren compile` never print a password in a
/// URL, whatever characters it holds: URLs from the environment (`WARREN_URL`,
/// `WARREN_AMQP_URL`), a shovel's and a federation upstream's URIs from the spec.
#[test]
fn no_password_of_any_character_is_printed_from_a_url() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("uris.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: uris\nvhosts:\n  v:\n    queues:\n      inbox: {}\n    parameters:\n      federation-upstream:\n        origin:\n          uri: { env: FED_URI }\n      shovel:\n        mover:\n          src-uri: { env: SHOVEL_URI }\n          src-queue: inbox\n          dest-uri: [{ env: SHOVEL_URI }]\n          dest-queue: outbox\n",
    )
    .unwrap();
    let spec = spec.to_str().unwrap();
    for password in hard_passwords() {
        let environment = [
            (
                "WARREN_URL",
                format!("http://deployer:{password}@127.0.0.1:1"),
            ),
            (
                "WARREN_AMQP_URL",
                format!("amqp://deployer:{password}@127.0.0.1:1"),
            ),
            ("FED_URI", format!("amqp://fed:{password}@origin.example")),
            (
                "SHOVEL_URI",
                format!("amqps://shovel:{password}@mq.example:5671/%2F"),
            ),
        ];
        for args in [
            &["config"][..],
            &["config", "--format", "json"],
            &["compile", spec],
            &["compile", spec, "--target-version", "3.10"],
        ] {
            let run = support::warren(args).envs(environment.clone()).run();
            assert!(
                run.code == Some(0) || args[0] == "config",
                "{args:?} with {password:?}: {}",
                run.stderr
            );
            assert_hidden(&run, &["Zq"], &format!("{args:?} with {password:?}"));
        }
    }
}
