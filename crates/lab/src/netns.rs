//! The emulated network: one network namespace per node, `cosched-<run id>-n<i>`, joined point-to-point by a
//! veth pair (2 nodes) or through a bridge in a lab namespace `cosched-<run id>-lan` (more nodes). Addresses
//! are `10.213.0.<i+1>/24` and exist only inside these namespaces, so no packet can leave them.
//! Built with Debian's iproute2 (`ip`); every interface is created directly inside its namespace (`ip -n`),
//! so nothing appears in the host's namespace even for a moment. Dropping the guard deletes the namespaces,
//! which destroys their interfaces.

use anyhow::{bail, Context, Result};
use std::io::Read;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Run `ip <args>` to its end and fail with its stderr if it fails (teardown: runs even after a signal).
pub fn ip(args: &[&str]) -> Result<()> {
    run_ip(args, false)
}

/// Run `ip <args>` as a setup step: like [`ip`], but a SIGINT/SIGTERM to the lab ends the wait at once
/// ([`crate::signals::Interrupted`]). Creating a namespace or an interface can wait in the kernel for the
/// teardown of earlier namespaces (`rtnl_lock`), and a CI run's Ctrl-C must not wait for it too.
fn ip_setup(args: &[&str]) -> Result<()> {
    crate::signals::check()?;
    run_ip(args, true)
}

fn run_ip(args: &[&str], stop_on_signal: bool) -> Result<()> {
    let mut child = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("running `ip` (iproute2); install it with `apt-get install iproute2`")?;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if stop_on_signal && crate::signals::interrupted() {
            // Not waited for: a command blocked in the kernel dies only when the kernel lets it, and the lab's
            // cleanup must not wait for that (the orphan is reaped by init).
            let _ = child.kill();
            return Err(crate::signals::Interrupted.into());
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    if !status.success() {
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        bail!("`ip {}` failed: {}", args.join(" "), stderr.trim());
    }
    Ok(())
}

/// The names of all network namespaces (`ip netns list`).
pub fn list_namespaces() -> Result<Vec<String>> {
    let output = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .context("running `ip netns list`")?;
    if !output.status.success() {
        bail!(
            "`ip netns list` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect())
}

/// The emulated cluster network; deleted when dropped.
#[derive(Debug)]
pub struct Network {
    run_id: String,
    nodes: u32,
    /// Every namespace made so far (nodes, then the LAN), deleted in reverse on drop.
    created: Vec<String>,
}

impl Network {
    /// The private /24 the nodes live in.
    pub const SUBNET: [u8; 3] = [10, 213, 0];

    /// Build `nodes` namespaces and connect them. On failure everything made so far is removed.
    pub fn create(run_id: &str, nodes: u32) -> Result<Network> {
        if nodes == 0 || nodes > 250 {
            bail!("a lab network needs 1..=250 nodes, got {nodes}");
        }
        let mut net = Network {
            run_id: run_id.to_string(),
            nodes,
            created: Vec::new(),
        };
        for i in 0..nodes {
            let ns = net.node_namespace(i);
            ip_setup(&["netns", "add", &ns])?;
            net.created.push(ns.clone());
            ip_setup(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        if nodes == 2 {
            let (a, b) = (net.node_namespace(0), net.node_namespace(1));
            ip_setup(&[
                "-n", &a, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns",
                &b,
            ])?;
        } else if nodes > 2 {
            let lan = net.lan_namespace();
            ip_setup(&["netns", "add", &lan])?;
            net.created.push(lan.clone());
            ip_setup(&["-n", &lan, "link", "add", "br0", "type", "bridge"])?;
            ip_setup(&["-n", &lan, "link", "set", "br0", "up"])?;
            for i in 0..nodes {
                let port = format!("p{i}");
                let ns = net.node_namespace(i);
                ip_setup(&[
                    "-n", &lan, "link", "add", &port, "type", "veth", "peer", "name", "eth0",
                    "netns", &ns,
                ])?;
                ip_setup(&["-n", &lan, "link", "set", &port, "master", "br0", "up"])?;
            }
        }
        if nodes >= 2 {
            for i in 0..nodes {
                let ns = net.node_namespace(i);
                let addr = format!("{}/24", net.node_address(i));
                ip_setup(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"])?;
                ip_setup(&["-n", &ns, "link", "set", "eth0", "up"])?;
            }
        }
        Ok(net)
    }

    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// `cosched-<run id>-n<i>`.
    pub fn node_namespace(&self, node: u32) -> String {
        format!("cosched-{}-n{node}", self.run_id)
    }

    /// `cosched-<run id>-lan` (only with more than 2 nodes).
    pub fn lan_namespace(&self) -> String {
        format!("cosched-{}-lan", self.run_id)
    }

    /// The node's address, `10.213.0.<node+1>`.
    pub fn node_address(&self, node: u32) -> Ipv4Addr {
        let [a, b, c] = Self::SUBNET;
        Ipv4Addr::new(a, b, c, (node + 1) as u8)
    }

    /// The node that owns `addr`, if any.
    pub fn node_of_address(&self, addr: Ipv4Addr) -> Option<u32> {
        (0..self.nodes).find(|&i| self.node_address(i) == addr)
    }

    /// Delete every namespace, reporting the ones that could not be deleted.
    pub fn remove(&mut self) -> Result<()> {
        let mut failures = Vec::new();
        while let Some(ns) = self.created.pop() {
            if let Err(e) = ip(&["netns", "del", &ns]) {
                failures.push(format!("{e:#}"));
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            bail!(
                "could not delete network namespaces: {}",
                failures.join("; ")
            )
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            eprintln!("cosched lab: cleanup: {e:#}");
        }
    }
}
