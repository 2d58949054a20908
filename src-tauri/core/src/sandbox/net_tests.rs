//! What a command without network can still reach, at each level of confinement on this
//! machine: with bubblewrap and Landlock ABI ≥ 6 no network namespace is made, so Landlock and
//! the system-call filter must keep it off as an empty namespace would.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};

use super::tests::{levels, run, sandbox, scratch};

#[test]
fn without_network_only_tcp_streams_and_local_sockets_can_be_made() {
    let s = scratch();
    // Each attempt prints the error number it got (0: the socket was made). SCTP as a stream
    // passed the filter before (Landlock's TCP rules do not cover it), and so did families
    // that carry traffic to other machines or to the host of a virtual machine.
    let script = r#"import socket
def t(name, *a):
    try:
        socket.socket(*a).close(); print(name, 0)
    except OSError as e:
        print(name, e.errno)
t('tcp', 2, 1, 0); t('tcp6', 10, 1, 6); t('netlink', 16, 3, 0)
t('sctp', 2, 1, 132); t('mptcp', 2, 1, 262); t('udp', 2, 2, 0); t('raw', 2, 3, 1)
t('tipc', 30, 5, 0); t('rds', 21, 5, 0); t('vsock', 40, 1, 0); t('packet', 17, 3, 0)
"#;
    std::fs::write(s.root.join("docs/sockets.py"), script).expect("script");
    let mut checked = 0;
    for level in levels().into_iter().filter(|l| !l.net_namespace()) {
        let (code, out) = run(&sandbox(&s, &[], false), &level, "python3 docs/sockets.py");
        let at = level.summary();
        assert_eq!(code, Some(0), "{at}: {out}");
        let got: std::collections::HashMap<&str, &str> =
            out.lines().filter_map(|l| l.split_once(' ')).collect();
        for allowed in ["tcp", "tcp6", "netlink"] {
            assert_eq!(got.get(allowed), Some(&"0"), "{at}: {allowed}: {out}");
        }
        for refused in [
            "sctp", "mptcp", "udp", "raw", "tipc", "rds", "vsock", "packet",
        ] {
            assert_eq!(
                got.get(refused),
                Some(&"13"),
                "{at}: {refused} must be refused by the filter (EACCES): {out}"
            );
        }
        checked += 1;
    }
    eprintln!("{checked} levels without a network namespace checked");
}

/// The session bus and X11 listen on abstract Unix sockets, and through them a command could
/// start programs outside its confinement. Without a network namespace only Landlock's scope
/// keeps a command from them: a listener of Mandate's own (as the bus would be) is never
/// reached, with or without the network granted.
#[test]
fn an_abstract_socket_outside_the_command_is_never_reached() {
    let s = scratch();
    let name = format!("mandate-test-{}-{}", std::process::id(), line!());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).expect("address");
    let listener = UnixListener::bind_addr(&addr).expect("listen");
    listener.set_nonblocking(true).expect("nonblocking");
    let script = format!(
        "import socket\ntry:\n    socket.socket(socket.AF_UNIX).connect('\\0{name}'); print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\n"
    );
    std::fs::write(s.root.join("docs/abstract.py"), script).expect("script");
    for level in levels() {
        if level.landlock_abi.unwrap_or(0) < 6 && !level.net_namespace() {
            continue; // a gap this level states (Confinement::gaps)
        }
        for network in [false, true] {
            if network && level.landlock_abi.unwrap_or(0) < 6 {
                continue;
            }
            let (_, out) = run(
                &sandbox(&s, &[], network),
                &level,
                "python3 docs/abstract.py",
            );
            let at = format!("{} (network {network})", level.summary());
            assert!(out.contains("refused"), "{at}: {out}");
            assert!(
                listener.accept().is_err(),
                "{at}: a connection reached the listener"
            );
        }
    }
    // The same script outside any confinement connects: the test can tell.
    let out = std::process::Command::new("python3")
        .arg(s.root.join("docs/abstract.py"))
        .output()
        .expect("python3");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("connected"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
