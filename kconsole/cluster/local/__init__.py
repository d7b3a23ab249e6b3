"""The local cluster in ZooKeeper mode: its spec, state dir, processes and probes."""
