//! exec and attach over WebSocket, as upstream's `StreamTranslatorHandler` (k8s.io/apiserver
//! `pkg/util/proxy/streamtranslator.go`, `websocket.go`): kapi answers the client's
//! `v5.channel.k8s.io` WebSocket itself and runs the session with the kubelet over SPDY
//! (the v4 remote-command protocol, which kubelets speak), translating both ways:
//!
//! | WebSocket (client) | SPDY (kubelet) |
//! |---|---|
//! | channel 0 | `stdin` stream |
//! | channel 1, 2 | `stdout`, `stderr` streams |
//! | channel 3 (kapi writes the final Status) | `error` stream (read whole, decoded) |
//! | channel 4 | `resize` stream |
//! | `[255, 0]` (v5 close) | `FIN` on `stdin` |
//!
//! The final Status is upstream's: `Success`, `NonZeroExitCode` with the `ExitCode` cause, or
//! an internal error carrying the kubelet's message.

use crate::dial;
use crate::spdy::{self, Role, Session, StreamWriter};
use crate::websocket::{self, PROTOCOL_V5};
use crate::{Body, ProxyConfig, StreamOptions, Target};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use kapi_machinery::ApiError;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// How long kapi waits for the client to close after the final Status (upstream's
/// `finishTimeout`).
const FINISH_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// The SPDY protocols offered to the kubelet (both are the v4 protocol over SPDY).
const SPDY_PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const RESIZE: u8 = 4;
const CLOSE: u8 = 255;

/// Answers the WebSocket handshake and runs the session in the background.
pub fn serve(
    mut req: Request<Body>,
    target: Target,
    options: StreamOptions,
    config: ProxyConfig,
) -> Response<Body> {
    let Some(on) = req.extensions_mut().remove::<OnUpgrade>() else {
        return websocket::text_response(StatusCode::BAD_REQUEST, "Upgrade request required");
    };
    let answer = match websocket::accept(req.headers(), Some(PROTOCOL_V5)) {
        Ok(a) => a,
        Err(refusal) => return refusal,
    };
    tokio::spawn(async move {
        match websocket::upgraded(on).await {
            Ok(ws) => run(ws, target, options, config).await,
            Err(e) => tracing::debug!(error = %e, "websocket upgrade did not complete"),
        }
    });
    answer
}

/// A Status as `json.Marshal(status.Status())` writes a Go `StatusError`: no type meta.
fn status_json(mut status: Value) -> Vec<u8> {
    if let Some(m) = status.as_object_mut() {
        m.remove("kind");
        m.remove("apiVersion");
    }
    serde_json::to_vec(&status).unwrap_or_default()
}

fn internal(message: impl Into<String>) -> Value {
    ApiError::internal(message.into()).to_status()
}

/// client-go's `errorDecoderV4` of the kubelet's error stream, then the translator's Status.
fn final_status(message: &[u8]) -> Value {
    if message.is_empty() {
        return json!({"metadata": {}, "status": "Success"});
    }
    let status: Value = match serde_json::from_slice(message) {
        Ok(v) => v,
        Err(e) => {
            return internal(format!(
                "error stream protocol error: {e} in {}",
                crate::errors::go_quote(&String::from_utf8_lossy(message))
            ))
        }
    };
    let text = |k: &str| status.get(k).and_then(Value::as_str).unwrap_or_default();
    match text("status") {
        "Success" => json!({"metadata": {}, "status": "Success"}),
        "Failure" if text("reason") == "NonZeroExitCode" => {
            let Some(causes) = status.pointer("/details/causes").and_then(Value::as_array) else {
                return internal("error stream protocol error: details must be set");
            };
            let code = causes
                .iter()
                .find(|c| c.get("reason").and_then(Value::as_str) == Some("ExitCode"))
                .and_then(|c| c.get("message").and_then(Value::as_str));
            match code.map(|c| (c, c.parse::<u8>())) {
                Some((_, Ok(rc))) => json!({
                    "metadata": {},
                    "status": "Failure",
                    "message": format!("command terminated with non-zero exit code: command terminated with exit code {rc}"),
                    "reason": "NonZeroExitCode",
                    "details": {"causes": [{"reason": "ExitCode", "message": rc.to_string()}]},
                }),
                Some((c, Err(_))) => internal(format!(
                    "error stream protocol error: invalid exit code value {}",
                    crate::errors::go_quote(c)
                )),
                None => internal("error stream protocol error: no ExitCode cause given"),
            }
        }
        "Failure" => internal(text("message")),
        _ => internal("error stream protocol error: unknown error"),
    }
}

/// The kubelet's refusal of the upgrade (client-go's `NewConnection`): its Status if the body
/// is one, else `unable to upgrade connection: <body>`.
async fn refusal(resp: Response<hyper::body::Incoming>) -> Value {
    let body = resp
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    match serde_json::from_slice::<Value>(&body) {
        Ok(v) if v.get("kind").and_then(Value::as_str) == Some("Status") => v,
        _ => internal(format!(
            "unable to upgrade connection: {}",
            String::from_utf8_lossy(&body).trim()
        )),
    }
}

/// The SPDY session with the kubelet; `Err` is the Status to report.
async fn connect(target: &Target, config: &ProxyConfig) -> Result<Session, Value> {
    let location = &target.location;
    let sending = |e: String| {
        internal(format!(
            "error sending request: Post {}: {e}",
            crate::errors::go_quote(&location.url())
        ))
    };
    let mut sender = dial::connect(location, target.transport, config)
        .await
        .map_err(sending)?;
    let mut req = Request::new(crate::empty_body());
    *req.method_mut() = http::Method::POST;
    *req.uri_mut() = location
        .path_and_query()
        .parse()
        .map_err(|e: http::uri::InvalidUri| internal(e.to_string()))?;
    let h = req.headers_mut();
    if let Ok(host) = HeaderValue::from_str(&location.authority()) {
        h.insert(header::HOST, host);
    }
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static(spdy::UPGRADE));
    for p in SPDY_PROTOCOLS {
        h.append(spdy::PROTOCOL_HEADER, HeaderValue::from_static(p));
    }
    let mut resp = sender
        .send_request(req)
        .await
        .map_err(|e| sending(e.to_string()))?;
    if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
        return Err(refusal(resp).await);
    }
    let io = hyper::upgrade::on(&mut resp)
        .await
        .map_err(|e| internal(e.to_string()))?;
    Ok(Session::new(TokioIo::new(io), Role::Client).0)
}

async fn open(session: &Session, kind: &str) -> Result<spdy::Stream, Value> {
    session
        .open(vec![("streamtype".into(), kind.into())])
        .await
        .map_err(|e| internal(e.to_string()))
}

/// Copies a SPDY stream to a WebSocket channel until the kubelet closes it.
async fn pump(mut stream: spdy::Stream, channel: u8, out: mpsc::Sender<Message>) {
    while let Some(data) = stream.read().await {
        let mut frame = Vec::with_capacity(data.len().saturating_add(1));
        frame.push(channel);
        frame.extend_from_slice(&data);
        if out.send(Message::Binary(frame.into())).await.is_err() {
            break;
        }
    }
}

/// Runs the translated session; returns the final Status.
async fn exec(
    target: &Target,
    options: StreamOptions,
    config: &ProxyConfig,
    out: mpsc::Sender<Message>,
    inbound: &mut futures::stream::SplitStream<websocket::WebSocket>,
) -> Value {
    let session = match connect(target, config).await {
        Ok(s) => s,
        Err(status) => return status,
    };
    let streams = async {
        let error = open(&session, "error").await?;
        let stdin = match options.stdin {
            true => Some(open(&session, "stdin").await?.writer()),
            false => None,
        };
        let stdout = match options.stdout {
            true => Some(open(&session, "stdout").await?),
            false => None,
        };
        let stderr = match options.stderr && !options.tty {
            true => Some(open(&session, "stderr").await?),
            false => None,
        };
        let resize = match options.tty {
            true => Some(open(&session, "resize").await?.writer()),
            false => None,
        };
        Ok::<_, Value>((error, stdin, stdout, stderr, resize))
    };
    let (mut error, stdin, stdout, stderr, resize) = match streams.await {
        Ok(s) => s,
        Err(status) => {
            session.shutdown().await;
            return status;
        }
    };
    let outputs = async {
        let a = stdout.map(|s| pump(s, STDOUT, out.clone()));
        let b = stderr.map(|s| pump(s, STDERR, out.clone()));
        match (a, b) {
            (Some(a), Some(b)) => {
                tokio::join!(a, b);
            }
            (Some(a), None) => a.await,
            (None, Some(b)) => b.await,
            (None, None) => {}
        }
        let mut message = Vec::new();
        while let Some(chunk) = error.read().await {
            message.extend_from_slice(&chunk);
        }
        final_status(&message)
    };
    let inputs = forward_input(inbound, stdin, resize);
    let status = tokio::select! {
        status = outputs => status,
        () = inputs => {
            // The client went away: nothing more to report to it.
            json!({"metadata": {}, "status": "Success"})
        }
    };
    session.shutdown().await;
    status
}

/// Client messages to the kubelet's streams, until the client closes.
async fn forward_input(
    inbound: &mut futures::stream::SplitStream<websocket::WebSocket>,
    stdin: Option<StreamWriter>,
    resize: Option<StreamWriter>,
) {
    let mut stdin = stdin;
    while let Some(msg) = inbound.next().await {
        let data: Bytes = match msg {
            Ok(Message::Binary(d)) => d,
            // wsstream reads text frames as data too.
            Ok(Message::Text(t)) => Bytes::copy_from_slice(t.as_bytes()),
            Ok(Message::Close(_)) | Err(_) => break,
            Ok(_) => continue,
        };
        let Some((&channel, payload)) = data.split_first() else {
            continue;
        };
        let payload = data.slice(data.len().saturating_sub(payload.len())..);
        match channel {
            STDIN => {
                if let Some(w) = &stdin {
                    if w.write(payload).await.is_err() {
                        stdin = None;
                    }
                }
            }
            RESIZE => {
                if let Some(w) = &resize {
                    let _ = w.write(payload).await;
                }
            }
            CLOSE if payload.first() == Some(&STDIN) => {
                if let Some(w) = stdin.take() {
                    let _ = w.close().await;
                }
            }
            _ => {}
        }
    }
    // The client is gone: let the command see the end of its input.
    if let Some(w) = stdin {
        let _ = w.close().await;
    }
    // Keep the session until the outputs end.
    std::future::pending::<()>().await;
}

async fn run(
    ws: websocket::WebSocket,
    target: Target,
    options: StreamOptions,
    config: ProxyConfig,
) {
    let (mut sink, mut inbound) = ws.split();
    let (out, mut out_rx) = mpsc::channel::<Message>(64);
    let writer = tokio::spawn(async move {
        while let Some(m) = out_rx.recv().await {
            let close = matches!(m, Message::Close(_));
            if sink.send(m).await.is_err() || close {
                break;
            }
        }
        let _ = sink.close().await;
    });
    // An empty message on the lowest writable channel tells the client the session is up.
    let first = if options.stdout {
        STDOUT
    } else if options.stderr {
        STDERR
    } else {
        ERROR
    };
    let _ = out.send(Message::Binary(vec![first].into())).await;
    let status = exec(&target, options, &config, out.clone(), &mut inbound).await;
    let mut frame = vec![ERROR];
    frame.extend_from_slice(&status_json(status));
    let _ = out.send(Message::Binary(frame.into())).await;
    let _ = out.send(crate::websocket::normal_close()).await;
    drop(out);
    let _ = writer.await;
    // Wait for the client to close (it does once it has read everything).
    let _ = tokio::time::timeout(FINISH_TIMEOUT, async {
        while let Some(Ok(m)) = inbound.next().await {
            if matches!(m, Message::Close(_)) {
                break;
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_statuses_become_upstreams() {
        assert_eq!(
            final_status(b""),
            json!({"metadata": {}, "status": "Success"})
        );
        let exit = br#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#;
        let s = final_status(exit);
        assert_eq!(
            s["message"],
            "command terminated with non-zero exit code: command terminated with exit code 3"
        );
        assert_eq!(s["details"]["causes"][0]["message"], "3");
        let s = final_status(br#"{"status":"Failure","message":"boom"}"#);
        assert_eq!(s["message"], "Internal error occurred: boom");
        assert_eq!(s["code"], 500);
        let s = final_status(b"x");
        assert!(s["message"]
            .as_str()
            .unwrap()
            .starts_with("Internal error occurred: error stream protocol error:"));
    }
}
