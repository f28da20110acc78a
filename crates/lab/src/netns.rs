//! The emulated network: one network namespace per node, `cosched-<run id>-n<i>`, joined point-to-point by a
//! veth pair (2 nodes) or through a bridge in a lab namespace `cosched-<run id>-lan` (more nodes). Addresses
//! are `10.213.0.<i+1>/24` and exist only inside these namespaces, so no packet can leave them.
//! Built with Debian's iproute2 (`ip`); every interface is created directly inside its namespace (`ip -n`),
//! so nothing appears in the host's namespace even for a moment. Dropping the guard deletes the namespaces,
//! which destroys their interfaces.

use anyhow::{bail, Context, Result};
use std::net::Ipv4Addr;
use std::process::Command;

/// Run `ip <args>` and fail with its stderr if it fails.
pub fn ip(args: &[&str]) -> Result<()> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .context("running `ip` (iproute2); install it with `apt-get install iproute2`")?;
    if !output.status.success() {
        bail!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
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
            ip(&["netns", "add", &ns])?;
            net.created.push(ns.clone());
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        if nodes == 2 {
            let (a, b) = (net.node_namespace(0), net.node_namespace(1));
            ip(&[
                "-n", &a, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns",
                &b,
            ])?;
        } else if nodes > 2 {
            let lan = net.lan_namespace();
            ip(&["netns", "add", &lan])?;
            net.created.push(lan.clone());
            ip(&["-n", &lan, "link", "add", "br0", "type", "bridge"])?;
            ip(&["-n", &lan, "link", "set", "br0", "up"])?;
            for i in 0..nodes {
                let port = format!("p{i}");
                let ns = net.node_namespace(i);
                ip(&[
                    "-n", &lan, "link", "add", &port, "type", "veth", "peer", "name", "eth0",
                    "netns", &ns,
                ])?;
                ip(&["-n", &lan, "link", "set", &port, "master", "br0", "up"])?;
            }
        }
        if nodes >= 2 {
            for i in 0..nodes {
                let ns = net.node_namespace(i);
                let addr = format!("{}/24", net.node_address(i));
                ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"])?;
                ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
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
