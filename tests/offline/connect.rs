//! Connecting to a broker goes wrong in a handful of ways a new user meets first; each
//! gets one line that says what happened and what to do, fast, and without the
//! password. The servers here are tiny local stand-ins for what answered.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::support::{self, Capture, Run, SHOP_PASSWORDS};

const PASSWORD: &str = "s3cret-pw";

/// `warren plan examples/shop.yaml --url URL` with a password to keep out of messages.
fn plan(url: &str) -> (Run, Duration) {
    let started = Instant::now();
    let run = support::warren(&[
        "plan",
        "examples/shop.yaml",
        "--url",
        url,
        "--user",
        "ops",
        "--password",
        PASSWORD,
    ])
    .envs(SHOP_PASSWORDS.iter().copied())
    .run();
    (run, started.elapsed())
}

/// [`support::assert_connection_error`] with this file's password.
#[track_caller]
fn assert_error(run: &Run, waited: Duration, parts: &[&str]) {
    support::assert_connection_error(run, waited, parts, PASSWORD);
}

/// A server on 127.0.0.1 that reads what a client sends first and answers `answer`,
/// then closes the connection. Returns its port.
fn server(answer: &'static [u8]) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut first = [0u8; 4096];
                let _ = stream.read(&mut first);
                let _ = stream.write_all(answer);
            });
        }
    });
    port
}

#[test]
fn a_url_without_a_scheme_suggests_http() {
    for (given, meant) in [
        ("127.0.0.1:15672", "did you mean http://127.0.0.1:15672?"),
        ("localhost:15672", "did you mean http://localhost:15672?"),
    ] {
        let (run, waited) = plan(given);
        assert_error(&run, waited, &[&format!("invalid --url `{given}`"), meant]);
    }
}

#[test]
fn an_amqp_url_as_url_points_at_the_management_port() {
    let (run, waited) = plan(&format!("amqp://ops:{PASSWORD}@rabbit:5672"));
    assert_error(
        &run,
        waited,
        &["that is an AMQP URL", "http://rabbit:15672"],
    );
}

#[test]
fn a_host_name_that_does_not_resolve_is_named() {
    // RFC 6761: `.invalid` never resolves.
    let (run, waited) = plan("http://nonexistent.invalid:15672");
    assert_error(
        &run,
        waited,
        &["cannot resolve host name `nonexistent.invalid`", "DNS"],
    );
}

#[test]
fn the_amqp_port_is_recognised_by_its_protocol_header() {
    let port = server(b"AMQP\x00\x00\x09\x01");
    let (run, waited) = plan(&format!("http://127.0.0.1:{port}"));
    assert_error(
        &run,
        waited,
        &[
            &format!("http://127.0.0.1:{port}/ is RabbitMQ's AMQP port"),
            "AMQP\\x00\\x00\\x09\\x01",
            "did you mean http://127.0.0.1:15672/?",
        ],
    );
}

#[test]
fn https_against_a_plain_http_port_suggests_http() {
    let port =
        server(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let (run, waited) = plan(&format!("https://127.0.0.1:{port}"));
    assert_error(
        &run,
        waited,
        &[
            &format!(
                "TLS handshake with https://127.0.0.1:{port}/ failed: the server there speaks plain HTTP, not HTTPS"
            ),
            &format!("did you mean http://127.0.0.1:{port}/?"),
        ],
    );
}

#[test]
fn http_against_a_tls_port_suggests_https() {
    // A TLS alert record: what a TLS server answers a plain HTTP request with.
    let port = server(b"\x15\x03\x03\x00\x02\x02\x32");
    let (run, waited) = plan(&format!("http://127.0.0.1:{port}"));
    assert_error(
        &run,
        waited,
        &[
            &format!(
                "HTTP request to http://127.0.0.1:{port}/ failed: the server there speaks HTTPS (TLS), not plain HTTP"
            ),
            &format!("did you mean https://127.0.0.1:{port}/?"),
        ],
    );
}

/// Some TLS servers close a plain connection without a byte, as a restarting node
/// may: still retried, and the error says what to try.
#[test]
fn http_against_a_server_that_closes_at_once_mentions_https() {
    let port = server(b"");
    let (run, waited) = plan(&format!("http://127.0.0.1:{port}"));
    assert_error(
        &run,
        waited,
        &[
            "the server closed the connection without answering",
            &format!("if that port serves HTTPS, use https://127.0.0.1:{port}/"),
        ],
    );
}

#[test]
fn a_web_server_that_is_not_the_management_api_is_named() {
    let not_found = server(
        b"HTTP/1.1 404 Not Found\r\nServer: nginx/1.24.0\r\nContent-Type: text/html\r\nContent-Length: 34\r\nConnection: close\r\n\r\n<html><h1>404 Not Found</h1></html>",
    );
    let (run, waited) = plan(&format!("http://127.0.0.1:{not_found}"));
    assert_error(
        &run,
        waited,
        &[
            &format!(
                "GET http://127.0.0.1:{not_found}/api/whoami answered 404 with text/html (Server: nginx/1.24.0), which is not RabbitMQ's management API"
            ),
            "usually port 15672",
        ],
    );

    // JSON, but not RabbitMQ's: its body (here with a token) is never printed.
    let other_json = server(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 33\r\nConnection: close\r\n\r\n{\"status\":\"up\",\"token\":\"t0ken-x\"}",
    );
    let (run, waited) = plan(&format!("http://127.0.0.1:{other_json}"));
    assert_error(
        &run,
        waited,
        &["answered 200 with application/json, which is not RabbitMQ's management API"],
    );
    assert!(!run.stderr.contains("t0ken-x"), "{}", run.stderr);

    // A login page, even one that answers 200 or 401.
    for (status, answer) in [
        ("200", &b"HTTP/1.1 200 OK\r\nServer: Apache\r\nContent-Type: text/html\r\nContent-Length: 21\r\nConnection: close\r\n\r\n<form>Sign in</form>\n"[..]),
        ("401", &b"HTTP/1.1 401 Unauthorized\r\nServer: Apache\r\nWWW-Authenticate: Basic realm=\"x\"\r\nContent-Type: text/html\r\nContent-Length: 21\r\nConnection: close\r\n\r\n<form>Sign in</form>\n"[..]),
    ] {
        let port = server(answer);
        let (run, waited) = plan(&format!("http://127.0.0.1:{port}"));
        assert_error(
            &run,
            waited,
            &[&format!("answered {status} with text/html (Server: Apache), which is not RabbitMQ's management API")],
        );
    }
}

/// With no URL given anywhere, warren tries http://localhost:15672 and, when that
/// fails, says it was the default and where a URL and a login go.
#[test]
fn nothing_configured_says_where_the_url_goes() {
    let run = support::warren(&["plan", "examples/shop.yaml", "--timeout", "5"])
        .env_clear()
        .env("NO_COLOR", "1")
        .envs(SHOP_PASSWORDS.iter().copied())
        .run();
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    for part in [
        "http://localhost:15672 is the default, used because neither --url, WARREN_URL nor a profile gave one",
        "--user/--password or WARREN_USER/WARREN_PASSWORD",
        "--profile",
        "e.g. --url http://",
    ] {
        assert!(run.stderr.contains(part), "no `{part}` in: {}", run.stderr);
    }

    // A URL given but empty says so, with the same advice.
    let run = support::warren(&["plan", "examples/shop.yaml"])
        .env_clear()
        .env("WARREN_URL", " ")
        .envs(SHOP_PASSWORDS.iter().copied())
        .run();
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("no broker URL") && run.stderr.contains("WARREN_USER/WARREN_PASSWORD"),
        "{}",
        run.stderr
    );
}

/// With several nodes, the error says what went wrong at each, once per URL.
#[test]
fn every_node_of_a_cluster_list_gets_its_own_reason() {
    let amqp = server(b"AMQP\x00\x00\x09\x01");
    let (run, waited) = plan(&format!(
        "http://nonexistent.invalid:15672,http://127.0.0.1:{amqp}"
    ));
    assert_error(
        &run,
        waited,
        &[
            "cannot resolve host name `nonexistent.invalid`",
            &format!("; http://127.0.0.1:{amqp}/ is RabbitMQ's AMQP port"),
        ],
    );
    assert_eq!(
        run.stderr
            .matches("http://nonexistent.invalid:15672/")
            .count(),
        2,
        "the list of URLs, then the reason: {}",
        run.stderr
    );
}
