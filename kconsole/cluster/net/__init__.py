"""Network faults on the local cluster: a node's JVM in a cgroup v2 directory of its own, and
iptables rules in a chain of kconsole's own that drop what it sends and what is sent to its
ports (see docs/network-faults.md). rules builds the rules as data, host runs iptables and
moves processes between cgroups, record keeps what is in force in the cluster's state dir,
faults applies, verifies and heals them."""
