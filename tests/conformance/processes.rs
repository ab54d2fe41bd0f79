//! Programs a check starts for itself beside the harness's control plane: the simulated cell's
//! scheduler, KWOK and Kueue (`sim.rs`), the GitOps controllers and their servers (`gitops.rs`).
//!
//! Consumes: commands to run, the harness's run folder (`logs/`), `curl` and `openssl`.
//! Produces: [`Components`], which runs them, waits for their readiness and stops them;
//! free loopback ports, readiness probes and serving certificates made for one run.
//!
//! Invariants:
//! - Every component writes its output to `<run>/logs/<name>.log`, and a component that exits or
//!   is not ready in time fails the check with the tail of that log.
//! - Every component is stopped when its [`Components`] is dropped, newest first, also when the
//!   check fails.
//! - Everything listens on 127.0.0.1 only, on ports the kernel picked free.

use super::*;

use std::net::TcpListener;
use std::process::Child;
use std::time::Duration;

/// The running components of a check, newest last.
pub(super) struct Components {
    children: Vec<(String, Child)>,
    logs: PathBuf,
}

impl Components {
    /// No components yet; their logs go to the harness's `logs/` folder.
    pub(super) fn new(cluster: &Cluster) -> Components {
        let logs = cluster.run_dir.join("logs");
        std::fs::create_dir_all(&logs).expect("the harness's log folder");
        Components {
            children: Vec::new(),
            logs,
        }
    }

    /// Starts `command` as the component `name`, its output in `logs/<name>.log`.
    pub(super) fn spawn(&mut self, name: &str, mut command: Command) {
        let log = std::fs::File::create(self.log_path(name)).expect("a log file for a component");
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {name}: {error}"));
        self.children.push((name.to_string(), child));
    }

    /// Starts `command` as the component `name`, its standard output in `logs/<name>.out` (for a
    /// check to read, such as a watch's events) and its errors in `logs/<name>.log`.
    pub(super) fn spawn_with_output(&mut self, name: &str, mut command: Command) -> PathBuf {
        let output = self.logs.join(format!("{name}.out"));
        let out = std::fs::File::create(&output).expect("an output file for a component");
        let log = std::fs::File::create(self.log_path(name)).expect("a log file for a component");
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(log)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {name}: {error}"));
        self.children.push((name.to_string(), child));
        output
    }

    /// Stops every component now, newest first.
    pub(super) fn stop(&mut self) {
        while let Some((_, mut child)) = self.children.pop() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Polls `ready` every 200 ms until it holds; panics with the newest component's log tail when
    /// it exited or `timeout` passed.
    pub(super) fn wait_ready(
        &mut self,
        what: &str,
        timeout: Duration,
        mut ready: impl FnMut() -> bool,
    ) {
        let started = Instant::now();
        loop {
            if ready() {
                return;
            }
            let (name, child) = self.children.last_mut().expect("a component");
            let exited = child.try_wait().ok().flatten().is_some();
            if exited || started.elapsed() > timeout {
                let name = name.clone();
                panic!(
                    "{what}: {name} {} :\n{}",
                    if exited { "exited" } else { "is not ready" },
                    self.log_tail(&name, 30)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Whether every component still runs; the name of the first that exited otherwise.
    pub(super) fn exited(&mut self) -> Option<String> {
        self.children.iter_mut().find_map(|(name, child)| {
            child
                .try_wait()
                .ok()
                .flatten()
                .is_some()
                .then(|| name.clone())
        })
    }

    /// The last `lines` lines of a component's log.
    pub(super) fn log_tail(&self, name: &str, lines: usize) -> String {
        let log = std::fs::read_to_string(self.log_path(name)).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(lines).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// Where a component's output goes.
    pub(super) fn log_path(&self, name: &str) -> PathBuf {
        self.logs.join(format!("{name}.log"))
    }
}

impl Drop for Components {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A free TCP port on 127.0.0.1.
pub(super) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port on 127.0.0.1")
}

/// Whether `curl` reaches `url` and gets a 2xx answer (`--cacert` when `ca` is given, else
/// `--insecure`).
pub(super) fn http_ok(url: &str, ca: Option<&Path>) -> bool {
    let mut command = Command::new("curl");
    command.args(["-sf", "-o", "/dev/null", "--max-time", "2"]);
    match ca {
        Some(ca) => {
            command.arg("--cacert").arg(ca);
        }
        None => {
            command.arg("-k");
        }
    }
    command
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether a TLS handshake with `url` succeeds against `ca` (any HTTP answer will do).
pub(super) fn tls_ok(url: &str, ca: &Path) -> bool {
    Command::new("curl")
        .args(["-s", "-o", "/dev/null", "--max-time", "2", "--cacert"])
        .arg(ca)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A CA and a serving certificate in `dir` (`ca.crt`, `tls.crt`, `tls.key`) for the subject
/// alternative names `names` (`IP:127.0.0.1,DNS:localhost`), made for one run.
pub(super) fn make_serving_certificate(dir: &Path, common_name: &str, names: &str) {
    let run = |args: &[&str]| {
        let status = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(status.success(), "openssl {args:?} failed");
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=tenantc-conformance-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        &format!("/CN={common_name}"),
        "-keyout",
        "tls.key",
        "-out",
        "tls.csr",
    ]);
    std::fs::write(
        dir.join("tls.ext"),
        format!("subjectAltName={names}\nextendedKeyUsage=serverAuth\n"),
    )
    .expect("the certificate extensions");
    run(&[
        "x509",
        "-req",
        "-in",
        "tls.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "tls.ext",
        "-out",
        "tls.crt",
    ]);
}
