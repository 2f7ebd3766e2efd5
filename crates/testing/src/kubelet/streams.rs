//! The kubelet stand-in's streaming endpoints: exec and attach (the v4 remote-command
//! protocol over SPDY/3.1, as the kubelet's `remotecommand` server) and port-forward
//! (`portforward.k8s.io`), both on `kapi_proxy::spdy`.
//!
//! Commands `exec` knows: `echo ARGS`, `cat` (stdin to stdout), `ls`, `hostname`, `true`,
//! `false`, `tty`, and `sh -c 'echo X; echo Y >&2; exit N'`; anything else fails as a
//! missing executable does (an internal error, not an exit code). `attach` greets and then
//! echoes stdin to stdout.

use super::{query, text, Body};
use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use kapi_proxy::spdy::{self, Role, Session, Stream, StreamWriter};
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

const EXEC_PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];
const PORT_FORWARD_PROTOCOLS: [&str; 1] = ["portforward.k8s.io"];

/// The kubelet's `httpstream.Handshake`: the first protocol the client offers that the server
/// speaks, and the `101` (or the refusal).
#[allow(clippy::result_large_err)]
fn handshake(
    req: &Request<Incoming>,
    server: &[&str],
) -> Result<(String, Response<Body>), Response<Body>> {
    let upgrade = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case(spdy::UPGRADE));
    if !upgrade {
        return Err(text(StatusCode::BAD_REQUEST, "Upgrade request required\n"));
    }
    let client: Vec<String> = req
        .headers()
        .get_all(spdy::PROTOCOL_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    if client.is_empty() {
        return Err(text(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: X-Stream-Protocol-Version is required\n",
        ));
    }
    let Some(chosen) = client.iter().find(|c| server.contains(&c.as_str())) else {
        return Err(text(
            StatusCode::FORBIDDEN,
            format!(
                "unable to upgrade: unable to negotiate protocol: client supports {client:?}, server supports {server:?}\n"
            ),
        ));
    };
    let mut resp = Response::new(super::full(""));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static(spdy::UPGRADE));
    if let Ok(v) = HeaderValue::from_str(chosen) {
        h.insert(spdy::PROTOCOL_HEADER, v);
    }
    Ok((chosen.clone(), resp))
}

#[derive(Clone, Copy, Default)]
struct Options {
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
}

/// `/exec` and `/attach`.
pub fn remote_command(
    req: Request<Incoming>,
    pod: String,
    container: String,
    exec: bool,
) -> Response<Body> {
    let (_, answer) = match handshake(&req, &EXEC_PROTOCOLS) {
        Ok(a) => a,
        Err(refusal) => return refusal,
    };
    let q = query(&req);
    let on = |k: &str| q.get(k).and_then(|v| v.first()).is_some_and(|v| v == "1");
    let options = Options {
        stdin: on("input"),
        stdout: on("output"),
        stderr: on("error"),
        tty: on("tty"),
    };
    let command = q.get("command").cloned().unwrap_or_default();
    tokio::spawn(async move {
        let Ok(io) = hyper::upgrade::on(req).await else {
            return;
        };
        let (session, incoming) = Session::new(TokioIo::new(io), Role::Server);
        serve_command(session, incoming, options, command, pod, container, exec).await;
    });
    answer
}

/// Waits for the streams the options ask for (error first, as clients open them).
async fn expect_streams(
    incoming: &mut tokio::sync::mpsc::Receiver<Stream>,
    options: Options,
) -> HashMap<String, Stream> {
    let mut want = 1;
    for on in [
        options.stdin,
        options.stdout,
        options.stderr && !options.tty,
        options.tty,
    ] {
        if on {
            want += 1;
        }
    }
    let mut got = HashMap::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while got.len() < want {
            let Some(s) = incoming.recv().await else {
                break;
            };
            let kind = s.header("streamtype").unwrap_or_default().to_string();
            got.insert(kind, s);
        }
    })
    .await;
    got
}

/// What a command ended with.
enum Outcome {
    Exit(u8),
    Failed(String),
}

/// A command's output: (1 stdout or 2 stderr, bytes).
type Out = mpsc::Sender<(u8, Bytes)>;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;

async fn write(out: &Out, channel: u8, s: &str) {
    let _ = out.send((channel, Bytes::from(s.to_string()))).await;
}

async fn copy_stdin(stdin: Option<mpsc::Receiver<Bytes>>, out: &Out) {
    if let Some(mut stdin) = stdin {
        while let Some(data) = stdin.recv().await {
            let _ = out.send((STDOUT, data)).await;
        }
    }
}

/// `sh -c` scripts: `echo X`, `echo X >&2`, `exit N`, separated by `;`.
async fn script(s: &str, out: &Out) -> Outcome {
    for part in s.split(';').map(str::trim) {
        if let Some(rest) = part.strip_prefix("exit") {
            return Outcome::Exit(rest.trim().parse().unwrap_or(1));
        }
        if let Some(rest) = part.strip_prefix("echo ") {
            match rest.strip_suffix(">&2") {
                Some(e) => write(out, STDERR, &format!("{}\n", e.trim())).await,
                None => write(out, STDOUT, &format!("{rest}\n")).await,
            }
        }
    }
    Outcome::Exit(0)
}

/// Runs a command (or, for attach, the container's "main process").
async fn run(
    exec: bool,
    command: &[String],
    tty: bool,
    target: (&str, &str),
    stdin: Option<mpsc::Receiver<Bytes>>,
    out: &Out,
) -> Outcome {
    let (pod, container) = target;
    if !exec {
        write(out, STDOUT, &format!("attached to {pod}/{container}\n")).await;
        copy_stdin(stdin, out).await;
        return Outcome::Exit(0);
    }
    let args: Vec<&str> = command.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["echo", rest @ ..] => {
            write(out, STDOUT, &format!("{}\n", rest.join(" "))).await;
            Outcome::Exit(0)
        }
        ["cat"] => {
            copy_stdin(stdin, out).await;
            Outcome::Exit(0)
        }
        ["ls", ..] => {
            write(out, STDOUT, "bin\netc\nproc\n").await;
            Outcome::Exit(0)
        }
        ["hostname"] => {
            write(out, STDOUT, &format!("{pod}\n")).await;
            Outcome::Exit(0)
        }
        ["true"] => Outcome::Exit(0),
        ["false"] => Outcome::Exit(1),
        ["tty"] if tty => {
            write(out, STDOUT, "/dev/pts/0\n").await;
            Outcome::Exit(0)
        }
        ["tty"] => {
            write(out, STDOUT, "not a tty\n").await;
            Outcome::Exit(1)
        }
        ["sh", "-c", s] => script(s, out).await,
        [first, ..] => Outcome::Failed(format!(
            "failed to exec in container: OCI runtime exec failed: exec failed: unable to start container process: exec: {first:?}: executable file not found in $PATH: unknown"
        )),
        [] => Outcome::Failed("you must specify at least 1 command".into()),
    }
}

/// The Status the kubelet writes on the error stream (v4).
fn status(outcome: Outcome, command: &[String]) -> serde_json::Value {
    match outcome {
        Outcome::Exit(0) => json!({"metadata": {}, "status": "Success"}),
        Outcome::Exit(rc) => json!({
            "metadata": {}, "status": "Failure",
            "message": format!("command terminated with non-zero exit code: error executing command {command:?}, exit code {rc}"),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": rc.to_string()}]},
        }),
        Outcome::Failed(why) => {
            let why = format!("error executing command in container: {why}");
            json!({
                "metadata": {}, "status": "Failure",
                "message": format!("Internal error occurred: {why}"),
                "reason": "InternalError",
                "details": {"causes": [{"message": why}]},
                "code": 500,
            })
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn serve_command(
    session: Session,
    mut incoming: tokio::sync::mpsc::Receiver<Stream>,
    options: Options,
    command: Vec<String>,
    pod: String,
    container: String,
    exec: bool,
) {
    let mut streams = expect_streams(&mut incoming, options).await;
    let error = streams.remove("error").map(|s| s.writer());
    let stdout = streams.remove("stdout").map(|s| s.writer());
    let stderr = streams.remove("stderr").map(|s| s.writer());
    let stdin = streams.remove("stdin").map(|s| s.split().0);
    let (out, mut outputs) = mpsc::channel::<(u8, Bytes)>(16);
    let (o, e) = (stdout.clone(), stderr.clone());
    let writer = tokio::spawn(async move {
        while let Some((channel, data)) = outputs.recv().await {
            let w = if channel == STDOUT { &o } else { &e };
            if let Some(w) = w {
                let _ = w.write(data).await;
            }
        }
    });
    let outcome = run(exec, &command, options.tty, (&pod, &container), stdin, &out).await;
    drop(out);
    let _ = writer.await;
    for w in [&stdout, &stderr].into_iter().flatten() {
        let _ = w.close().await;
    }
    let status = status(outcome, &command);
    if let Some(e) = &error {
        let _ = e.write(Bytes::from(status.to_string())).await;
        let _ = e.close().await;
    }
    // Let the client read the end before the connection goes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    session.shutdown().await;
}

/// `/portForward`.
pub fn port_forward(req: Request<Incoming>, pod: String) -> Response<Body> {
    let (_, answer) = match handshake(&req, &PORT_FORWARD_PROTOCOLS) {
        Ok(a) => a,
        Err(refusal) => return refusal,
    };
    tokio::spawn(async move {
        let Ok(io) = hyper::upgrade::on(req).await else {
            return;
        };
        let (_session, mut incoming) = Session::new(TokioIo::new(io), Role::Server);
        let mut errors: HashMap<String, StreamWriter> = HashMap::new();
        // Error streams are kept open (the client reads them) until the connection ends.
        let mut keep = Vec::new();
        while let Some(stream) = incoming.recv().await {
            let id = stream.header("requestid").unwrap_or_default().to_string();
            match stream.header("streamtype") {
                Some("error") => {
                    errors.insert(id, stream.writer());
                    keep.push(stream);
                }
                Some("data") => {
                    let port = stream.header("port").and_then(|p| p.parse::<u16>().ok());
                    let error = errors.remove(&id);
                    tokio::spawn(forward(stream, port, error, pod.clone()));
                }
                _ => stream.writer().reset().await,
            }
        }
    });
    answer
}

/// One forwarded connection: the data stream spliced with `127.0.0.1:<port>`.
async fn forward(stream: Stream, port: Option<u16>, error: Option<StreamWriter>, pod: String) {
    let port = port.unwrap_or_default();
    let tcp = match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
        Ok(t) => t,
        Err(e) => {
            if let Some(err) = &error {
                let message = format!("error forwarding port {port} to pod {pod}: {e}");
                let _ = err.write(Bytes::from(message)).await;
                let _ = err.close().await;
            }
            stream.writer().close().await.ok();
            return;
        }
    };
    let (mut data, writer) = stream.split();
    let (mut read, mut write) = tcp.into_split();
    let up = async move {
        while let Some(chunk) = data.recv().await {
            if write.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = write.shutdown().await;
    };
    let down = async move {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let chunk = Bytes::copy_from_slice(buf.get(..n).unwrap_or_default());
                    if writer.write(chunk).await.is_err() {
                        return;
                    }
                }
            }
        }
        let _ = writer.close().await;
    };
    tokio::join!(up, down);
    if let Some(err) = error {
        let _ = err.close().await;
    }
}

/// The WebSocket protocols the kubelet's exec and attach speak (not v5: kube-apiserver
/// translates that one to SPDY).
const WEBSOCKET_PROTOCOLS: [&str; 2] = ["v4.channel.k8s.io", "channel.k8s.io"];

/// `/exec` and `/attach` over WebSocket (the Python client's `v4.channel.k8s.io`), as the
/// kubelet's `wsstream` server: channel 0 stdin, 1 stdout, 2 stderr, 3 the final Status.
pub fn websocket_command(
    req: Request<Incoming>,
    pod: String,
    container: String,
    exec: bool,
) -> Response<Body> {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let offered = kapi_proxy::websocket::protocols(req.headers());
    let Some(chosen) = offered
        .iter()
        .find(|p| WEBSOCKET_PROTOCOLS.contains(&p.as_str()))
        .cloned()
    else {
        return text(
            StatusCode::BAD_REQUEST,
            format!("requested protocol(s) are not supported: {offered:?}; supports {WEBSOCKET_PROTOCOLS:?}\n"),
        );
    };
    let answer = match kapi_proxy::websocket::accept(req.headers(), Some(&chosen)) {
        Ok(a) => a.map(|_| super::full("")),
        Err(refusal) => return refusal.map(|_| super::full("not a websocket handshake\n")),
    };
    let q = query(&req);
    let on = |k: &str| {
        q.get(k)
            .and_then(|v| v.first())
            .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
    };
    let (stdin_on, stdout_on, stderr_on, tty) = (on("input"), on("output"), on("error"), on("tty"));
    let command = q.get("command").cloned().unwrap_or_default();
    let command_copy = command.clone();
    let upgrade = hyper::upgrade::on(req);
    tokio::spawn(async move {
        let Ok(ws) = kapi_proxy::websocket::upgraded(upgrade).await else {
            return;
        };
        let (mut sink, mut inbound) = ws.split();
        let first = if stdout_on {
            1
        } else if stderr_on {
            2
        } else {
            3
        };
        let _ = sink.send(Message::Binary(vec![first].into())).await;
        let (stdin_tx, stdin_rx) = mpsc::channel::<Bytes>(16);
        let reader = tokio::spawn(async move {
            let mut stdin_tx = Some(stdin_tx);
            while let Some(Ok(msg)) = inbound.next().await {
                // Text frames carry channel data too (the Python client writes str as text).
                let d = match msg {
                    Message::Binary(d) => d,
                    Message::Text(t) => Bytes::copy_from_slice(t.as_bytes()),
                    _ => continue,
                };
                match d.first() {
                    Some(0) => {
                        if let Some(tx) = &stdin_tx {
                            let _ = tx.send(d.slice(1..)).await;
                        }
                    }
                    Some(255) => stdin_tx = None,
                    _ => {}
                }
            }
        });
        let (out, mut outputs) = mpsc::channel::<(u8, Bytes)>(16);
        let forward = async {
            while let Some((channel, data)) = outputs.recv().await {
                let wanted = (channel == STDOUT && stdout_on) || (channel == STDERR && stderr_on);
                if wanted {
                    let mut frame = vec![channel];
                    frame.extend_from_slice(&data);
                    if sink.send(Message::Binary(frame.into())).await.is_err() {
                        break;
                    }
                }
            }
            sink
        };
        let stdin = stdin_on.then_some(stdin_rx);
        let runner = async move {
            let o = run(exec, &command_copy, tty, (&pod, &container), stdin, &out).await;
            drop(out);
            o
        };
        let (outcome, mut sink) = tokio::join!(runner, forward);
        let mut frame = vec![3u8];
        frame.extend_from_slice(status(outcome, &command).to_string().as_bytes());
        let _ = sink.send(Message::Binary(frame.into())).await;
        let _ = sink.send(kapi_proxy::websocket::normal_close()).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
    });
    answer
}
