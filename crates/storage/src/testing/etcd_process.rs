//! A real `etcd` process for tests and benchmarks: free loopback ports, a data directory the
//! caller owns, SIGKILL on drop. A missing `etcd` binary is a failure that says how to install
//! it, never a silent skip.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running single-member etcd cluster.
pub struct EtcdProcess {
    child: Option<Child>,
    client_port: u16,
    peer_port: u16,
    data_dir: PathBuf,
}

/// A loopback port nothing listens on, for a server about to be started.
///
/// Drawn below the kernel's ephemeral range (as hack/lib/servers.sh does): a port the kernel
/// hands out for port 0 is also what it gives the next outgoing connection as its source port,
/// so a client elsewhere could take it before the server binds it.
pub fn free_port() -> u16 {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(0);
    for _ in 0..200 {
        let port = if ephemeral_low > 11000 {
            rand::random_range(10000..ephemeral_low)
        } else {
            0
        };
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
            return l.local_addr().expect("local address").port();
        }
    }
    panic!("no free loopback port found")
}

impl EtcdProcess {
    /// Starts etcd with its data under `data_dir` and waits until it is healthy.
    ///
    /// A port picked free can be taken by another process before etcd binds it (tests run in
    /// parallel with other suites); etcd then exits with "address already in use", and it is
    /// started again on two new ports.
    pub fn start(data_dir: &Path) -> EtcdProcess {
        let mut p = EtcdProcess {
            child: None,
            client_port: free_port(),
            peer_port: free_port(),
            data_dir: data_dir.to_path_buf(),
        };
        for _ in 0..4 {
            match p.spawn() {
                Ok(()) => return p,
                Err(log) if log.contains("address already in use") => {
                    p.client_port = free_port();
                    p.peer_port = free_port();
                }
                Err(log) => p.fail(&log),
            }
        }
        p.spawn().unwrap_or_else(|log| p.fail(&log));
        p
    }

    fn fail(&self, log: &str) -> ! {
        panic!(
            "etcd exited while starting; its log ({}):\n{log}",
            self.log_path().display()
        )
    }

    fn log_path(&self) -> PathBuf {
        self.data_dir.with_extension("log")
    }

    /// `http://127.0.0.1:<port>`.
    pub fn client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The etcd process's id while it runs (benchmarks read its CPU time from `/proc`).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Starts etcd and waits until it is healthy; `Err` holds what it logged if it exited.
    fn spawn(&mut self) -> Result<(), String> {
        std::fs::create_dir_all(&self.data_dir).expect("creating the etcd data dir");
        let log_path = self.log_path();
        // The log is appended to across restarts; only this start's lines explain its exit.
        let log_start = std::fs::metadata(&log_path).map_or(0, |m| m.len());
        let log = File::options()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("opening the etcd log");
        let err_log = log.try_clone().expect("cloning the etcd log handle");
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let child = Command::new("etcd")
            .args(["--name", "kapi-test", "--data-dir"])
            .arg(&self.data_dir)
            .args([
                "--listen-client-urls",
                &self.client_url(),
                "--advertise-client-urls",
                &self.client_url(),
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--initial-cluster", &format!("kapi-test={peer}")])
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err_log))
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "the `etcd` binary was not found on PATH; install it with hack/install-etcd.sh (Debian's etcd-server) and run the tests again"
            ),
            Err(e) => panic!("starting etcd: {e}"),
        };
        self.child = Some(child);
        self.wait_healthy(&log_path, log_start)
    }

    fn wait_healthy(&mut self, log_path: &Path, log_start: u64) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                self.child = None;
                let log = std::fs::read(log_path).unwrap_or_default();
                let start = usize::try_from(log_start).unwrap_or(0).min(log.len());
                let this_start = String::from_utf8_lossy(log.get(start..).unwrap_or_default());
                return Err(format!("etcd exited with {status}:\n{this_start}"));
            }
            if self.healthy() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "etcd did not become healthy within 30s; see {}",
            log_path.display()
        );
    }

    /// Asks etcd's `/health` endpoint.
    pub fn healthy(&self) -> bool {
        let Ok(mut conn) = TcpStream::connect(("127.0.0.1", self.client_port)) else {
            return false;
        };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        if conn
            .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .is_err()
        {
            return false;
        }
        let mut body = String::new();
        let _ = conn.read_to_string(&mut body);
        body.contains("\"health\":\"true\"")
    }

    /// A counter or gauge of etcd's own `/metrics` (e.g. `etcd_mvcc_range_total`, the ranges
    /// it served); panics if etcd does not export it.
    pub fn metric(&self, name: &str) -> f64 {
        let mut conn = TcpStream::connect(("127.0.0.1", self.client_port)).expect("etcd");
        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
        conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .expect("etcd /metrics");
        let mut body = String::new();
        let _ = conn.read_to_string(&mut body);
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("etcd exports no {name}"))
    }

    /// SIGKILLs etcd (the data directory stays).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts etcd again on the same ports and data directory.
    pub fn restart(&mut self) {
        self.kill();
        if let Err(log) = self.spawn() {
            self.fail(&log);
        }
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
