//! No secret in any output: every command and output format, on a spec whose users'
//! passwords come from the environment and from a file and whose shovel and federation
//! URIs carry credentials from the environment, with every `WARREN_*` variable holding
//! credentials too, and a broker refusal that echoes a URI with its password.
//!
//! Every secret is a distinctive string, so that a search for it means something.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::node::{Node, Version};
use crate::spec::Spec;
use crate::support::{self, Capture, Run};

/// The federation upstream's password, in the URI from `FED_URI`. The passwords in URIs
/// hold a single quote, legal in a URI's user information (RFC 3986), which once ended
/// a URI early for warren's redaction and let the password through.
const FEDERATION: &str = "Fed'SecretAA1";
/// The shovel's password, in the URIs from `SHOVEL_URI`.
const SHOVEL: &str = "Shovel'SecretBB2";
/// A user's password, from `USER_PASSWORD`.
const USER_FROM_ENV: &str = "UserPwEnvCC3";
/// A user's password, from a file.
const USER_FROM_FILE: &str = "UserPwFileDD4";
/// Credentials in the `WARREN_*` variables.
const IN_WARREN_URL: &str = "Url'PwEE5";
const IN_WARREN_AMQP_URL: &str = "Amqp'PwFF6";
const IN_WARREN_PASSWORD: &str = "WarrenPwGG7";

const SECRETS: &[&str] = &[
    FEDERATION,
    SHOVEL,
    USER_FROM_ENV,
    USER_FROM_FILE,
    IN_WARREN_URL,
    IN_WARREN_AMQP_URL,
    IN_WARREN_PASSWORD,
];

/// Everything the sweep saw: outputs of every run and every file written.
struct Sweep<'a> {
    node: &'a Node,
    fed_uri: String,
    shovel_uri: String,
    outputs: Vec<(String, String)>,
    /// Files written, and whether they are meant to carry URI credentials.
    files: Vec<(PathBuf, bool)>,
}

impl Sweep<'_> {
    fn environment(&self, command: &mut std::process::Command) {
        command
            .env("FED_URI", &self.fed_uri)
            .env("SHOVEL_URI", &self.shovel_uri)
            .env("USER_PASSWORD", USER_FROM_ENV)
            .env(
                "WARREN_URL",
                format!("http://deployer:{IN_WARREN_URL}@127.0.0.1:1"),
            )
            .env("WARREN_USER", "deployer")
            .env("WARREN_PASSWORD", IN_WARREN_PASSWORD)
            .env(
                "WARREN_AMQP_URL",
                format!(
                    "amqp://deployer:{IN_WARREN_AMQP_URL}@127.0.0.1:{}",
                    self.node.amqp_port
                ),
            );
    }

    fn keep(&mut self, args: &[&str], run: Run) -> Run {
        let what = args.join(" ");
        self.outputs
            .push((format!("stdout of {what}"), run.stdout.clone()));
        self.outputs
            .push((format!("stderr of {what}"), run.stderr.clone()));
        run
    }

    /// `warren ARGS` without a broker.
    fn offline(&mut self, args: &[&str]) -> Run {
        let mut command = support::warren(args);
        self.environment(&mut command);
        let run = command.run();
        self.keep(args, run)
    }

    /// `warren ARGS` against the node.
    fn live(&mut self, args: &[&str]) -> Run {
        let mut command = self.node.warren(args);
        self.environment(&mut command);
        let run = command.run();
        self.keep(args, run)
    }

    /// A file a run wrote. An export and a saved plan carry the shovel's and the
    /// federation's URIs as they are, for the broker and for `apply` (documented in
    /// docs/plan-format.md): they are `carries_uris`, readable by their owner only.
    fn written(&mut self, path: &Path, carries_uris: bool) -> String {
        assert!(path.exists(), "{} was written", path.display());
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} is for its owner only", path.display());
        self.files.push((path.to_path_buf(), carries_uris));
        path.to_str().unwrap().to_string()
    }

    /// Asserts that no secret is in any output, and none in any file but the URIs'
    /// credentials in the files that carry them (clear passwords are only hashes there).
    fn check(&self) {
        for (what, text) in &self.outputs {
            for secret in SECRETS {
                assert!(!text.contains(secret), "`{secret}` in the {what}:\n{text}");
            }
        }
        for (file, carries_uris) in &self.files {
            let text = std::fs::read_to_string(file).unwrap();
            let in_uris = [FEDERATION, SHOVEL];
            for secret in SECRETS
                .iter()
                .filter(|secret| !(*carries_uris && in_uris.contains(secret)))
            {
                assert!(
                    !text.contains(secret),
                    "`{secret}` in {}:\n{text}",
                    file.display()
                );
            }
        }
    }
}

fn spec_text(name: &str, vhost: &str) -> String {
    format!(
        "version: 1
name: {name}
vhosts:
  {vhost}:
    queues:
      inbox: {{}}
    parameters:
      federation-upstream:
        origin:
          uri: {{ env: FED_URI }}
      shovel:
        mover:
          src-uri: {{ env: SHOVEL_URI }}
          src-queue: inbox
          dest-uri: {{ env: SHOVEL_URI }}
          dest-queue: outbox
users:
  {vhost}-env:
    password: {{ env: USER_PASSWORD }}
    permissions:
      {vhost}: {{ configure: '^inbox$', write: '^inbox$', read: '^inbox$' }}
  {vhost}-file:
    password: {{ file: password.txt }}
"
    )
}

#[expect(
    clippy::too_many_lines,
    reason = "one trial over every command that prints: the list is the test"
)]
fn no_secret_in_any_output(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("secrets");
    let spec = Spec::new(&spec_text(&format!("secrets-{vhost}"), &vhost));
    let directory = spec.path.parent().unwrap().to_path_buf();
    std::fs::write(
        directory.join("password.txt"),
        format!("{USER_FROM_FILE}\n"),
    )
    .unwrap();
    let at = |file: &str| directory.join(file);
    let port = node.amqp_port;
    let mut sweep = Sweep {
        node,
        fed_uri: format!("amqp://fed:{FEDERATION}@127.0.0.1:{port}/%2F"),
        shovel_uri: format!("amqp://shovel:{SHOVEL}@127.0.0.1:{port}/%2F"),
        outputs: Vec::new(),
        files: Vec::new(),
    };
    let spec = spec.arg();

    // Without a broker.
    sweep.offline(&["validate", spec]).expect(0);
    let compiled = sweep.offline(&["compile", spec]).expect(0);
    assert!(compiled.stdout.contains("fed:***@"), "{}", compiled.stdout);
    sweep.offline(&["compile", spec, "--contract"]).expect(0);
    let export = at("definitions.json");
    sweep
        .offline(&["export", spec, "-o", export.to_str().unwrap()])
        .expect(0);
    let export = sweep.written(&export, true);
    for format in ["human", "github", "sarif", "json"] {
        sweep.offline(&["lint", spec, "--format", format]);
        sweep.offline(&["lint", "--definitions", &export, "--format", format]);
    }
    for subcommand in [
        "validate", "compile", "export", "schema", "plan", "apply", "lint", "import", "rules",
        "unlock", "diff",
    ] {
        let mut command = support::warren(&[subcommand, "--help"]);
        sweep.environment(&mut command);
        command.env("WARREN_CA_CERT", "/nonexistent/ca.pem");
        let run = command.run().expect(0);
        sweep.keep(&[subcommand, "--help"], run);
    }

    // Against the broker.
    let plan = sweep.live(&["plan", "--detailed-exitcode", spec]).expect(2);
    assert!(
        plan.stdout.contains("federation-upstream/origin"),
        "{}",
        plan.stdout
    );
    sweep
        .live(&["plan", "--detailed-exitcode", spec, "--format", "json"])
        .expect(2);
    // The apply lock over an AMQP URL with credentials that does not answer.
    let unreachable = format!("amqp://deployer:{IN_WARREN_AMQP_URL}@127.0.0.1:1/");
    let refused = sweep
        .live(&["apply", spec, "--auto-approve", "--amqp-url", &unreachable])
        .expect(3);
    assert!(
        refused
            .stderr
            .contains("cannot take the apply lock at amqp://")
            && refused.stderr.contains("127.0.0.1:1/"),
        "{}",
        refused.stderr
    );
    let saved = at("plan.json");
    sweep
        .live(&[
            "plan",
            "--detailed-exitcode",
            spec,
            "-o",
            saved.to_str().unwrap(),
        ])
        .expect(2);
    let saved = sweep.written(&saved, true);
    sweep
        .live(&["apply", &saved, "--auto-approve", "--lock-timeout", "2m"])
        .expect(0);
    sweep.live(&["plan", spec]).expect(0);
    sweep.live(&["state", "show", spec]).expect(0);
    sweep.live(&["state", "repair", spec]).expect(0);
    // The previous command's lock connection can still be listed for a moment after
    // that process exits (seen on 4.3: "locked by … holding it for 0 seconds"): then
    // `unlock` refuses to free another holder's lock (4). Either answer is checked for
    // secrets, which is what this sweep is for.
    let unlock = sweep.live(&["unlock", spec, "--holder", "nobody:1:0"]);
    assert!(
        matches!(unlock.code, Some(0 | 4)),
        "{}{}",
        unlock.stdout,
        unlock.stderr
    );
    // Imported under the spec's own name (another name would leave out everything
    // this spec manages): URI credentials come as environment references, never as
    // text.
    let name = format!("secrets-{vhost}");
    let imported = at("imported.yaml");
    sweep
        .live(&[
            "import",
            "--vhost",
            &vhost,
            "--name",
            &name,
            "-o",
            imported.to_str().unwrap(),
        ])
        .expect(0);
    sweep.written(&imported, false);
    let imported_stdout = sweep
        .live(&["import", "--vhost", &vhost, "--name", &name, "-o", "-"])
        .expect(0);
    assert!(
        imported_stdout.stdout.contains("env: ")
            && imported_stdout
                .stdout
                .contains("_FEDERATION_UPSTREAM_ORIGIN_URI"),
        "{}",
        imported_stdout.stdout
    );
    let from_file = at("from-export.yaml");
    sweep
        .offline(&[
            "import",
            "--from",
            &export,
            "-o",
            from_file.to_str().unwrap(),
        ])
        .expect(0);
    sweep.written(&from_file, false);
    let diff = sweep.offline(&["diff", spec, "--against", &export]);
    assert!(matches!(diff.code, Some(0 | 2)), "{diff:?}");

    // The broker refuses a URI it cannot parse and echoes it, password included.
    sweep.fed_uri = format!("amqp://fed:{FEDERATION}@127.0.0.1:99999999/%2F");
    sweep.live(&["plan", "--detailed-exitcode", spec]).expect(2);
    let refused_plan = at("refused-plan.json");
    sweep
        .live(&[
            "plan",
            "--detailed-exitcode",
            spec,
            "-o",
            refused_plan.to_str().unwrap(),
        ])
        .expect(2);
    let refused_plan = sweep.written(&refused_plan, true);
    for target in [refused_plan.as_str(), spec] {
        let refused = sweep
            .live(&["apply", target, "--auto-approve", "--lock-timeout", "2m"])
            .expect(1);
        assert!(
            refused.stderr.contains("not a valid URI") && refused.stderr.contains("fed:***@"),
            "the broker's refusal, which echoes the URI, is shown redacted:\n{}",
            refused.stderr
        );
    }
    sweep.check();
}

per_version!(no_secret_in_any_output);
