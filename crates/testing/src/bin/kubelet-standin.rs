//! The kubelet stand-in as a process, for the e2e suite (`e2e/kubelet-proxy.sh`):
//!
//! ```text
//! kubelet-standin --address 127.0.0.1 --port 0 --dir DIR [--require-client-cert]
//! ```
//!
//! Writes `DIR/ca.crt` (its CA: `--kubelet-certificate-authority`), `DIR/kapi-client.crt` and
//! `DIR/kapi-client.key` (`--kubelet-client-certificate/-key`) and `DIR/port`, prints
//! `listening on ADDR`, and serves until killed.
#![allow(
    clippy::expect_used,
    reason = "a test tool: failing loudly is the point"
)]

use kapi_testing::kubelet::{Config, Kubelet};
use std::path::PathBuf;

#[tokio::main]
async fn main() {
    let mut config = Config::default();
    let mut dir = PathBuf::from(".");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--address" => {
                config.address = args
                    .next()
                    .expect("--address VALUE")
                    .parse()
                    .expect("an IP")
            }
            "--port" => config.port = args.next().expect("--port VALUE").parse().expect("a port"),
            "--dir" => dir = PathBuf::from(args.next().expect("--dir VALUE")),
            "--require-client-cert" => config.require_client_cert = true,
            other => panic!("unknown argument {other}"),
        }
    }
    let kubelet = Kubelet::start(config).await.expect("starting the stand-in");
    std::fs::create_dir_all(&dir).expect("creating --dir");
    std::fs::write(dir.join("ca.crt"), &kubelet.pki.ca_pem).expect("writing ca.crt");
    std::fs::write(dir.join("kapi-client.crt"), &kubelet.pki.client_cert_pem)
        .expect("writing the client cert");
    std::fs::write(dir.join("kapi-client.key"), &kubelet.pki.client_key_pem)
        .expect("writing the client key");
    std::fs::write(dir.join("port"), kubelet.addr.port().to_string()).expect("writing port");
    println!("listening on {}", kubelet.addr);
    let _ = tokio::signal::ctrl_c().await;
}
