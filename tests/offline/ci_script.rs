//! `scripts/ci/warren-ci` itself, where no broker is needed: the flags it passes
//! warren (never twice), `install` from a stand-in release server (and from one that
//! nothing listens on), and `comment` on a GitLab merge request through a stand-in for
//! GitLab's notes API (`tests/offline/gitlab_notes_api.py`). The flow against a real
//! broker, and the GitHub comment, are in `tests/broker/ci_script.rs`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::support::{Capture, Run};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/ci/warren-ci");
const NOTES_API: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/offline/gitlab_notes_api.py"
);
/// A broker URL nothing listens on: warren exits 3 when it gets that far.
const NO_BROKER: &str = "http://127.0.0.1:1";

/// A repository that holds a spec, and the script's output directory `out/`.
struct Checkout {
    dir: tempfile::TempDir,
}

impl Checkout {
    fn new() -> Checkout {
        Checkout {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `warren-ci ARGS` in the checkout with the real warren, against a broker that
    /// cannot be reached, outside any CI system (the variables of GitHub and GitLab
    /// that the script reads are removed).
    fn script(&self, args: &[&str]) -> Command {
        let mut command = Command::new(SCRIPT);
        command
            .args(args)
            .current_dir(self.dir.path())
            .env("WARREN", env!("CARGO_BIN_EXE_warren"))
            .env("WARREN_CI_OUT", self.path("out"))
            .env("WARREN_URL", NO_BROKER)
            .env("WARREN_USER", "guest")
            .env("WARREN_PASSWORD", "guest")
            .env("NO_COLOR", "1");
        for variable in [
            "WARREN_TARGET_VERSION",
            "WARREN_ENV",
            "GITHUB_ACTIONS",
            "GITHUB_OUTPUT",
            "GITHUB_PATH",
            "GITLAB_CI",
            "GITLAB_TOKEN",
            "CI_API_V4_URL",
            "CI_PROJECT_ID",
            "CI_MERGE_REQUEST_IID",
        ] {
            command.env_remove(variable);
        }
        command
    }

    /// The same with a stand-in for warren that writes each call's arguments to
    /// `calls`, refuses a flag given twice as warren does, prints a plan, and exits
    /// 2 (changes) when asked for `--detailed-exitcode`.
    fn script_with_recording_warren(&self, args: &[&str]) -> Command {
        let stand_in = self.path("warren");
        std::fs::write(
            &stand_in,
            r#"#!/usr/bin/env bash
printf '%s\n' "$*" >>"$(dirname "$0")/calls"
seen=" "
for arg; do
    case "$arg" in --*)
        case "$seen" in *" $arg "*) echo "error: the argument '$arg' cannot be used multiple times" >&2; exit 2 ;; esac
        seen="$seen$arg " ;;
    esac
done
previous=""
for arg; do
    if [ "$previous" = -o ]; then echo '{}' >"$arg"; fi
    previous=$arg
done
case " $* " in *" --format markdown "*) printf '# warren plan\n\n- create queue orders.email\n' ;; esac
case " $* " in *" --format json "*) echo '{}' ;; esac
case " $* " in *" --detailed-exitcode "*) exit 2 ;; esac
exit 0
"#,
        )
        .unwrap();
        make_executable(&stand_in);
        let mut command = self.script(args);
        command.env("WARREN", &stand_in);
        command
    }

    /// The calls the stand-in warren received, one line each.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn example(name: &str) -> String {
    format!("{}/examples/{name}.yaml", env!("CARGO_MANIFEST_DIR"))
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

/// `plan --detailed-exitcode SPEC` and `plan SPEC -- --detailed-exitcode` are the same
/// run: warren gets the flag once (given twice, it refused with exit 2, which read as
/// "changes").
#[test]
fn plan_takes_detailed_exitcode_before_the_spec_or_after_the_double_dash() {
    let ladder = example("ladder");
    let checkout = Checkout::new();
    for args in [
        vec!["plan", "--detailed-exitcode", ladder.as_str()],
        vec!["plan", ladder.as_str(), "--", "--detailed-exitcode"],
    ] {
        // With warren itself: it gets as far as the broker, which cannot be reached.
        let run = checkout.script(&args).run().expect(3);
        assert!(
            !run.stderr.contains("cannot be used multiple times"),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains("warren plan exited 3"),
            "{}",
            run.stderr
        );
    }

    let checkout = Checkout::new();
    checkout
        .script_with_recording_warren(&["plan", "--detailed-exitcode", "warren.yaml"])
        .run()
        .expect(2);
    checkout
        .script_with_recording_warren(&["plan", "warren.yaml", "--", "--detailed-exitcode"])
        .run()
        .expect(2);
    // Without it, changes are not a failure.
    checkout
        .script_with_recording_warren(&["plan", "warren.yaml"])
        .run()
        .expect(0);
    let calls = checkout.calls();
    let markdown: Vec<&String> = calls
        .iter()
        .filter(|c| c.contains("--format markdown"))
        .collect();
    assert_eq!(markdown.len(), 3, "{calls:#?}");
    let saved = checkout.path("out/plan.saved.json");
    for call in markdown {
        assert_eq!(
            call,
            &format!(
                "plan warren.yaml --format markdown --detailed-exitcode -o {}",
                saved.display()
            )
        );
    }
    // The JSON plan comes from the saved one: the broker is read (and the spec's
    // warnings said) once per plan.
    let json: Vec<&String> = calls
        .iter()
        .filter(|c| c.contains("--format json"))
        .collect();
    assert_eq!(json.len(), 3, "{calls:#?}");
    for call in json {
        assert_eq!(call, &format!("show {} --format json", saved.display()));
    }
    assert_eq!(
        std::fs::read_to_string(checkout.path("out/plan.status")).unwrap(),
        "changes\n"
    );
}

/// The other flags warren-ci gives warren: `--auto-approve` (apply) and `--all-envs`
/// (lint) after `--` are taken once; `--format` (lint, plan) is refused with
/// warren-ci's own message before warren runs, and goes through where warren-ci
/// does not pass it (apply).
#[test]
fn flags_warren_ci_passes_itself_are_taken_once_or_refused() {
    let checkout = Checkout::new();
    checkout
        .script_with_recording_warren(&["apply", "warren.yaml", "--", "--auto-approve"])
        .run()
        .expect(0);
    assert_eq!(checkout.calls(), ["apply warren.yaml --auto-approve"]);

    // With warren itself: every environment of the example, linted once.
    let environments = example("environments");
    let run = checkout
        .script(&["lint", environments.as_str(), "--", "--all-envs"])
        .run()
        .expect(0);
    assert!(
        run.stderr.contains("warren lint exited 0"),
        "{}",
        run.stderr
    );

    for (mode, flag) in [
        ("plan", "--format"),
        ("plan", "--format=json"),
        ("lint", "--format"),
        ("lint", "--format=human"),
    ] {
        let checkout = Checkout::new();
        let run = checkout
            .script_with_recording_warren(&[mode, "warren.yaml", "--", flag, "json"])
            .run()
            .expect(64);
        assert!(
            run.stderr.contains(&format!(
                "warren-ci: {mode}: warren-ci already passes --format to warren"
            )) && run.stderr.contains(&format!("drop {flag} after --")),
            "{}",
            run.stderr
        );
        assert!(checkout.calls().is_empty(), "{:?}", checkout.calls());
    }

    let checkout = Checkout::new();
    checkout
        .script_with_recording_warren(&["apply", "warren.yaml", "--", "--format", "json"])
        .run()
        .expect(0);
    assert_eq!(
        checkout.calls(),
        ["apply warren.yaml --auto-approve --format json"]
    );

    let run = checkout
        .script_with_recording_warren(&["apply", "--detailed-exitcode", "warren.yaml"])
        .run()
        .expect(64);
    assert!(
        run.stderr.contains("--detailed-exitcode is for plan only"),
        "{}",
        run.stderr
    );
}

/// A server on a free local port, run by python3 (its first line of output is the
/// port); stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new("python3")
            .arg("-u")
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        assert!(!port.trim().is_empty(), "the server did not start");
        Server {
            child,
            url: format!("http://127.0.0.1:{}", port.trim()),
        }
    }

    /// `python3 -m http.server`'s handler, serving `dir`.
    fn files(dir: &Path) -> Server {
        Server::start(&[
            "-c",
            "import functools, http.server, sys\n\
             class Quiet(http.server.SimpleHTTPRequestHandler):\n\
             \x20   def log_message(self, *args): pass\n\
             handler = functools.partial(Quiet, directory=sys.argv[1])\n\
             server = http.server.HTTPServer(('127.0.0.1', 0), handler)\n\
             print(server.server_address[1])\n\
             server.serve_forever()",
            dir.to_str().unwrap(),
        ])
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn install(checkout: &Checkout, release_url: &str, bin: &Path) -> Run {
    checkout
        .script(&["install", "9.9.9"])
        .env("WARREN_CI_RELEASE_URL", release_url)
        .env("WARREN_CI_BIN_DIR", bin)
        .run()
}

/// A release server nothing listens on: curl's error once (not once per try), then a
/// summary of what was not installed and the ways around it; exit 3.
#[test]
fn install_from_an_unreachable_server_says_what_failed_once() {
    let checkout = Checkout::new();
    let bin = checkout.path("bin");
    let run = install(&checkout, &format!("{NO_BROKER}/v{{version}}"), &bin);
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    let stderr = &run.stderr;
    assert_eq!(count(stderr, "curl: (7)"), 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "install failed: could not download {NO_BROKER}/v9.9.9/warren-9.9.9-x86_64-linux"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("not downloaded: the binary and its .sha256; nothing was installed in"),
        "{stderr}"
    );
    for way in ["WARREN_CI_RELEASE_URL", "WARREN_CI_CARGO_INSTALL=1", "PATH"] {
        assert!(stderr.contains(way), "{way}: {stderr}");
    }
    assert!(!bin.join("warren").exists());
}

/// From a stand-in release server: installed when the checksum matches; nothing
/// installed when it does not (exit 1), or when a file is missing (exit 3, with the
/// HTTP status curl saw).
#[test]
fn install_checks_the_release_checksum() {
    let checkout = Checkout::new();
    // Laid out as a GitHub release: `…/download/vVERSION/FILE`.
    let releases = checkout.path("releases");
    let release = releases.join("v9.9.9");
    std::fs::create_dir_all(&release).unwrap();
    let name = "warren-9.9.9-x86_64-linux";
    let write_release = |binary: &str| {
        std::fs::write(release.join(name), binary).unwrap();
        let sum = Command::new("sha256sum")
            .arg(name)
            .current_dir(&release)
            .output()
            .unwrap();
        std::fs::write(release.join(format!("{name}.sha256")), &sum.stdout).unwrap();
    };
    write_release("#!/bin/sh\necho 'warren 9.9.9 (stand-in)'\n");
    let server = Server::files(&releases);
    let url = format!("{}/v{{version}}", server.url);

    let good = checkout.path("bin");
    let run = install(&checkout, &url, &good).expect(0);
    assert!(
        run.stderr.contains("installed: warren 9.9.9 (stand-in)"),
        "{}",
        run.stderr
    );
    assert!(good.join("warren").is_file());

    // A binary that is not the one the checksum names is not installed.
    std::fs::write(release.join(name), "#!/bin/sh\necho tampered\n").unwrap();
    let bad = checkout.path("bad-bin");
    let run = install(&checkout, &url, &bad);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("does not match"), "{}", run.stderr);
    assert!(!bad.join("warren").exists());

    // The checksum file missing: the binary is not installed unchecked.
    write_release("#!/bin/sh\necho 'warren 9.9.9 (stand-in)'\n");
    std::fs::remove_file(release.join(format!("{name}.sha256"))).unwrap();
    let run = install(&checkout, &url, &bad);
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stderr.contains("returned error: 404")
            && run.stderr.contains("not downloaded: the checksum"),
        "{}",
        run.stderr
    );
    assert!(!bad.join("warren").exists());

    // A version that was never released.
    let run = checkout
        .script(&["install", "0.0.1"])
        .env("WARREN_CI_RELEASE_URL", &url)
        .env("WARREN_CI_BIN_DIR", &bad)
        .run();
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert_eq!(
        count(&run.stderr, "returned error: 404"),
        1,
        "{}",
        run.stderr
    );
    assert!(!bad.join("warren").exists());
}

/// The stand-in notes API of one merge request, with somebody else's notes there
/// first (one quoting the marker, one another spec's), two notes a page.
struct GitLab {
    dir: tempfile::TempDir,
    server: Server,
}

const TOKEN: &str = "glpat-stand-in-token";

impl GitLab {
    fn new() -> GitLab {
        let dir = tempfile::tempdir().unwrap();
        let notes = serde_json::json!([
            {"id": 1000, "body": "See the <!-- warren-ci plan: warren.yaml --> note below", "author": {"id": 3}},
            {"id": 1001, "body": "quote \"x\" and é {[", "author": {"id": 4, "body": "<!-- warren-ci plan: warren.yaml -->"}},
            {"id": 1002, "body": "<!-- warren-ci plan: other.yaml -->\n\nother"},
        ]);
        std::fs::write(dir.path().join("notes.json"), notes.to_string()).unwrap();
        let server = Server::start(&[NOTES_API, dir.path().to_str().unwrap(), TOKEN, "2"]);
        GitLab { dir, server }
    }

    /// `warren-ci comment warren.yaml` in a GitLab CI merge request pipeline.
    fn comment(&self, checkout: &Checkout, token: Option<&str>) -> Run {
        let mut command = checkout.script(&["comment", "warren.yaml"]);
        command
            .env("GITLAB_CI", "true")
            .env("CI_API_V4_URL", format!("{}/api/v4", self.server.url))
            .env("CI_PROJECT_ID", "42")
            .env("CI_MERGE_REQUEST_IID", "7");
        if let Some(token) = token {
            command.env("GITLAB_TOKEN", token);
        }
        command.run()
    }

    fn notes(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("notes.json")).unwrap();
        serde_json::from_str::<Value>(&text)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("requests"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn methods(requests: &[Value]) -> Vec<String> {
    requests
        .iter()
        .map(|r| format!("{} {}", r["method"].as_str().unwrap(), r["path"]))
        .collect()
}

/// On a merge request: one note, posted on the first push and updated on the next
/// (found again by its marker on the notes' second page), never a note per push; a
/// plan too long for a note is cut.
#[test]
fn comment_on_gitlab_posts_one_note_then_updates_it() {
    let gitlab = GitLab::new();
    let checkout = Checkout::new();
    std::fs::create_dir(checkout.path("out")).unwrap();
    let first = "# warren plan\n\n| object | change |\n|---|---|\n| `orders` | create & bind: 100% \"new\" |\n";
    std::fs::write(checkout.path("out/plan.md"), first).unwrap();
    let run = gitlab.comment(&checkout, Some(TOKEN)).expect(0);
    assert!(
        run.stderr.contains("posted a note on merge request !7"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(TOKEN), "{}", run.stderr);
    let notes = gitlab.notes();
    assert_eq!(notes.len(), 4, "{notes:#?}");
    assert_eq!(
        notes[3]["body"],
        format!("<!-- warren-ci plan: warren.yaml -->\n\n{first}")
    );

    let second = "# warren plan\n\nNo changes.\n";
    std::fs::write(checkout.path("out/plan.md"), second).unwrap();
    let run = gitlab.comment(&checkout, Some(TOKEN)).expect(0);
    assert!(
        run.stderr.contains("updated note 1003 on merge request !7"),
        "{}",
        run.stderr
    );
    let notes = gitlab.notes();
    assert_eq!(notes.len(), 4, "updated, not a note per push: {notes:#?}");
    assert_eq!(
        notes[3]["body"],
        format!("<!-- warren-ci plan: warren.yaml -->\n\n{second}")
    );
    assert_eq!(
        notes[0]["body"], "See the <!-- warren-ci plan: warren.yaml --> note below",
        "a note that quotes the marker is not warren's"
    );
    let requests = gitlab.requests();
    let notes_path = "\"/api/v4/projects/42/merge_requests/7/notes\"";
    assert_eq!(
        methods(&requests),
        [
            format!("GET {notes_path}"),
            format!("GET {notes_path}"),
            format!("POST {notes_path}"),
            format!("GET {notes_path}"),
            format!("GET {notes_path}"),
            "PUT \"/api/v4/projects/42/merge_requests/7/notes/1003\"".to_string(),
        ],
        "{requests:#?}"
    );
    assert!(requests.iter().all(|r| r["authorized"] == true));

    // A plan longer than a note holds (1,000,000 characters): cut at a line's end.
    let line = format!("| `queue` | {} |\n", "x".repeat(88));
    std::fs::write(checkout.path("out/plan.md"), line.repeat(12_000)).unwrap();
    gitlab.comment(&checkout, Some(TOKEN)).expect(0);
    let notes = gitlab.notes();
    assert_eq!(notes.len(), 4);
    let body = notes[3]["body"].as_str().unwrap();
    assert!(body.len() < 1_000_000, "{}", body.len());
    assert!(
        body.ends_with("*The plan is longer than a comment holds: the rest is in the job log and in plan.md.*\n"),
        "{}",
        &body[body.len() - 200..]
    );
}

/// Without GITLAB_TOKEN, nothing is sent and the error says which token is needed;
/// a token GitLab refuses is reported with its HTTP status.
#[test]
fn comment_on_gitlab_without_a_usable_token_fails_clearly() {
    let gitlab = GitLab::new();
    let checkout = Checkout::new();
    std::fs::create_dir(checkout.path("out")).unwrap();
    std::fs::write(checkout.path("out/plan.md"), "# warren plan\n").unwrap();

    let run = gitlab.comment(&checkout, None);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("comment on GitLab needs GITLAB_TOKEN")
            && run.stderr.contains("CI_JOB_TOKEN cannot write"),
        "{}",
        run.stderr
    );
    assert!(gitlab.requests().is_empty());

    let run = gitlab.comment(&checkout, Some("glpat-wrong"));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("GitLab refused GITLAB_TOKEN for GET")
            && run.stderr.contains("(HTTP 401)"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("glpat-wrong"), "{}", run.stderr);
    assert_eq!(gitlab.notes().len(), 3, "nothing posted");
}
